/* test_wq.c — quantized Whisper weights (kernels/quant/wq.h, whisper/nn/linear_quant.h):
 *   - known answers of the quantizers (ggml's quantize_row_q4_0_ref, mlx's affine_quantize);
 *   - every type's dequantized matrix within its step of the float32 original;
 *   - every type's GEMV against a scalar reference (float64 dot of the dequantized row with the
 *     dequantized activation codes), and for each instruction set the build has and the CPU runs:
 *     the ggml rows kernels (avx2, avxvnni, avx512vnni) bit-identical to each other and to the
 *     single-row vec_dot, the MLX kernels (scalar, avx2, avx512vnni) bit-identical to the scalar
 *     one; the others are named as skipped;
 *   - fastq_linear (GEMV, rows and GEMM) bit-identical for 1, 2 and 3 threads. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "core/threadpool.h"
#include "kernels/quant/blocks.h"
#include "kernels/gemv/dot_rows.h"
#include "kernels/quant/wq.h"
#include "test_util.h"
#include "whisper/nn/linear_quant.h"
#include "rng.h"

static const int TYPES[] = {STENO_T_Q8_0,  STENO_T_Q5_0,  STENO_T_Q5_1,  STENO_T_Q4_0, STENO_T_Q4_1,
                            WQ_MLX_Q4_G32, WQ_MLX_Q4_G64, WQ_MLX_Q8_G32, WQ_MLX_Q8_G64};
#define NTYPES ((int)(sizeof TYPES / sizeof TYPES[0]))

static uint32_t g_rng = 12345;
static float frand(void) { return (float)((rng_lcg_nr(&g_rng) >> 8) & 0xFFFFFF) / 8388608.0f - 1.0f; } /* [-1, 1) */

static void *amalloc(size_t n) { return aligned_alloc(64, (n + 63) & ~(size_t)63); }

static void known_answers(void) {
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = (float)(j - 16);
    block_q4_0 b;
    wq_mat m;
    wq_quantize(STENO_T_Q4_0, x, 1, 32, &b, &m);
    /* max |x| at x[0] = −16: d = −16/−8 = 2, q = min(15, (int8)(x/2 + 8.5)) */
    CHECK(b.d == 0x4000, "q4_0 d = 0x%04x, want 0x4000 (2.0)", b.d);
    CHECK(b.qs[0] == 0x80, "q4_0 qs[0] = 0x%02x, want 0x80 (x[0] → 0, x[16] → 8)", b.qs[0]);
    CHECK(b.qs[15] == 0xF8, "q4_0 qs[15] = 0x%02x, want 0xf8 (x[15] → 8, x[31] → 16 clipped to 15)", b.qs[15]);

    /* mlx: w = j/2 on one group of 32, 4 bits: |min| <= |max|, so the edge is max = 15.5 with
     * scale0 = −15.5/15, q0 = −15, scale = 15.5/−15, bias = 15.5: w = 0 → code 15, w = 15.5 → 0 */
    unsigned char buf[64];
    for (int j = 0; j < 32; j++) x[j] = 0.5f * (float)j;
    wq_quantize(WQ_MLX_Q4_G32, x, 1, 32, buf, &m);
    const uint32_t *w = m.q;
    CHECK((w[0] & 0xF) == 15, "mlx q4 code of w=0: %u, want 15", w[0] & 0xF);
    CHECK((w[3] >> 28) == 0, "mlx q4 code of w=15.5: %u, want 0", w[3] >> 28);
    CHECK(m.biases[0] == steno_f32_to_f16(15.5f), "mlx bias 0x%04x, want f16(15.5)", m.biases[0]);
    CHECK(m.scales[0] == steno_f32_to_f16(15.5f / -15.0f), "mlx scale 0x%04x, want f16(-15.5/15)", m.scales[0]);
    float back[32];
    wq_dequant_rows(&m, 0, 1, back);
    CHECK(fabsf(back[0]) < 0.02f, "mlx dequant of w=0: %g", back[0]);
    CHECK(wq_parse("mlx-q8g64") == WQ_MLX_Q8_G64 && wq_parse("q5_1") == STENO_T_Q5_1 && wq_parse("q6_K") == -1,
          "wq_parse");
}

/* Dequantization error within the type's step: |w − deq| <= step·(1 + 1e-3) + 1e-6 where the
 * step is the block's |d| (ggml) or the group's |scale| (MLX). */
static void roundtrip(int type, const float *w, int N, int K) {
    void *q = amalloc(wq_bytes(type, N, K));
    wq_mat m;
    wq_quantize(type, w, N, K, q, &m);
    float *deq = malloc(sizeof(float) * N * K);
    wq_dequant_rows(&m, 0, N, deq);
    const int G = wq_group(type);
    int bad = 0;
    for (int r = 0; r < N; r++)
        for (int g = 0; g < K / G; g++) {
            float lo = INFINITY, hi = -INFINITY;
            for (int j = g * G; j < (g + 1) * G; j++) {
                lo = fminf(lo, w[r * K + j]);
                hi = fmaxf(hi, w[r * K + j]);
            }
            const int bits = type == STENO_T_Q8_0 || type == WQ_MLX_Q8_G32 || type == WQ_MLX_Q8_G64 ? 8
                             : type == STENO_T_Q5_0 || type == STENO_T_Q5_1                          ? 5
                                                                                                     : 4;
            const float step = (hi - lo) / (float)((1 << bits) - 1) * (type == STENO_T_Q8_0 ? 1.01f : 1.0f);
            const float tol = (type == STENO_T_Q4_0 || type == STENO_T_Q5_0 || type == STENO_T_Q8_0 ? 2.0f : 1.0f) *
                                  step * 1.01f + 1e-3f * (fabsf(lo) + fabsf(hi));
            for (int j = g * G; j < (g + 1) * G; j++)
                if (fabsf(deq[r * K + j] - w[r * K + j]) > tol) bad++;
        }
    CHECK(bad == 0, "%s: %d of %d values outside their step after a round trip", wq_name(type), bad, N * K);
    free(deq);
    free(q);
}

/* The activation codes as float (what every kernel multiplies). */
static void act_values(int type, const void *xa, int K, double *out) {
    if (type >= WQ_MLX_Q4_G32) {
        const int8_t *q = xa;
        const float *d = (const float *)((const uint8_t *)xa + ((K + 63) & ~63));
        for (int i = 0; i < K; i++) out[i] = (double)d[i / 32] * q[i];
        return;
    }
    const steno_type_traits *t = steno_type_get(type);
    const steno_rows_kernels *rk = steno_rows_get(type);
    size_t pk = rk ? (steno_rows_pack_row_bytes(t->vec_dot_type, rk, K) + 63) & ~(size_t)63 : 0;
    const uint8_t *raw = (const uint8_t *)xa + pk;
    const size_t bs = t->vec_dot_type == STENO_T_Q8_1 ? 36 : 34;
    for (int b = 0; b < K / 32; b++) {
        uint16_t h;
        memcpy(&h, raw + b * bs, 2);
        const int8_t *q = (const int8_t *)(raw + b * bs + (bs == 36 ? 4 : 2));
        for (int j = 0; j < 32; j++) out[b * 32 + j] = (double)steno_fp16_to_f32(h) * q[j];
    }
}

/* Back to the dispatch's own choice (recorded by main before any test hook ran). */
static int g_rows0 = STENO_ROWS_NISA, g_mlx0 = 0;
static void restore_isas(void) {
    steno_rows_set_isa(g_rows0);
    wq_mlx_set_isa(g_mlx0);
}

static void gemv_checks(int type, const float *w, const float *x, int N, int K) {
    void *q = amalloc(wq_bytes(type, N, K));
    wq_mat m;
    wq_quantize(type, w, N, K, q, &m);
    void *xa = amalloc(wq_act_bytes(type, K));
    wq_act_prepare(type, x, K, xa);
    float *deq = malloc(sizeof(float) * N * K), *y = malloc(sizeof(float) * N), *y2 = malloc(sizeof(float) * N);
    double *xv = malloc(sizeof(double) * K);
    wq_dequant_rows(&m, 0, N, deq);
    act_values(type, xa, K, xv);
    wq_gemv(&m, xa, NULL, 0, N, y);
    int bad = 0;
    /* q4_1/q5_1 read the activation's sum as q8_1's float16 s = d·Σq (ggml's kernels do): that
     * rounding (2^-11 relative) moves the bias term, hence the wider tolerance */
    const double rel = type == STENO_T_Q4_1 || type == STENO_T_Q5_1 ? 2e-3 : 1e-4;
    for (int r = 0; r < N; r++) {
        double ref = 0, mag = 0;
        for (int i = 0; i < K; i++) {
            ref += (double)deq[r * K + i] * xv[i];
            mag += fabs((double)deq[r * K + i] * xv[i]);
        }
        if (fabs(y[r] - ref) > rel * mag + 1e-6) bad++;
    }
    CHECK(bad == 0, "%s: %d of %d GEMV rows off the float64 reference", wq_name(type), bad, N);
    if (type >= WQ_MLX_Q4_G32) {
        static const char *isa[] = {"scalar", "avx2", "avx512vnni"};
        for (int k = 0; k < 3; k++) {
            const char *why = wq_mlx_isa_missing(k);
            if (why) {
                printf("  %s: mlx %s kernel skipped (%s)\n", wq_name(type), isa[k], why);
                continue;
            }
            wq_mlx_set_isa(k);
            wq_gemv(&m, xa, NULL, 0, N, y2);
            CHECK(memcmp(y, y2, sizeof(float) * N) == 0, "%s: mlx %s kernel differs from the default one",
                  wq_name(type), isa[k]);
            printf("  %s: mlx %s kernel bit-identical\n", wq_name(type), isa[k]);
        }
        restore_isas();
    } else {
        /* the single-row kernel of the dispatch (avx2 or scalar) against each rows kernel */
        const steno_type_traits *t = steno_type_get(type);
        void *raw = amalloc(steno_row_size(t->vec_dot_type, K));
        steno_type_get(t->vec_dot_type)->from_float(x, raw, K);
        for (int r = 0; r < N; r++) y[r] = t->vec_dot(K, (const uint8_t *)q + m.q_row * r, raw);
        /* the rows kernels equal the AVX2 single-row kernel; with scalar dot kernels
         * (STENO_NO_AVX2=1) they are compared with each other, the first one as reference */
        const int vs_vec_dot = strcmp(steno_kernels_isa(), "avx2") == 0;
        int have_ref = vs_vec_dot;
        for (int isa = 0; isa < STENO_ROWS_NISA; isa++) {
            const char *why = steno_rows_isa_missing(isa);
            const steno_rows_kernels *rk = steno_rows_kernels_for(type, isa);
            if (why || !rk) {
                printf("  %s: rows kernel %s skipped (%s)\n", wq_name(type), steno_rows_isa_name(isa),
                       why ? why : "no rows kernel for this type: the single-row vec_dot runs");
                continue;
            }
            steno_rows_set_isa(isa);
            void *xb = amalloc(wq_act_bytes(type, K));
            wq_act_prepare(type, x, K, xb);
            wq_gemv(&m, xb, NULL, 0, N, y2);
            if (!have_ref) {
                memcpy(y, y2, sizeof(float) * N);
                have_ref = 1;
            }
            CHECK(memcmp(y, y2, sizeof(float) * N) == 0, "%s: rows kernel %s differs from the reference", wq_name(type),
                  steno_rows_isa_name(isa));
            printf("  %s: rows kernel %s bit-identical to %s\n", wq_name(type), steno_rows_isa_name(isa),
                   vs_vec_dot ? "the avx2 vec_dot" : "the first rows kernel");
            free(xb);
        }
        restore_isas();
        free(raw);
    }
    free(deq);
    free(y);
    free(y2);
    free(xv);
    free(xa);
    free(q);
}

/* With an x8 copy (wq_mat.x, as the loader makes for q8_0/q5_0/q4_0/q4_1) every product is the x8
 * one: equal to steno_matmul_x plus the bias, the same for GEMM and GEMV, any thread count, and a
 * row of T equal to that row alone (also with only the x8 copy and no work of the caller's); rows
 * dequantized from it equal ggml's. ref, y: [T][N] scratch. */
static void x8_checks(wq_mat *m, const float *b, const float *x, int T, float *ref, float *y) {
    const int N = m->n_out, K = m->n_in;
    const steno_mat sm = {m->type, K, N, m->q_row, m->q, NULL};
    if (!steno_xmat_supported(&sm)) return;
    if (steno_xmat_pack(&sm, &m->x) != 0) {
        CHECK(0, "%s: x8 pack", wq_name(m->type));
        return;
    }
    /* rows looked up from the x8 copy alone (the loader keeps no ggml rows): ggml's dequantized values */
    float *a = malloc(sizeof(float) * N * K), *c = malloc(sizeof(float) * N * K);
    wq_dequant_rows(m, 0, N, a);
    wq_mat only = *m;
    only.q = m->x.data;
    only.q_row = 0;
    wq_dequant_rows(&only, 3, N, c);
    CHECK(memcmp(a + (size_t)3 * K, c, sizeof(float) * (N - 3) * K) == 0, "%s x8: rows 3..%d dequantized differ from ggml's",
          wq_name(m->type), N - 1);
    free(a);
    free(c);
    steno_work wk = {0};
    CHECK(steno_matmul_x(NULL, &wk, &m->x, x, T, ref, N) == 0, "%s: steno_matmul_x", wq_name(m->type));
    for (int t = 0; t < T; t++)
        for (int r = 0; r < N; r++) ref[(size_t)t * N + r] += b[r];
    for (int nt = 1; nt <= 3; nt++) {
        steno_pool *pool;
        if (steno_pool_create(nt, &pool) != STENO_OK) continue;
        for (int gemm = 0; gemm < 2; gemm++) {
            memset(y, 0, sizeof(float) * T * N);
            fastq_linear(pool, nt, m, b, x, T, gemm, y, NULL, NULL, 0, &wk);
            CHECK(memcmp(ref, y, sizeof(float) * T * N) == 0, "%s x8: %s with %d threads differs from matmul_x + b",
                  wq_name(m->type), gemm ? "GEMM" : "GEMV rows", nt);
        }
        fastq_linear(pool, nt, &only, b, x + (size_t)(T - 1) * K, 1, 0, y, NULL, NULL, 0, nt == 2 ? NULL : &wk);
        CHECK(memcmp(y, ref + (size_t)(T - 1) * N, sizeof(float) * N) == 0, "%s x8: row %d alone differs",
              wq_name(m->type), T - 1);
        steno_pool_free(pool);
    }
    steno_work_free(&wk);
    steno_xmat_free(&m->x);
}

static void thread_checks(int type, const float *w, const float *x, int N, int K, int T) {
    void *q = amalloc(wq_bytes(type, N, K));
    wq_mat m;
    wq_quantize(type, w, N, K, q, &m);
    float *b = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) b[i] = frand();
    float *ref[2] = {malloc(sizeof(float) * T * N), malloc(sizeof(float) * T * N)};
    float *y = malloc(sizeof(float) * T * N);
    void *act = amalloc(wq_act_bytes(type, K) * T);
    float *tiles = malloc(sizeof(float) * 3 * FASTQ_COL_CHUNK * K);
    for (int nt = 1; nt <= 3; nt++) {
        steno_pool *pool;
        if (steno_pool_create(nt, &pool) != STENO_OK) {
            CHECK(0, "pool of %d threads", nt);
            continue;
        }
        for (int gemm = 0; gemm < 2; gemm++) {
            fastq_linear(pool, nt, &m, b, x, T, gemm, nt == 1 ? ref[gemm] : y, act, tiles, (size_t)FASTQ_COL_CHUNK * K,
                         NULL);
            if (nt > 1)
                CHECK(memcmp(ref[gemm], y, sizeof(float) * T * N) == 0, "%s: %s with %d threads differs from 1 thread",
                      wq_name(type), gemm ? "GEMM" : "GEMV rows", nt);
        }
        steno_pool_free(pool);
    }
    /* a GEMV row equals the single-row GEMV of that row (batched rows change nothing) */
    steno_pool *pool;
    if (steno_pool_create(2, &pool) == STENO_OK) {
        fastq_linear(pool, 2, &m, b, x + K, 1, 0, y, act, tiles, 0, NULL);
        CHECK(memcmp(y, ref[0] + N, sizeof(float) * N) == 0, "%s: row 1 of a %d-row GEMV differs from its own GEMV",
              wq_name(type), T);
        steno_pool_free(pool);
    }
    x8_checks(&m, b, x, T, ref[0], y);
    free(b);
    free(ref[0]);
    free(ref[1]);
    free(y);
    free(act);
    free(tiles);
    free(q);
}

int main(void) {
    known_answers();
    const int N = 300, K = 384, T = 5;
    float *w = malloc(sizeof(float) * N * K), *x = malloc(sizeof(float) * T * K);
    for (int i = 0; i < N * K; i++) w[i] = 0.05f * frand() * (i % 97 == 0 ? 8.0f : 1.0f);
    for (int i = 0; i < T * K; i++) x[i] = frand() * (i % 13 == 0 ? 4.0f : 1.0f);
    printf("dot kernels: %s; rows kernels: %s; mlx kernels: %s\n", steno_kernels_isa(), steno_rows_isa(),
           wq_mlx_isa());
    for (int k = 0; k < STENO_ROWS_NISA; k++)
        if (strcmp(steno_rows_isa(), steno_rows_isa_name(k)) == 0) g_rows0 = k;
    g_mlx0 = strcmp(wq_mlx_isa(), "avx512vnni") == 0 ? 2 : strcmp(wq_mlx_isa(), "avx2") == 0 ? 1 : 0;
    for (int k = 0; k < NTYPES; k++) {
        roundtrip(TYPES[k], w, N, K);
        gemv_checks(TYPES[k], w, x, N, K);
        thread_checks(TYPES[k], w, x, N, K, T);
    }
    free(w);
    free(x);
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures != 0;
}
