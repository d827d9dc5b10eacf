/* fuzz_tokenizer.c — libFuzzer target for steno_tokenizer_load() (src/text/whisper_bpe_build.c): the
 * Whisper vocabulary (vocabulary.txt, or vocabulary.json when the input's first byte is odd) and
 * tokenizer.json (merges). Input: fuzz_split() parts = vocabulary file, tokenizer.json.
 *
 * Invariants, when the pair loads: n_vocab > 0; every id has bytes; a text encodes to ids below
 * n_vocab that decode back to the same bytes (byte-level BPE loses nothing: the loader insists
 * on a token for each of the 256 bytes); on failure the message is one line.
 * Run: scripts/fuzz.sh tokenizer 10 */
#include "fuzz_util.h"
#include "text/whisper_bpe.h"

static fuzz_file g_txt, g_json, g_tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    const char *dir = fuzz_tmpdir();
    fuzz_file_init(&g_txt, dir, "vocabulary.txt");
    fuzz_file_init(&g_json, dir, "vocabulary.json");
    fuzz_file_init(&g_tok, dir, "tokenizer.json");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const int as_json = data[0] & 1;
    const uint8_t *voc, *tok;
    size_t nvoc, ntok;
    fuzz_split(data + 1, size - 1, &voc, &nvoc, &tok, &ntok);
    unlink(g_txt.path);
    unlink(g_json.path);
    fuzz_file_write(as_json ? &g_json : &g_txt, voc, nvoc);
    fuzz_file_write(&g_tok, tok, ntok);

    steno_tokenizer *t = NULL;
    if (steno_tokenizer_load(fuzz_tmpdir(), &t) != STENO_OK) {
        if (t || strchr(steno_errmsg(), '\n')) abort();
        return 0;
    }
    const int nv = steno_tokenizer_n_vocab(t);
    if (nv <= 0) abort();
    for (int i = 0; i < nv; i++) {
        size_t len = 0;
        if (!steno_tokenizer_token_bytes(t, i, &len)) abort();
    }
    static const char text[] = " And so my fellow Americans, ask not: \xc3\xa9t\xc3\xa9 \xe2\x80\x94 42!";
    int *ids = NULL, n = 0;
    if (steno_tokenizer_encode(t, text, &ids, &n) != STENO_OK) abort();
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= nv) abort();
    char *back = steno_tokenizer_decode(t, ids, n, 0);
    if (!back || strcmp(back, text) != 0) abort();
    free(back);
    free(ids);
    steno_tokenizer_free(t);
    return 0;
}
