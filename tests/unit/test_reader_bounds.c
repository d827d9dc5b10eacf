/* test_reader_bounds.c — model readers check what a file declares against the file's length
 * before it sizes an allocation or a loop (issue 19), and say what they need of a buffer.
 *   - llama2.c tokenizer.bin: the vocabulary size comes from the checkpoint; a 12-byte tokenizer
 *     under a 2^24-token vocabulary fails at once (it used to allocate 3 × 2^24 entries first);
 *   - llama2c_open_buffer refuses an image that is not float-aligned (its weights are float
 *     pointers into it) and accepts the same bytes aligned;
 *   - the Whisper tokenizer's errors stay one line when they quote a token that holds a newline
 *     (found by fuzz_tokenizer: fuzz/corpus/fuzz_tokenizer/multiline_vocab_message). */
#include "formats/llama2c.h"
#include "text/whisper_bpe.h"
#include "steno.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int n_pass, n_fail;

static void check(const char *what, int ok) {
    if (ok) { n_pass++; return; }
    n_fail++;
    fprintf(stderr, "FAIL %s\n", what);
}

static void test_llama2c_tokenizer_count(void) {
    /* max_token_length 4, then one entry: score 0, length 1, "a" */
    const unsigned char tok[] = {4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 'a'};
    llama2c_tokenizer *t = NULL;
    steno_status st = llama2c_tokenizer_load_buffer(tok, sizeof tok, "tokenizer.bin", 1 << 24, &t);
    printf("2^24 tokens in %zu bytes: %s\n", sizeof tok, steno_errmsg());
    check("a vocabulary larger than the file can hold is STENO_E_FORMAT", st == STENO_E_FORMAT && t == NULL);
    check("the message names the file and the count",
          strstr(steno_errmsg(), "tokenizer.bin: ") == steno_errmsg() && strstr(steno_errmsg(), "16777216 tokens"));
    st = llama2c_tokenizer_load_buffer(tok, sizeof tok, "tokenizer.bin", 1, &t);
    check("the same file with its real count loads", st == STENO_OK && t && t->n == 1 && t->lens[0] == 1);
    llama2c_tokenizer_free(t);
}

static void test_llama2c_alignment(void) {
    /* the smallest checkpoint: dim 4, hidden 4, 1 layer, 1 head, 1 kv head, vocab 2 (shared), seq 2 */
    const int32_t h[7] = {4, 4, 1, 1, 1, 2, 2};
    /* weights: emb V·d, rms d, wq/wk/wv/wo d·d each, rms_ffn d, w1/w2/w3 hidden·d each, rms_final d,
     * freq_cis 2 × seq × hs/2 */
    const size_t n_floats = 2 * 4 + 4 + 4 * 16 + 4 + 3 * 16 + 4 + 2 * 2 * 2;
    size_t size = sizeof h + n_floats * sizeof(float);
    unsigned char *buf = calloc(1, size + 8);
    memcpy(buf, h, sizeof h);
    llama2c_file *f = NULL;
    steno_status st = llama2c_open_buffer(buf, size, "aligned.bin", &f);
    if (st != STENO_OK) fprintf(stderr, "  %s\n", steno_errmsg());
    check("an aligned image opens", st == STENO_OK && f != NULL);
    llama2c_close(f);
    memmove(buf + 1, buf, size);
    f = NULL;
    st = llama2c_open_buffer(buf + 1, size, "misaligned.bin", &f);
    printf("misaligned image: %s\n", steno_errmsg());
    check("a misaligned image is STENO_E_INVALID_ARG", st == STENO_E_INVALID_ARG && f == NULL);
    check("the message names the image and the alignment",
          strstr(steno_errmsg(), "misaligned.bin: ") == steno_errmsg() && strstr(steno_errmsg(), "4-byte aligned"));
    free(buf);
}

/* Replays the fuzz find: byte 0 = vocabulary form (even: .txt), u32 length, vocabulary, tokenizer.json. */
static void test_tokenizer_message_one_line(void) {
    const char *src = getenv("STENO_SOURCE");
    char path[4096];
    snprintf(path, sizeof path, "%s/fuzz/corpus/fuzz_tokenizer/multiline_vocab_message", src && *src ? src : ".");
    FILE *f = fopen(path, "rb");
    check("the fuzz reproducer is readable (set STENO_SOURCE)", f != NULL);
    if (!f) return;
    static unsigned char d[1 << 16];
    size_t n = fread(d, 1, sizeof d, f);
    fclose(f);
    uint32_t nv;
    memcpy(&nv, d + 1, 4);
    check("reproducer layout", n > 5 && nv <= n - 5 && (d[0] & 1) == 0);
    if (!(n > 5 && nv <= n - 5)) return;
    char dir[] = "/tmp/steno_test_bounds_XXXXXX", p1[64], p2[64];
    if (!mkdtemp(dir)) { check("mkdtemp", 0); return; }
    snprintf(p1, sizeof p1, "%s/vocabulary.txt", dir);
    snprintf(p2, sizeof p2, "%s/tokenizer.json", dir);
    f = fopen(p1, "wb");
    fwrite(d + 5, 1, nv, f);
    fclose(f);
    f = fopen(p2, "wb");
    fwrite(d + 5 + nv, 1, n - 5 - nv, f);
    fclose(f);
    steno_tokenizer *t = NULL;
    steno_status st = steno_tokenizer_load(dir, &t);
    printf("token with a newline: %s\n", steno_errmsg());
    check("the reproducer fails to load", st == STENO_E_FORMAT && t == NULL);
    check("its message is one line", strchr(steno_errmsg(), '\n') == NULL);
    unlink(p1);
    unlink(p2);
    rmdir(dir);
}

int main(void) {
    test_tokenizer_message_one_line();
    test_llama2c_tokenizer_count();
    test_llama2c_alignment();
    printf("test_reader_bounds: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
