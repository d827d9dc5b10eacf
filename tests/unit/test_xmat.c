/* test_xmat.c — the fast path's x8 matrices (kernels/gemm/matmul_x8.h).
 *
 * 1. steno_matmul_x equals the scalar reference steno_xmat_dot_ref BIT FOR BIT (memcmp) for q4_0,
 *    q4_1, q5_0, q8_0, q4_K and q6_K; n_in 576 (K types: 768) and 1536, n_out 45 (a padded last group of 5 rows), 40 (five groups:
 *    the two-group kernels' last unit a lone group) and 8; T = 1..16,
 *    23 and 40 activation rows; 1 and 2 threads; under every kernel set this build and CPU have
 *    (scalar, AVX2, AVX-VNNI, AVX512-VNNI with its two-group zmm kernels and, STENO_NO_AVX512=1, without;
 *    the others are named as skipped). So results do not depend
 *    on T, the grouping of activation rows, the thread count or the CPU.
 * 2. Against llama.cpp's arithmetic (steno_matmul, the faithful path): the same products up to
 *    float rounding — every |fast − ggml| <= 1e-4 × the rms of the outputs (the two differ only
 *    in where the block sums are rounded). q4_K and q6_K, whose activations are q8_1 / q8_0 here and q8_K there,
 *    must instead be at least as close as llama.cpp's to the exact product (rms error).
 * Random weights (fixed seed; scales include 0 and tiny values) and activations quantized from
 * random floats. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bigmem.h"
#include "core/threadpool.h"
#include "kernels/gemm/matmul.h"
#include "kernels/quant/quant.h"
#include "kernels/quant/blocks.h"
#include "kernels/gemm/matmul_x8.h"
#include "test_util.h"
#include "rng.h"

static uint64_t g_s = 0x9E3779B97F4A7C15ull;
static uint32_t rnd32(void) { return (uint32_t)(rng_xorshift64(&g_s) >> 32); }
static float frand(void) { return rng_f24_pm1(rnd32()); }

/* q4_0/q4_1/q8_0 rows with random codes and scales in [2^-10, 2^-4] (sometimes 0) */
static void random_weights(int t, uint8_t *w, size_t bytes) {
    const steno_type_traits *tr = steno_type_get(t);
    for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)rnd32();
    for (size_t b = 0; b < bytes; b += tr->type_size) {
        uint16_t h = rnd32() % 17 == 0 ? 0 : (uint16_t)(0x1400 + rnd32() % 0x1800);
        memcpy(w + b + (t == STENO_T_Q6_K ? 208 : 0), &h, 2); /* q6_K: d last */
        if (t == STENO_T_Q4_1 || t == STENO_T_Q4_K) { /* q4_K: dmin */
            uint16_t m = (uint16_t)(0x9400 + rnd32() % 0x1800); /* negative mins, as real q4_1 files */
            memcpy(w + b + 2, &m, 2);
        }
    }
}

static const int k_types[] = {STENO_T_Q4_0, STENO_T_Q4_1, STENO_T_Q8_0, STENO_T_Q5_0, STENO_T_Q4_K, STENO_T_Q6_K};
enum { N_TYPES = sizeof k_types / sizeof k_types[0] };
/* the last run: AVX512-VNNI with STENO_NO_AVX512=1, its ymm kernels alone (without the
 * two-group zmm kernels of matmul_x8_x16.h, which the run before it takes) */
static const char *const k_isas[] = {"scalar", "avx2", "avxvnni", "avx512vnni", "avx512vnni"};
static const char *const k_names[] = {"scalar", "avx2", "avxvnni", "avx512vnni (zmm pairs)", "avx512vnni (ymm only)"};

int main(void) {
    steno_pool *p2 = NULL;
    CHECK(steno_pool_create(2, &p2) == STENO_OK, "pool");
    enum { TMAX = 40 };
    static const int Ts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 23, TMAX};
    static const int n_ins[] = {576, 1536};
    static const int n_outs[] = {45, 40, 8};
    long outputs = 0;
    for (int ii = 0; ii < 5; ii++) {
        if (ii == 4) setenv("STENO_NO_AVX512", "1", 1);
        if (steno_xmat_set_isa(k_isas[ii]) != 0) {
            printf("skipped: %s kernels (this CPU or build lacks them)\n", k_names[ii]);
            continue;
        }
        const int fails0 = g_failures;
        for (int k = 0; k < N_TYPES; k++)
            for (int a = 0; a < 2; a++)
                for (int o = 0; o < 2; o++) {
                    const int t = k_types[k], n_out = n_outs[o];
                    /* K types: whole 256-element super-blocks */
                    const int n_in = (t == STENO_T_Q4_K || t == STENO_T_Q6_K) && n_ins[a] % 256 ? 768 : n_ins[a];
                    const steno_type_traits *ta = steno_type_get(steno_xmat_act_type(t));
                    const size_t rb = steno_row_size(t, n_in), xq_row = steno_row_size(steno_xmat_act_type(t), n_in);
                    uint8_t *w = malloc(rb * n_out), *xq = malloc(xq_row * TMAX);
                    float *x = malloc(sizeof(float) * n_in * TMAX), *ref = malloc(sizeof(float) * n_out * TMAX),
                          *y = malloc(sizeof(float) * n_out * TMAX), *gg = malloc(sizeof(float) * n_out * TMAX);
                    random_weights(t, w, rb * n_out);
                    for (int i = 0; i < n_in * TMAX; i++) x[i] = frand() * (i % 97 == 0 ? 20.0f : 1.0f);
                    for (int tt = 0; tt < TMAX; tt++) {
                        ta->from_float(x + tt * n_in, xq + tt * xq_row, n_in);
                        for (int r = 0; r < n_out; r++)
                            ref[tt * n_out + r] = steno_xmat_dot_ref(t, n_in, w + r * rb, xq + tt * xq_row);
                    }
                    steno_mat m = {t, n_in, n_out, rb, w, NULL};
                    steno_xmat xm;
                    CHECK(steno_xmat_supported(&m) && steno_xmat_pack(&m, &xm) == 0, "pack %s", steno_type_name(t));
                    { /* into caller memory (the fast path's one huge-page block): the same bytes */
                        const size_t xb = steno_xmat_bytes(&m);
                        uint8_t *dst = steno_bigmem_alloc(xb);
                        steno_xmat xi;
                        CHECK(dst && xb == (size_t)xm.n_groups * (size_t)(n_in / 32) * xm.block_bytes &&
                                  steno_xmat_pack_into(&m, &xi, dst) == 0 && !xi.owned && xm.owned && xi.data == dst &&
                                  memcmp(xi.data, xm.data, xb) == 0,
                              "pack_into %s differs from pack", steno_type_name(t));
                        steno_xmat_free(&xi); /* leaves dst alone */
                        steno_bigmem_free(dst);
                    }
                    steno_work wk = {0};
                    for (size_t ti = 0; ti < sizeof Ts / sizeof Ts[0]; ti++)
                        for (int th = 1; th <= 2; th++) {
                            const int T = Ts[ti];
                            memset(y, 0xff, sizeof(float) * n_out * TMAX);
                            CHECK(steno_matmul_x(th == 2 ? p2 : NULL, &wk, &xm, x, T, y, n_out) == 0, "matmul_x");
                            for (int q = 0; q < T * n_out; q++)
                                if (memcmp(&y[q], &ref[q], 4) != 0) {
                                    CHECK(0, "%s %s n_in=%d n_out=%d T=%d threads=%d row %d col %d: %.9g != ref %.9g",
                                          k_names[ii], steno_type_name(t), n_in, n_out, T, th, q % n_out, q / n_out, y[q],
                                          ref[q]);
                                    break;
                                }
                            outputs += (long)T * n_out;
                        }
                    /* close to llama.cpp's arithmetic */
                    CHECK(steno_matmul(NULL, &wk, &m, x, TMAX, gg, n_out) == 0, "matmul");
                    double worst = 0, ss = 0;
                    for (int q = 0; q < TMAX * n_out; q++) ss += (double)gg[q] * gg[q];
                    const double rms = sqrt(ss / (TMAX * n_out)) + 1e-30;
                    for (int q = 0; q < TMAX * n_out; q++) {
                        const double dlt = fabs((double)gg[q] - ref[q]) / rms;
                        if (dlt > worst) worst = dlt;
                    }
                    if (t != STENO_T_Q4_K && t != STENO_T_Q6_K) {
                        CHECK(worst < 1e-4, "%s %s: fast vs ggml: largest difference %.3g of the outputs' rms", k_names[ii],
                              steno_type_name(t), worst);
                    } else {
                        /* K types: llama.cpp quantizes the activations to q8_K (one scale per 256), the
                         * fast path to q8_1 (one per 32), so the two differ by more than rounding; the
                         * fast path must be at least as close to the exact product of the dequantized
                         * weights and the float activations */
                        float *wf = malloc(sizeof(float) * n_in);
                        double e_fast = 0, e_gg = 0;
                        for (int r = 0; r < n_out; r++) {
                            steno_type_get(t)->to_float(w + r * rb, wf, n_in);
                            for (int tt = 0; tt < TMAX; tt++) {
                                double ex = 0;
                                for (int i = 0; i < n_in; i++) ex += (double)wf[i] * x[tt * n_in + i];
                                e_fast += (ref[tt * n_out + r] - ex) * (ref[tt * n_out + r] - ex);
                                e_gg += (gg[tt * n_out + r] - ex) * (gg[tt * n_out + r] - ex);
                            }
                        }
                        free(wf);
                        e_fast = sqrt(e_fast / (TMAX * n_out)) / rms, e_gg = sqrt(e_gg / (TMAX * n_out)) / rms;
                        if (ii == 0)
                            printf("%s n_in=%d n_out=%d: rms error vs the exact product: fast %.3g, ggml %.3g (of the outputs' rms)\n",
                                   steno_type_name(t), n_in, n_out, e_fast, e_gg);
                        /* and small: a wrong scale or code mapping would be of the order of 1 */
                        CHECK(e_fast <= e_gg && e_fast < 0.02, "%s %s: fast's error %.3g (ggml's %.3g)", k_names[ii],
                              steno_type_name(t), e_fast, e_gg);
                    }
                    steno_work_free(&wk);
                    steno_xmat_free(&xm);
                    free(w), free(xq), free(x), free(ref), free(y), free(gg);
                }
        printf("%s: steno_matmul_x %s the scalar reference\n", k_names[ii],
               g_failures == fails0 ? "bit-identical to" : "DIFFERS from");
    }
    steno_pool_free(p2);
    printf("%ld outputs checked\n", outputs);
    return test_summary("test_xmat");
}
