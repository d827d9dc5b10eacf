/* matmul_x.c — the fast path's x8 products (kernels/gemm/matmul_x8.h) against steno_matmul (the rows kernels,
 * llama.cpp's arithmetic) on SmolLM2's and Gemma 3's q4_1/q8_0/q4_0/q4_K/q6_K-shaped matrices, T = 1..16 and
 * 64 activation rows: µs per call (best of REPS; the machine may be shared), 1 thread by default.
 *
 *   cc -O2 -Iinclude -Isrc bench/matmul_x.c build/libsteno.a \
 *      $(pkg-config --libs openblas libavformat libavcodec libswresample libavutil libcjson libpcre2-8 zlib) \
 *      -lm -lpthread -o /tmp/matmul_x && /tmp/matmul_x [REPS] [THREADS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/threadpool.h"
#include "kernels/gemm/matmul.h"
#include "kernels/quant/quant.h"
#include "kernels/gemm/matmul_x8.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct { const char *name; int type; int n_in, n_out; } shape;
static const shape k_shapes[] = {
    {"smollm2 ffn_up", STENO_T_Q4_1, 576, 1536},   {"smollm2 ffn_down", STENO_T_Q4_1, 1536, 576},
    {"smollm2 head", STENO_T_Q8_0, 576, 49152},    {"q4_0 640x2048", STENO_T_Q4_0, 640, 2048},
    {"gemma3 attn_v", STENO_T_Q8_0, 640, 256},     {"gemma3 attn_output", STENO_T_Q4_K, 1024, 640},
    {"gemma3 ffn_down", STENO_T_Q4_K, 2048, 640},  {"gemma3 ffn_down", STENO_T_Q6_K, 2048, 640},
};

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 5, th = argc > 2 ? atoi(argv[2]) : 1;
    steno_pool *pool = NULL;
    if (th > 1 && steno_pool_create(th, &pool) != STENO_OK) return 1;
    static const int Ts[] = {1, 2, 4, 8, 16, 64};
    printf("x8 kernels %s, %d thread(s), best of %d: µs rows-kernels / x8 (ratio)\n", steno_xmat_isa(), th, reps);
    for (size_t s = 0; s < sizeof k_shapes / sizeof k_shapes[0]; s++) {
        const shape *sh = &k_shapes[s];
        const size_t rb = steno_row_size(sh->type, sh->n_in);
        uint8_t *w = malloc(rb * sh->n_out);
        for (size_t i = 0; i < rb * sh->n_out; i++) w[i] = (uint8_t)(rand() & 0x3f);
        steno_mat m = {sh->type, sh->n_in, sh->n_out, rb, w, NULL};
        steno_xmat xm;
        if (steno_xmat_pack(&m, &xm)) return 1;
        float *x = malloc(sizeof(float) * sh->n_in * 64), *y = malloc(sizeof(float) * sh->n_out * 64);
        for (int i = 0; i < sh->n_in * 64; i++) x[i] = (float)(rand() % 2001 - 1000) / 1000.0f;
        steno_work wk = {0};
        printf("%-17s %s %5d %6d |", sh->name, steno_type_name(sh->type), sh->n_in, sh->n_out);
        for (size_t ti = 0; ti < sizeof Ts / sizeof Ts[0]; ti++) {
            const int T = Ts[ti];
            double best[2] = {1e9, 1e9};
            for (int r = 0; r < reps; r++)
                for (int v = 0; v < 2; v++) {
                    double t0 = now();
                    if (v == 0) steno_matmul(pool, &wk, &m, x, T, y, sh->n_out);
                    else steno_matmul_x(pool, &wk, &xm, x, T, y, sh->n_out);
                    double dt = (now() - t0) * 1e6;
                    if (dt < best[v]) best[v] = dt;
                }
            printf(" T=%d %.0f/%.0f (%.2f)", T, best[0], best[1], best[0] / best[1]);
        }
        printf("\n");
        steno_work_free(&wk);
        steno_xmat_free(&xm);
        free(w), free(x), free(y);
    }
    steno_pool_free(pool);
    return 0;
}
