/* llm_layer_dump_steno.c — steno's side of tools/llm_layer_dump_llamacpp.c: evaluates a token list
 * and writes the forward pass's named intermediates (llm/model.h dump hook: attn_norm, Qcur, Kcur,
 * Vcur, kqv_out, attn_out, ffn_out, l_out, ...) as /tmp/lcdump/s_<name>-<layer>.f32, one row per
 * token. Not built by CMake:
 *
 *   gcc -O2 -std=c17 -D_GNU_SOURCE -Iinclude -Isrc tools/llm_layer_dump_steno.c build/libsteno.a \
 *       $(pkg-config --libs libavformat libavcodec libswresample libavutil libcjson libpcre2-8 openblas) \
 *       -lz -lm -lpthread -o /tmp/lcdump/stdump
 *   /tmp/lcdump/stdump model.gguf 2 818 5279 529
 */
#include <stdio.h>
#include <stdlib.h>

#include "llm/model.h"

static void dump(void *u, const char *name, int layer, const float *d, int rows, int cols) {
    (void)u;
    char fn[256];
    snprintf(fn, sizeof fn, "/tmp/lcdump/s_%s-%d.f32", name, layer);
    FILE *f = fopen(fn, "wb");
    if (!f) return;
    fwrite(d, 4, (size_t)rows * cols, f);
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s model token...\n", argv[0]);
        return 2;
    }
    steno_llm *m;
    if (steno_llm_load(argv[1], NULL, &m) != STENO_OK) {
        fprintf(stderr, "%s\n", steno_errmsg());
        return 1;
    }
    steno_llm_ctx_params cp = steno_llm_ctx_default_params();
    cp.n_threads = 1;
    steno_llm_ctx *c;
    if (steno_llm_ctx_new(m, &cp, &c) != STENO_OK) return 1;
    c->dump = dump;
    int n = argc - 2;
    int *t = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) t[i] = atoi(argv[2 + i]);
    float *lg = malloc((size_t)n * m->hp.n_vocab * sizeof(float));
    if (steno_llm_eval(c, t, n, lg, 1) != STENO_OK) fprintf(stderr, "%s\n", steno_errmsg());
    free(lg);
    free(t);
    steno_llm_ctx_free(c);
    steno_llm_free(m);
    return 0;
}
