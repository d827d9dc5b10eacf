/* test_llm_kernels.c — the ggml-type kernels (kernels/quant/quant.h) against plain references.
 *
 * 1. For every weight type (f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q6_K): random
 *    blocks, a random activation converted to the type's vec_dot_type; the dot kernel must equal
 *    the double-precision dot of the dequantized operands (relative 3e-3 of Σ|terms|, the f16
 *    rounding of q8_1's sum; layout bugs give O(1) errors). Scalar and AVX2 kernels must agree to
 *    float rounding.
 * 2. Activation quantizers: q8_0/q8_1/q8_K round trips within half a step; q8_K bsums.
 * 3. f32 → f16 conversion equals F16C's vcvtps2ph for a million values including subnormals,
 *    infinities and NaN (when the CPU has F16C); bf16 rounding.
 * 4. matmul: Y does not depend on the number of threads or on how many rows are evaluated at once.
 * 5. steno_rmsnorm_ggml_rows equals one steno_rmsnorm_ggml call per row bit for bit (rows 1..11,
 *    in place and not, n 64 and 576, values over many magnitudes).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "core/threadpool.h"
#include "kernels/gemm/matmul.h"
#include "kernels/ops/ops.h"
#include "kernels/quant/quant.h"
#include "kernels/quant/blocks.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include "rng.h"

static int g_fail = 0;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            g_fail++;                                                                              \
        }                                                                                          \
    } while (0)

static uint64_t g_s = 88172645463325252ull;
static uint32_t rnd32(void) { return (uint32_t)(rng_xorshift64(&g_s) >> 16); }
static float frand(void) { return rng_f24_pm1(rnd32()); }

/* Random bytes for n elements of type t, with sane scales at the right offsets. */
static void random_blocks(int t, uint8_t *d, int n) {
    const steno_type_traits *tr = steno_type_get(t);
    size_t bytes = (size_t)(n / tr->block_size) * tr->type_size;
    if (t == STENO_T_F32) {
        for (int i = 0; i < n; i++) {
            float v = frand();
            memcpy(d + 4 * i, &v, 4);
        }
        return;
    }
    if (t == STENO_T_F16 || t == STENO_T_BF16) {
        for (int i = 0; i < n; i++) {
            uint16_t h = t == STENO_T_F16 ? steno_f32_to_f16(frand()) : steno_f32_to_bf16(frand());
            memcpy(d + 2 * i, &h, 2);
        }
        return;
    }
    for (size_t i = 0; i < bytes; i++) d[i] = (uint8_t)rnd32();
    for (size_t off = 0; off < bytes; off += tr->type_size) {
        uint16_t a = steno_f32_to_f16(0.001f + 0.02f * (float)(rnd32() % 100) / 100.0f);
        uint16_t b = steno_f32_to_f16(0.001f + 0.01f * (float)(rnd32() % 100) / 100.0f);
        switch (t) {
        case STENO_T_Q4_0: case STENO_T_Q5_0: case STENO_T_Q8_0: memcpy(d + off, &a, 2); break;
        case STENO_T_Q4_1: case STENO_T_Q5_1: memcpy(d + off, &a, 2); memcpy(d + off + 2, &b, 2); break;
        case STENO_T_Q4_K: memcpy(d + off, &a, 2); memcpy(d + off + 2, &b, 2); break;
        case STENO_T_Q6_K: memcpy(d + off + 208, &a, 2); break;
        }
    }
}

/* Dequantizes an activation row of type t (q8_0, q8_1, q8_K or the float types). */
static void act_to_float(int t, const uint8_t *y, float *out, int n) {
    if (t == STENO_T_Q8_0) {
        const block_q8_0 *b = (const block_q8_0 *)y;
        for (int i = 0; i < n; i++) out[i] = b[i / 32].qs[i % 32] * steno_fp16_to_f32(b[i / 32].d);
    } else if (t == STENO_T_Q8_1) {
        const block_q8_1 *b = (const block_q8_1 *)y;
        for (int i = 0; i < n; i++) out[i] = b[i / 32].qs[i % 32] * steno_fp16_to_f32(b[i / 32].d);
    } else if (t == STENO_T_Q8_K) {
        const block_q8_K *b = (const block_q8_K *)y;
        for (int i = 0; i < n; i++) out[i] = b[i / 256].qs[i % 256] * b[i / 256].d;
    } else {
        steno_type_get(t)->to_float(y, out, n);
    }
}

typedef float (*dotfn)(int, const void *, const void *);

static void test_dots(void) {
    const int types[] = {STENO_T_F32, STENO_T_F16, STENO_T_BF16, STENO_T_Q4_0, STENO_T_Q4_1,
                         STENO_T_Q5_0, STENO_T_Q5_1, STENO_T_Q8_0, STENO_T_Q4_K, STENO_T_Q6_K};
    const int n = 1024;
    uint8_t *x = malloc(8 * n), *y = malloc(8 * n);
    float *xf = malloc(4 * n), *yf = malloc(4 * n), *act = malloc(4 * n);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        int t = types[k];
        const steno_type_traits *tr = steno_type_get(t);
        CHECK(tr && tr->vec_dot && tr->to_float, "type %d missing", t);
        if (!tr) continue;
        double worst = 0;
        for (int rep = 0; rep < 50; rep++) {
            random_blocks(t, x, n);
            for (int i = 0; i < n; i++) act[i] = frand() * (rep % 3 == 0 ? 10.0f : 1.0f);
            if (rep == 7) memset(act, 0, 4 * (size_t)n); /* all-zero blocks */
            steno_type_get(tr->vec_dot_type)->from_float(act, y, n);
            tr->to_float(x, xf, n);
            act_to_float(tr->vec_dot_type, y, yf, n);
            double ref = 0, mag = 0;
            for (int i = 0; i < n; i++) {
                ref += (double)xf[i] * yf[i];
                mag += fabs((double)xf[i] * yf[i]);
            }
            float got = tr->vec_dot(n, x, y);
            double err = fabs(got - ref) / (mag > 0 ? mag : 1);
            if (err > worst) worst = err;
            CHECK(err <= 3e-3, "%s: dot %.6f vs reference %.6f (rel %.2e)", tr->name, got, ref, err);
        }
        printf("dot %-5s (activation %s, %s): worst relative error %.2e\n", tr->name,
               steno_type_get(tr->vec_dot_type)->name, steno_kernels_isa(), worst);
    }
#ifdef STENO_HAVE_X86
    if (strcmp(steno_kernels_isa(), "avx2") == 0) {
        struct {
            int t;
            dotfn s, v;
        } pairs[] = {{STENO_T_F16, steno_dot_f16_scalar, steno_dot_f16_avx2},
                     {STENO_T_Q4_0, steno_dot_q4_0_scalar, steno_dot_q4_0_avx2},
                     {STENO_T_Q4_1, steno_dot_q4_1_scalar, steno_dot_q4_1_avx2},
                     {STENO_T_Q5_0, steno_dot_q5_0_scalar, steno_dot_q5_0_avx2},
                     {STENO_T_Q5_1, steno_dot_q5_1_scalar, steno_dot_q5_1_avx2},
                     {STENO_T_Q8_0, steno_dot_q8_0_scalar, steno_dot_q8_0_avx2},
                     {STENO_T_Q4_K, steno_dot_q4_K_scalar, steno_dot_q4_K_avx2},
                     {STENO_T_Q6_K, steno_dot_q6_K_scalar, steno_dot_q6_K_avx2}};
        for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
            const steno_type_traits *tr = steno_type_get(pairs[k].t);
            for (int rep = 0; rep < 100; rep++) {
                random_blocks(pairs[k].t, x, n);
                for (int i = 0; i < n; i++) act[i] = frand();
                steno_type_get(tr->vec_dot_type)->from_float(act, y, n);
                float a = pairs[k].s(n, x, y), b = pairs[k].v(n, x, y);
                CHECK(fabsf(a - b) <= 1e-4f * (1 + fabsf(a)), "%s: scalar %.7f vs avx2 %.7f", tr->name, a, b);
            }
        }
        printf("avx2 kernels agree with the scalar ones\n");
        /* the four-row kernels are bit-identical to four single-row calls */
        const int t4[] = {STENO_T_Q4_0, STENO_T_Q4_1, STENO_T_Q5_0, STENO_T_Q8_0, STENO_T_Q4_K, STENO_T_Q6_K};
        uint8_t *y4 = malloc(4 * 8 * (size_t)n);
        for (size_t k = 0; k < sizeof t4 / sizeof t4[0]; k++) {
            const steno_type_traits *tr = steno_type_get(t4[k]);
            CHECK(tr->vec_dot4 != NULL, "%s has no 4-row kernel", tr->name);
            if (!tr->vec_dot4) continue;
            size_t ys = steno_row_size(tr->vec_dot_type, n);
            for (int rep = 0; rep < 50; rep++) {
                random_blocks(t4[k], x, n);
                for (int c = 0; c < 4; c++) {
                    for (int i = 0; i < n; i++) act[i] = frand() * (float)(c + 1);
                    steno_type_get(tr->vec_dot_type)->from_float(act, y4 + c * ys, n);
                }
                float o[4];
                tr->vec_dot4(n, x, y4, ys, o);
                for (int c = 0; c < 4; c++) {
                    float one = tr->vec_dot(n, x, y4 + c * ys);
                    CHECK(memcmp(&one, &o[c], 4) == 0, "%s: 4-row kernel column %d: %.9g vs %.9g", tr->name, c, o[c],
                          one);
                }
            }
        }
        free(y4);
        printf("4-row kernels are bit-identical to the single-row ones\n");
    }
#endif
    free(x);
    free(y);
    free(xf);
    free(yf);
    free(act);
}

static void test_quantizers(void) {
    const int n = 512;
    float x[512], back[512];
    uint8_t q[2048];
    for (int i = 0; i < n; i++) x[i] = frand() * 3.0f;
    const int ts[] = {STENO_T_Q8_0, STENO_T_Q8_1, STENO_T_Q8_K};
    for (int k = 0; k < 3; k++) {
        const steno_type_traits *tr = steno_type_get(ts[k]);
        tr->from_float(x, q, n);
        act_to_float(ts[k], q, back, n);
        int bs = tr->block_size;
        for (int b = 0; b < n / bs; b++) {
            float amax = 0;
            for (int i = 0; i < bs; i++) amax = fmaxf(amax, fabsf(x[b * bs + i]));
            float step = amax / 127.0f;
            for (int i = 0; i < bs; i++)
                CHECK(fabsf(back[b * bs + i] - x[b * bs + i]) <= step * 0.5f + 1e-3f * step + amax * 1e-3f,
                      "%s: element %d: %g -> %g", tr->name, b * bs + i, x[b * bs + i], back[b * bs + i]);
        }
    }
    const block_q8_K *bk = (const block_q8_K *)q;
    steno_type_get(STENO_T_Q8_K)->from_float(x, q, n);
    for (int j = 0; j < 16; j++) {
        int s = 0;
        for (int i = 0; i < 16; i++) s += bk[0].qs[j * 16 + i];
        CHECK(s == bk[0].bsums[j], "q8_K bsums[%d]", j);
    }
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) static uint16_t hw_f16(float f) { return (uint16_t)_cvtss_sh(f, 0); }
#endif

static void test_fp16(void) {
#if defined(__x86_64__)
    if (strcmp(steno_kernels_isa(), "avx2") == 0) { /* implies F16C */
        int bad = 0;
        for (uint32_t i = 0; i < 1000000; i++) {
            uint32_t bits = i < 500000 ? rnd32() : (i * 2654435761u);
            float f;
            memcpy(&f, &bits, 4);
            uint16_t a = steno_f32_to_f16(f), b = hw_f16(f);
            if (isnan(f)) {
                bad += !((a & 0x7c00) == 0x7c00 && (a & 0x3ff));
                continue;
            }
            if (a != b && bad++ < 5) fprintf(stderr, "f16(%a): %04x vs F16C %04x\n", f, a, b);
        }
        CHECK(bad == 0, "%d f32->f16 conversions differ from F16C", bad);
    }
#endif
    CHECK(steno_f32_to_f16(65520.0f) == 0x7c00, "overflow to inf");
    CHECK(steno_f32_to_f16(-0.0f) == 0x8000, "negative zero");
    CHECK(steno_fp16_to_f32(steno_f32_to_f16(1.0f / 3.0f)) == 0.333251953125f, "1/3");
    CHECK(steno_f32_to_bf16(1.00390625f) == 0x3f80, "bf16 round to even");
    /* ggml's table GELU */
    CHECK(steno_gelu_ggml(-11.0f) == 0.0f && steno_gelu_ggml(11.0f) == 11.0f, "gelu clamps");
    float g = steno_gelu_ggml(1.0f);
    CHECK(fabsf(g - 0.841192f) < 1e-3f, "gelu(1) = %g", g);
}

typedef struct {
    const steno_mat *w;
} dummy;

static void test_matmul(void) {
    const int n_in = 256, n_out = 77, T = 5;
    const int ts[] = {STENO_T_Q4_K, STENO_T_Q8_0, STENO_T_F32};
    for (int k = 0; k < 3; k++) {
        size_t rb = steno_row_size(ts[k], n_in);
        uint8_t *w = malloc(rb * n_out);
        random_blocks(ts[k], w, n_in * n_out);
        steno_mat m = {ts[k], n_in, n_out, rb, w, NULL};
        float *x = malloc(sizeof(float) * n_in * T), *y1 = malloc(sizeof(float) * n_out * T),
              *y2 = malloc(sizeof(float) * n_out * T);
        for (int i = 0; i < n_in * T; i++) x[i] = frand();
        steno_work wk = {0};
        CHECK(steno_matmul(NULL, &wk, &m, x, T, y1, n_out) == 0, "matmul");
        for (int nt = 2; nt <= 3; nt++) {
            steno_pool *p;
            CHECK(steno_pool_create(nt, &p) == STENO_OK, "pool");
            CHECK(steno_matmul(p, &wk, &m, x, T, y2, n_out) == 0, "matmul");
            CHECK(memcmp(y1, y2, sizeof(float) * n_out * T) == 0, "%s: %d threads differ", steno_type_name(ts[k]), nt);
            for (int t = 0; t < T; t++) {
                CHECK(steno_matmul(p, &wk, &m, x + t * n_in, 1, y2, n_out) == 0, "matmul");
                CHECK(memcmp(y1 + t * n_out, y2, sizeof(float) * n_out) == 0, "%s: row %d alone differs",
                      steno_type_name(ts[k]), t);
            }
            steno_pool_free(p);
        }
        steno_work_free(&wk);
        free(w);
        free(x);
        free(y1);
        free(y2);
    }
}

static void test_rmsnorm_rows(void) {
    enum { RMAX = 11, NMAX = 576 };
    static float x[RMAX * NMAX], w[NMAX], ref[RMAX * NMAX], y[RMAX * NMAX];
    static const int ns[] = {64, 576};
    for (int a = 0; a < 2; a++) {
        const int n = ns[a];
        for (int i = 0; i < RMAX * n; i++) x[i] = frand() * ldexpf(1.0f, (int)(rnd32() % 24) - 12);
        for (int i = 0; i < n; i++) w[i] = 1.0f + frand();
        for (int rows = 1; rows <= RMAX; rows++) {
            for (int r = 0; r < rows; r++) steno_rmsnorm_ggml(ref + r * n, x + r * n, w, n, 1e-6f);
            steno_rmsnorm_ggml_rows(y, x, w, rows, n, 1e-6f);
            CHECK(memcmp(y, ref, sizeof(float) * rows * n) == 0, "rmsnorm rows=%d n=%d differs", rows, n);
            memcpy(y, x, sizeof(float) * rows * n);
            steno_rmsnorm_ggml_rows(y, y, w, rows, n, 1e-6f);
            CHECK(memcmp(y, ref, sizeof(float) * rows * n) == 0, "rmsnorm in place rows=%d n=%d differs", rows, n);
        }
    }
}

int main(void) {
    test_rmsnorm_rows();
    test_dots();
    test_quantizers();
    test_fp16();
    test_matmul();
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("all passed\n");
    return 0;
}
