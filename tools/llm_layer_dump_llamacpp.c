/* llm_layer_dump_llamacpp.c — dumps llama.cpp's intermediate tensors (graph callback) for a token
 * list, one token per llama_decode call, as /tmp/lcdump/t_<name>-<layer>@<token>.f32 (float32).
 * With tools/llm_layer_dump_steno.c and tools/llm_layer_compare.py it finds the first operation
 * where steno and llama.cpp part (how the bit-exact kernels in src/kernels/ops/ggml_simd.c were found).
 * Not built by CMake. Against the llama-cpp-python build (see tools/llm_oracle_llamacpp.py):
 *
 *   L=/tmp/llama-venv/lib/python3.11/site-packages/llama_cpp/lib
 *   SRC=<llama.cpp source: the llama-cpp-python sdist's vendor/llama.cpp>
 *   gcc -O1 tools/llm_layer_dump_llamacpp.c -I$SRC/include -I$SRC/ggml/include -L$L -lllama -lggml \
 *       -lggml-base -Wl,-rpath,$L -o /tmp/lcdump/dump
 *   mkdir -p /tmp/lcdump && /tmp/lcdump/dump model.gguf 2 818 5279 529
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

static int g_tok = 0;

static bool cb(struct ggml_tensor *t, bool ask, void *ud) {
    (void)ud;
    if (ask) return true;
    if (t->type != GGML_TYPE_F32) return true;
    char fn[256];
    snprintf(fn, sizeof fn, "/tmp/lcdump/t_%s@%d.f32", t->name, g_tok);
    for (char *p = fn + 12; *p; p++)
        if (*p == ' ' || *p == '(' || *p == ')') *p = '_';
    FILE *f = fopen(fn, "wb");
    if (f) {
        size_t n = ggml_nelements(t);
        float *buf = malloc(n * 4);
        ggml_backend_tensor_get(t, buf, 0, n * 4);
        fwrite(buf, 4, n, f);
        fclose(f);
        free(buf);
    }
    return true;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s model.gguf token...\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    struct llama_model *m = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!m) return 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 1024;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.cb_eval = cb;
    struct llama_context *c = llama_init_from_model(m, cp);
    int n = argc - 2;
    llama_token *t = malloc((size_t)n * sizeof(llama_token));
    for (int i = 0; i < n; i++) t[i] = atoi(argv[2 + i]);
    for (int i = 0; i < n; i++) {
        g_tok = i;
        llama_decode(c, llama_batch_get_one(&t[i], 1));
    }
    return 0;
}
