/* matmul_rows.c — steno_matmul on the weight shapes of SmolLM2-135M (Q4_1, Q8_0 head) and
 * Gemma 3 270M (Q5_0, Q4_K, Q6_K, Q8_0) for T = 1, 2, 4, 8, 16 activation rows: the batched
 * decode step's matrix products (continuous batching packs T rows per weight pass).
 * Prints µs per call (the best of REPS samples: the machine is shared, and the minimum is what the
 * kernel costs when it is not preempted) and GOP/s counting 2·T·n_in·n_out.
 * Weights are random bytes with small positive fp16 scales (timing does not depend on values).
 *
 *   cc -O2 -Iinclude -Isrc bench/matmul_rows.c build/libsteno.a \
 *      $(pkg-config --libs openblas libavformat libavcodec libswresample libavutil libcjson libpcre2-8 zlib) \
 *      -lm -lpthread -o /tmp/matmul_rows && /tmp/matmul_rows [REPS] [THREADS...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/threadpool.h"
#include "kernels/gemm/matmul.h"
#include "kernels/quant/quant.h"

/* weak: the bench also links against libraries from before the rows kernels, to compare */
__attribute__((weak)) const char *steno_rows_isa(void);

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct { const char *name; int type; int n_in, n_out; } shape;

static const shape k_shapes[] = {
    {"smollm2 ffn_up", STENO_T_Q4_1, 576, 1536},
    {"smollm2 ffn_down", STENO_T_Q4_1, 1536, 576},
    {"smollm2 head", STENO_T_Q8_0, 576, 49152},
    {"gemma3 ffn_up", STENO_T_Q5_0, 640, 2048},
    {"gemma3 attn_out", STENO_T_Q4_K, 1024, 640},
    {"gemma3 ffn_down", STENO_T_Q6_K, 2048, 640},
    {"gemma3 attn_v", STENO_T_Q8_0, 640, 256},
    {"gemma3 head", STENO_T_Q8_0, 640, 262144},
};

static uint64_t g_s = 0x9E3779B97F4A7C15ull;
static uint8_t rnd8(void) {
    g_s ^= g_s << 13;
    g_s ^= g_s >> 7;
    g_s ^= g_s << 17;
    return (uint8_t)(g_s >> 32);
}

/* random bytes, then every fp16 scale set to a small positive value */
static void fill(int type, uint8_t *w, size_t bytes) {
    for (size_t i = 0; i < bytes; i++) w[i] = rnd8();
    const steno_type_traits *tr = steno_type_get(type);
    const uint16_t h = 0x1c00; /* 2^-8 */
    for (size_t b = 0; b < bytes; b += tr->type_size) {
        if (type == STENO_T_Q6_K) memcpy(w + b + 208, &h, 2);
        else {
            memcpy(w + b, &h, 2);
            if (type == STENO_T_Q4_1 || type == STENO_T_Q4_K) memcpy(w + b + 2, &h, 2);
        }
    }
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 9;
    int threads[4] = {1, 2}, nth = 2;
    if (argc > 2) {
        nth = 0;
        for (int i = 2; i < argc && nth < 4; i++) threads[nth++] = atoi(argv[i]);
    }
    /* MATMUL_ROWS_ONLY=substring limits the matrices, MATMUL_ROWS_T="1 3 4" the row counts */
    const char *only = getenv("MATMUL_ROWS_ONLY"), *tenv = getenv("MATMUL_ROWS_T");
    int Ts[16] = {1, 2, 4, 8, 16}, nT = 5;
    if (tenv && *tenv) {
        nT = 0;
        for (char *e; nT < 16 && *tenv; tenv = e) {
            long v = strtol(tenv, &e, 10);
            if (e == tenv) break;
            if (v >= 1 && v <= 16) Ts[nT++] = (int)v;
        }
    }
    printf("dot kernels %s, rows kernels %s, best of %d\n", steno_kernels_isa(), steno_rows_isa ? steno_rows_isa() : "(none in this build)", reps);
    printf("%-18s %-5s %5s %6s %3s | %10s %8s\n", "matrix", "type", "n_in", "n_out", "thr", "T=...:us", "GOP/s");
    for (size_t s = 0; s < sizeof k_shapes / sizeof k_shapes[0]; s++) {
        const shape *sh = &k_shapes[s];
        if (only && !strstr(sh->name, only)) continue;
        size_t rb = steno_row_size(sh->type, sh->n_in);
        uint8_t *w = malloc(rb * sh->n_out);
        fill(sh->type, w, rb * sh->n_out);
        steno_mat m = {sh->type, sh->n_in, sh->n_out, rb, w};
        float *x = malloc(sizeof(float) * sh->n_in * 16), *y = malloc(sizeof(float) * sh->n_out * 16);
        for (int i = 0; i < sh->n_in * 16; i++) x[i] = (float)((int)rnd8() - 128) / 64.0f;
        for (int ti = 0; ti < nth; ti++) {
            steno_pool *pool = NULL;
            if (threads[ti] > 1 && steno_pool_create(threads[ti], &pool) != STENO_OK) return 1;
            steno_work wk = {0};
            /* warm-up: the first milliseconds of a process ran up to 1.5x slower (clock ramp) */
            for (double w0 = now(); now() - w0 < 0.2;) steno_matmul(pool, &wk, &m, x, 8, y, sh->n_out);
            printf("%-18s %-5s %5d %6d %3d |", sh->name, steno_type_name(sh->type), sh->n_in, sh->n_out, threads[ti]);
            for (int k = 0; k < nT; k++) {
                const int T = Ts[k];
                double t[64];
                int r = reps < 64 ? reps : 64;
                /* enough calls per sample for ~2 ms */
                double t0 = now();
                steno_matmul(pool, &wk, &m, x, T, y, sh->n_out);
                double one = now() - t0;
                int inner = one > 2e-3 ? 1 : (int)(2e-3 / (one + 1e-9)) + 1;
                for (int i = 0; i < r; i++) {
                    t0 = now();
                    for (int j = 0; j < inner; j++) steno_matmul(pool, &wk, &m, x, T, y, sh->n_out);
                    t[i] = (now() - t0) / inner;
                }
                qsort(t, (size_t)r, sizeof *t, cmp);
                double med = t[0];
                printf(" %d:%.1f/%.1f", T, med * 1e6, 2.0 * T * sh->n_in * sh->n_out / med * 1e-9);
            }
            printf("\n");
            steno_work_free(&wk);
            if (pool) steno_pool_free(pool);
        }
        free(w);
        free(x);
        free(y);
    }
    return 0;
}
