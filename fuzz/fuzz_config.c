/* fuzz_config.c — libFuzzer target for whisper_config_load() (a CTranslate2 model's config.json).
 *
 * Invariants: on success every array's count is >= 0 and its pointer non-NULL when the count is
 * positive (each element is read, so a wrong count shows under ASan); on failure the message is
 * one line naming the file; loading twice gives the same arrays.
 * Run: scripts/fuzz.sh config 10 */
#include "formats/whisper_config.h"
#include "fuzz_util.h"

static fuzz_file g_file;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    fuzz_file_init(&g_file, NULL, "config.json");
    return 0;
}

static void check_array(const int *p, int n) {
    if (n < 0 || (n > 0 && !p)) abort();
    volatile int sink = 0;
    for (int i = 0; i < n; i++) sink += p[i];
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_file_write(&g_file, data, size);
    whisper_config a = {0}, b = {0};
    if (whisper_config_load(g_file.path, &a) != STENO_OK) {
        if (strncmp(steno_errmsg(), g_file.path, strlen(g_file.path)) != 0 || strchr(steno_errmsg(), '\n')) abort();
        return 0;
    }
    check_array(a.alignment_heads ? a.alignment_heads[0] : NULL, 2 * a.n_alignment_heads);
    check_array(a.suppress_ids, a.n_suppress_ids);
    check_array(a.suppress_ids_begin, a.n_suppress_ids_begin);
    check_array(a.lang_ids, a.n_lang_ids);
    if (whisper_config_load(g_file.path, &b) != STENO_OK) abort();
    if (a.n_alignment_heads != b.n_alignment_heads || a.n_suppress_ids != b.n_suppress_ids ||
        a.n_lang_ids != b.n_lang_ids || a.n_suppress_ids_begin != b.n_suppress_ids_begin)
        abort();
    if (a.n_suppress_ids && memcmp(a.suppress_ids, b.suppress_ids, sizeof(int) * (size_t)a.n_suppress_ids)) abort();
    whisper_config_free(&a);
    whisper_config_free(&b);
    return 0;
}
