/* fuzz_whisper_ggml.c — libFuzzer target for wtab_read_ggml() (whisper.cpp ggml Whisper files:
 * hparams, mel filters, vocabulary, f32/f16/q4_0/q4_1/q5_0/q5_1/q8_0 tensors) and the tokenizer
 * and config derived from its vocabulary (whisper_side_load → steno_tokenizer_from_ranks).
 *
 *   CC=clang cmake -S . -B build-fuzz -DSTENO_FUZZ=ON && cmake --build build-fuzz --target fuzz_whisper_ggml
 *   scripts/fuzz.sh whisper_ggml 10          # 10 minutes
 * Seeds: scripts/fuzz_seeds.py (a small valid file with every tensor type). Each input is a memfd
 * opened by path; on success every view is dequantized/converted in full (ASan sees any read
 * past the mapping) and every name must be findable. */
#include <stdint.h>
#include <stdlib.h>

#include "formats/wtab/wtab_readers.h"
#include "fuzz_util.h"
#include "whisper/model/tokenizer_config.h"

static fuzz_file g_file;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_file_init(&g_file, NULL, "fuzz_whisper_ggml");
    return 0;
}

static float g_scratch[1 << 16];

static void fuzz_touch_table(const wtab *w) {
    volatile float sink = 0;
    for (int i = 0; i < w->n; i++) {
        const wt_tensor *t = &w->t[i];
        if (wtab_find(w, t->name) != t) abort();
        if (t->n_bytes != wt_dtype_bytes(t->dtype, t->n_elems)) abort();
        for (int64_t off = 0; off < t->n_elems; off += 1 << 16) {
            const int64_t n = t->n_elems - off < (1 << 16) ? t->n_elems - off : (1 << 16);
            wt_to_f32(t, off, n, g_scratch);
            sink += g_scratch[0];
        }
    }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_file_write(&g_file, data, size);
    wtab *w = NULL;
    if (wtab_read_ggml(g_file.path, &w) != STENO_OK) {
        if (w) abort();
        return 0;
    }
    fuzz_touch_table(w);
    whisper_config cfg;
    steno_tokenizer *tok = NULL;
    if (whisper_side_load(w, g_file.path, &cfg, &tok) == STENO_OK) {
        whisper_config_free(&cfg);
        steno_tokenizer_free(tok);
    }
    wtab_free(w);
    return 0;
}
