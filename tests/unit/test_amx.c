/* The AMX-BF16 kernels (kernels/gemm/gemm_amx_bf16x3.h, kernels/attention/attention_amx.h) against float64 references,
 * and the independence their headers promise.
 *
 * 1. gemm_amx_mul: T = 1, 31, 33, 1500 rows; K = 64, 384, 1536; 32..384 outputs; bias on and off;
 *    float16 weights with subnormal and ±max values. Each output within 2⁻¹⁵·Σ|x·w| (+ 2⁻¹²⁰) of
 *    the float64 product (bf16x3 drops about 2⁻¹⁶·⁴ of each |x·w|; measured worst 2⁻¹⁵·⁶), and the
 *    mean under 2⁻¹⁷·Σ|x·w| (measured 2⁻¹⁹: a plain bfloat16 product would be near 2⁻⁹). Bits: the
 *    same for the columns packed and multiplied in one call or in two, and for the first rows of a
 *    call with fewer rows.
 * 2. att_amx_rows: T = 1, 33, 200, 1500 keys, dh = 64 and 128, query blocks of 1, 7 and 32;
 *    each output within 2⁻¹⁴·max|v| of the float64 softmax attention (measured up to 2⁻¹⁶), and a query's output the
 *    same bits whatever block it is computed in.
 * 3. STENO_NO_AMX=1 turns gemm_amx_available() off (checked with the variable cleared first, and
 *    restored after: the kernels are tested even when the test runs with STENO_NO_AMX=1).
 * On a CPU without AMX-BF16 (or a kernel that does not grant the tile state) only 3 runs, and the
 * test says so: the fast path then keeps sgemm and the float32 attention (test_fast_* cover them). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/attention/attention_amx.h"
#include "kernels/gemm/gemm_amx_bf16x3.h"
#include "rng.h"
#include "test_util.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double urand(void) { return rng_unit53(rng_xorshift64(&g_rng)) * 2.0 - 1.0; }

/* a float16 near v (truncated; ±max beyond the range, subnormal halves below it) */
static uint16_t to_half(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const int e = (int)((u >> 23) & 0xff) - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7bffu); /* the largest finite half */
    if (e <= 0) {                                    /* subnormal half (or zero) */
        if (e < -10) return (uint16_t)sign;
        const uint32_t m = (u & 0x7fffffu) | 0x800000u;
        return (uint16_t)(sign | (m >> (14 - e)));
    }
    return (uint16_t)(sign | (uint32_t)e << 10 | ((u >> 13) & 0x3ffu));
}

static void *xalloc(size_t bytes) {
    void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!p) exit(2);
    return p;
}

static void check_gemm(int T, int K, int N, int with_bias) {
    const int Tp = gemm_amx_rows(T);
    float *x = xalloc(sizeof(float) * (size_t)T * K), *b = xalloc(sizeof(float) * N);
    uint16_t *W = xalloc(2 * (size_t)N * K);
    for (size_t i = 0; i < (size_t)T * K; i++) x[i] = (float)(urand() * (i % 97 == 0 ? 40.0 : 1.0));
    for (size_t i = 0; i < (size_t)N * K; i++) {
        const double r = urand();
        W[i] = i % 211 == 0 ? to_half((float)(r * 6e-6)) : i % 509 == 0 ? to_half((float)(r * 60000.0))
                                                                             : to_half((float)(r * 0.2));
    }
    for (int j = 0; j < N; j++) b[j] = (float)urand();
    uint16_t *xh = xalloc(2 * (size_t)Tp * K), *xl = xalloc(2 * (size_t)Tp * K);
    memset(xh, 0, 2 * (size_t)Tp * K);
    memset(xl, 0, 2 * (size_t)Tp * K);
    gemm_amx_split(x, K, K, 0, T, xh, xl);
    uint16_t *bh = xalloc(2 * gemm_amx_b_halves(K, N)), *bl = xalloc(2 * gemm_amx_b_halves(K, N));
    gemm_amx_pack_f16(W, K, 0, N, bh, bl);
    float *y = xalloc(sizeof(float) * (size_t)T * N), *y2 = xalloc(sizeof(float) * (size_t)T * N);
    gemm_amx_mul(xh, xl, T, K, bh, bl, N, with_bias ? b : NULL, y, N);

    double worst = 0.0, mean = 0.0;
    int bad = 0;
    for (int r = 0; r < T; r++)
        for (int j = 0; j < N; j++) {
            double s = with_bias ? b[j] : 0.0, mag = 0.0;
            for (int k = 0; k < K; k++) {
                const double p = (double)x[(size_t)r * K + k] * steno_fp16_to_f32(W[(size_t)j * K + k]);
                s += p;
                mag += fabs(p);
            }
            const double err = fabs(y[(size_t)r * N + j] - s), rel = err / (mag + 1e-300);
            if (err > ldexp(mag, -15) + ldexp(1.0, -120) + (with_bias ? ldexp(fabs(b[j]), -23) : 0.0)) bad++;
            if (rel > worst) worst = rel;
            mean += rel;
        }
    mean /= (double)T * N;
    CHECK(bad == 0, "gemm T=%d K=%d N=%d bias=%d: %d outputs beyond 2^-15 sum|xw| (worst %.3g)", T, K, N, with_bias,
          bad, worst);
    CHECK(mean < ldexp(1.0, -17), "gemm T=%d K=%d N=%d: mean relative error %.3g", T, K, N, mean);

    /* the same bits from two calls over column halves, each packed alone */
    if (N >= 64) {
        const int c1 = (N / 2) & ~31;
        uint16_t *ch = xalloc(2 * gemm_amx_b_halves(K, N)), *cl = xalloc(2 * gemm_amx_b_halves(K, N));
        gemm_amx_pack_f16(W, K, 0, c1, ch, cl);
        gemm_amx_mul(xh, xl, T, K, ch, cl, c1, with_bias ? b : NULL, y2, N);
        gemm_amx_pack_f16(W, K, c1, N - c1, ch, cl);
        gemm_amx_mul(xh, xl, T, K, ch, cl, N - c1, with_bias ? b + c1 : NULL, y2 + c1, N);
        CHECK(memcmp(y, y2, sizeof(float) * (size_t)T * N) == 0, "gemm T=%d K=%d N=%d: column split changes bits",
              T, K, N);
        free(ch);
        free(cl);
    }
    /* and for the first rows alone */
    if (T > 5) {
        gemm_amx_mul(xh, xl, 5, K, bh, bl, N, with_bias ? b : NULL, y2, N);
        CHECK(memcmp(y, y2, sizeof(float) * 5 * (size_t)N) == 0, "gemm T=%d K=%d N=%d: 5-row call changes bits", T,
              K, N);
    }
    printf("gemm T=%4d K=%4d N=%3d bias=%d: worst %.3g, mean %.3g of sum|x*w|\n", T, K, N, with_bias, worst, mean);
    free(x), free(b), free(W), free(xh), free(xl), free(bh), free(bl), free(y), free(y2);
}

static void check_attention(int T, int dh) {
    const int Tp = gemm_amx_rows(T), ldk = Tp + 16;
    float *q = xalloc(sizeof(float) * (size_t)Tp * dh), *kt = xalloc(sizeof(float) * (size_t)dh * ldk);
    float *v = xalloc(sizeof(float) * (size_t)T * dh);
    const double qs = 1.0 / sqrt(sqrt((double)dh)) * 3.0;
    for (size_t i = 0; i < (size_t)Tp * dh; i++) q[i] = (float)(urand() * qs);
    for (size_t i = 0; i < (size_t)dh * ldk; i++) kt[i] = (float)(urand() * qs);
    for (size_t i = 0; i < (size_t)T * dh; i++) v[i] = (float)urand();
    uint16_t *qh = xalloc(2 * (size_t)Tp * dh), *ql = xalloc(2 * (size_t)Tp * dh);
    memset(qh, 0, 2 * (size_t)Tp * dh);
    memset(ql, 0, 2 * (size_t)Tp * dh);
    gemm_amx_split(q, dh, dh, 0, T, qh, ql);
    const size_t hh = att_amx_head_halves(T, dh);
    uint16_t *kh = xalloc(2 * hh), *kl = xalloc(2 * hh), *vh = xalloc(2 * hh), *vl = xalloc(2 * hh);
    att_amx_pack_head(kt, ldk, v, dh, T, dh, kh, kl, vh, vl);
    void *scratch = xalloc(att_amx_scratch_bytes(T));
    float *out = xalloc(sizeof(float) * (size_t)Tp * dh), *o1 = xalloc(sizeof(float) * 32 * (size_t)dh);
    for (int q0 = 0; q0 < T; q0 += 32) {
        const int nq = T - q0 < 32 ? T - q0 : 32;
        att_amx_rows(qh + (size_t)q0 * dh, ql + (size_t)q0 * dh, dh, nq, T, dh, kh, kl, vh, vl, scratch,
                     out + (size_t)q0 * dh, dh);
    }
    double *s = malloc(sizeof(double) * T);
    int bad = 0;
    double worst = 0.0;
    for (int i = 0; i < T; i++) {
        double m = -INFINITY, l = 0.0;
        for (int j = 0; j < T; j++) {
            double d = 0.0;
            for (int c = 0; c < dh; c++) d += (double)q[(size_t)i * dh + c] * kt[(size_t)c * ldk + j];
            s[j] = d;
            if (d > m) m = d;
        }
        for (int j = 0; j < T; j++) l += (s[j] = exp(s[j] - m));
        for (int c = 0; c < dh; c++) {
            double o = 0.0;
            for (int j = 0; j < T; j++) o += s[j] * v[(size_t)j * dh + c];
            const double err = fabs(out[(size_t)i * dh + c] - o / l);
            if (err > ldexp(1.0, -14)) bad++;
            if (err > worst) worst = err;
        }
    }
    CHECK(bad == 0, "attention T=%d dh=%d: %d outputs beyond 2^-14 (worst %.3g)", T, dh, bad, worst);
    /* a query alone, and in a block of 7 starting at it, gives the bits of its 32-query block */
    const int probes[] = {0, T / 2, T - 1};
    for (int p = 0; p < 3; p++) {
        const int i = probes[p], n7 = T - i < 7 ? T - i : 7;
        /* qh rows past T are zero and readable (Tp rows), so a block may start anywhere below T */
        if (i + 32 > Tp) continue;
        att_amx_rows(qh + (size_t)i * dh, ql + (size_t)i * dh, dh, 1, T, dh, kh, kl, vh, vl, scratch, o1, dh);
        CHECK(memcmp(o1, out + (size_t)i * dh, sizeof(float) * dh) == 0, "attention T=%d: query %d alone differs", T,
              i);
        att_amx_rows(qh + (size_t)i * dh, ql + (size_t)i * dh, dh, n7, T, dh, kh, kl, vh, vl, scratch, o1, dh);
        CHECK(memcmp(o1, out + (size_t)i * dh, sizeof(float) * dh * n7) == 0,
              "attention T=%d: a 7-query block at %d differs", T, i);
    }
    printf("attention T=%4d dh=%3d: worst abs error %.3g (values in [-1, 1])\n", T, dh, worst);
    free(s), free(q), free(kt), free(v), free(qh), free(ql), free(kh), free(kl), free(vh), free(vl);
    free(scratch), free(out), free(o1);
}

int main(void) {
    /* the switch, whatever the environment the test was started with (restored after) */
    const char *env0 = getenv("STENO_NO_AMX");
    char *saved = env0 ? strdup(env0) : NULL;
    unsetenv("STENO_NO_AMX");
    const int on = gemm_amx_available();
    setenv("STENO_NO_AMX", "1", 1);
    CHECK(!gemm_amx_available(), "STENO_NO_AMX=1 left AMX on");
    unsetenv("STENO_NO_AMX");
    CHECK(gemm_amx_available() == on, "the answer changed after STENO_NO_AMX was unset");
    if (saved) setenv("STENO_NO_AMX", saved, 1);
    free(saved);
    if (!on) {
        printf("test_amx: AMX-BF16 is off here (no AMX-BF16 tiles on this CPU or kernel, or STENO_NO_AVX512 / "
               "STENO_NO_SIMD set): only the switch was checked (the fast path keeps sgemm and the float32 "
               "attention)\n");
    } else {
        const int shapes[][3] = {{1, 64, 32}, {31, 384, 96}, {33, 384, 256}, {1500, 384, 256}, {200, 1536, 384},
                                 {64, 64, 64}};
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int bias = 0; bias < 2; bias++) check_gemm(shapes[i][0], shapes[i][1], shapes[i][2], bias);
        const int att[][2] = {{1, 64}, {33, 64}, {200, 128}, {1500, 64}};
        for (size_t i = 0; i < sizeof att / sizeof att[0]; i++) check_attention(att[i][0], att[i][1]);
    }
    printf("test_amx: %d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
