/* The AVX-512 float16 GEMVs (vec_avx512.c) and attention (streaming_avx512.c) against vec_avx2's,
 * bit for bit (GEMVs, float32 and float16 attention, GELU): single input, listed
 * rows, and batches of 1..20, 40, 64, 65 and 70 inputs (groups of 8 down to 1; the chunking at 64
 * inputs, or fewer when 64 rows of n floats exceed the kernel's buffer, e.g. 8 at n 4096), with inputs
 * that cannot take the scaled form (|x| >= 2^15, NaN, n not a multiple of 32) mixed in, and
 * biases on and off. Skipped, and said so, on a CPU without AVX512F/BW/DQ/VL. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "kernels/gemv/vec.h"
#include "kernels/gemv/vec_impl.h"
#include "test_util.h"
#include "rng.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { return (float)rng_unit53(rng_xorshift64(&g_rng)) * 2.0f - 1.0f; }

int main(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (!steno_cpu_has_avx512_skx()) {
        printf("test_vec_avx512: skipped: this CPU has no AVX512F/BW/DQ/VL (the kernels are compiled, not run)\n");
        return 0;
    }
    const int ns[] = {32, 384, 512, 1536, 388, 4096, 4128};
    const int R = 37;
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
        const int n = ns[c];
        uint16_t *W = malloc((size_t)R * n * 2);
        enum { NXMAX = 70 };
        float *b = malloc(R * 4), *X = malloc((size_t)NXMAX * n * 4);
        float *Ya = calloc((size_t)NXMAX * R, 4), *Yz = calloc((size_t)NXMAX * R, 4);
        for (size_t i = 0; i < (size_t)R * n; i++) {
            float v = frand();
            if (i % 97 == 0) v *= 1e-6f; /* subnormal halves */
            vec_f32_to_f16(&v, &W[i], 1);
        }
        for (int r = 0; r < R; r++) b[r] = frand();
        for (size_t i = 0; i < (size_t)NXMAX * n; i++) X[i] = frand() * 3.0f;
        X[(size_t)5 * n + 7] = 40000.0f; /* input 5 cannot take the scaled form */
        X[(size_t)13 * n + 1] = NAN;     /* nor can input 13 */
        int ok = 1;
        X[(size_t)66 * n + 2] = -50000.0f; /* and one past the chunk of 64 */
        const int nxs[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 40, 64, 65, 70};
        for (size_t q = 0; q < sizeof nxs / sizeof nxs[0]; q++) {
            const int nx = nxs[q];
            for (int bias = 0; bias < 2; bias++) {
                memset(Ya, 0, (size_t)NXMAX * R * 4);
                memset(Yz, 0, (size_t)NXMAX * R * 4);
                float *ya_rows[NXMAX], *yz_rows[NXMAX];
                for (int i = 0; i < nx; i++) ya_rows[i] = Ya + (size_t)i * R, yz_rows[i] = Yz + (size_t)i * R;
                vec_avx2.gemv_f16_batch(W, bias ? b : NULL, X, n, nx, n, 1, R, ya_rows, 5);
                vec_avx512.gemv_f16_batch(W, bias ? b : NULL, X, n, nx, n, 1, R, yz_rows, 5);
                if (memcmp(Ya, Yz, (size_t)NXMAX * R * 4)) ok = 0;
            }
        }
        CHECK(ok, "n %d: batched AVX-512 outputs differ from AVX2", n);
        for (int i = 0; i < 20; i++) {
            const float *x = X + (size_t)i * n;
            float ya[64], yz[64];
            vec_avx2.gemv_f16(W, b, x, n, 0, R, ya);
            vec_avx512.gemv_f16(W, b, x, n, 0, R, yz);
            CHECK(memcmp(ya, yz, R * 4) == 0, "n %d input %d: gemv differs", n, i);
            const int rows[] = {36, 0, 17, 18, 3};
            for (int cnt = 1; cnt <= 5; cnt++) {
                memset(ya, 0, sizeof ya);
                memset(yz, 0, sizeof yz);
                vec_avx2.gemv_f16_rows(W, x, n, rows, cnt, ya);
                vec_avx512.gemv_f16_rows(W, x, n, rows, cnt, yz);
                CHECK(memcmp(ya, yz, R * 4) == 0, "n %d input %d count %d: listed rows differ", n, i, cnt);
            }
        }
        /* listed rows for several inputs at once, with a mask of the inputs each row serves: each
         * value that of the one-input listed-rows kernel (inputs 5 and 13 include the special ones) */
        {
            const int rows[] = {36, 0, 17, 18, 3, 30, 31};
            const uint16_t need[] = {0x3ff, 0x001, 0x2a0, 0x3fe, 0x000, 0x100, 0x3c3};
            float *Yr = calloc((size_t)10 * R, 4), *Ym = calloc((size_t)10 * R, 4);
            float *ym[10];
            for (int i = 0; i < 10; i++) ym[i] = Ym + (size_t)i * R;
            for (int nx = 1; nx <= 10; nx++)
                for (int masked = 0; masked < 2; masked++) {
                    memset(Yr, 0, (size_t)10 * R * 4);
                    memset(Ym, 0, (size_t)10 * R * 4);
                    for (int k = 0; k < 7; k++)
                        for (int i = 0; i < nx; i++)
                            if (!masked || need[k] >> i & 1)
                                vec_avx2.gemv_f16_rows(W, X + (size_t)(i + 4) * n, n, rows + k, 1, Yr + (size_t)i * R);
                    vec_avx512.gemv_f16_rows_multi(W, X + (size_t)4 * n, n, nx, n, rows, masked ? need : NULL, 7, ym);
                    CHECK(memcmp(Yr, Ym, (size_t)10 * R * 4) == 0, "n %d: %d inputs%s: listed rows (multi) differ", n,
                          nx, masked ? " masked" : "");
                }
            free(Yr), free(Ym);
        }
        printf("n %4d: AVX-512 gemv, listed rows (one input and several) and batches of 1..20, 40, 64, 65, 70 "
               "bit-identical to AVX2\n", n);
        free(W), free(b), free(X), free(Ya), free(Yz);
    }
    /* attention: encoder-like (1500 keys, 30-query chunks), causal decoder rows, odd key counts,
     * dh 64, 48 (one 16-column tail), 128 and 40 (the AVX2 kernel's own); not causal, up to
     * VEC_ATT_ROW_MAX keys it is the whole-row path (whole_rows.c), past it the streaming one */
    const int dhs[] = {64, 48, 128, 40};
    const int nks[] = {1, 17, 64, 100, 1500, VEC_ATT_ROW_MAX, VEC_ATT_ROW_MAX + 1};
    const int nqs[] = {1, 5, 31, 100};
    for (size_t c = 0; c < sizeof dhs / sizeof dhs[0]; c++) {
        const int dh = dhs[c];
        int ok = 1, cases = 0;
        for (size_t a = 0; a < sizeof nks / sizeof nks[0]; a++) {
            const int nk = nks[a], ldk = ((nk + 15) & ~15) + 16, ldv = dh + 8;
            float *Kt = malloc((size_t)dh * ldk * 4), *V = malloc((size_t)nk * ldv * 4);
            for (size_t i = 0; i < (size_t)dh * ldk; i++) Kt[i] = frand() * 2.0f;
            for (size_t i = 0; i < (size_t)nk * ldv; i++) V[i] = frand();
            for (size_t bq = 0; bq < sizeof nqs / sizeof nqs[0]; bq++) {
                const int nq = nqs[bq], qs = dh + 4, os = dh + 12;
                float *Q = malloc((size_t)nq * qs * 4), *Oa = malloc((size_t)nq * os * 4), *Oz = malloc((size_t)nq * os * 4);
                for (size_t i = 0; i < (size_t)nq * qs; i++) Q[i] = frand() * 0.5f;
                for (int causal = 0; causal < 2; causal++) {
                    const int pos0 = causal ? (nk > nq ? nk - nq : 0) : 0;
                    memset(Oa, 0, (size_t)nq * os * 4);
                    memset(Oz, 0, (size_t)nq * os * 4);
                    vec_avx2.attention(Q, qs, Kt, ldk, V, ldv, nk, dh, nq, causal, pos0, Oa, os);
                    vec_avx512.attention(Q, qs, Kt, ldk, V, ldv, nk, dh, nq, causal, pos0, Oz, os);
                    if (memcmp(Oa, Oz, (size_t)nq * os * 4)) ok = 0;
                    cases++;
                }
                free(Q), free(Oa), free(Oz);
            }
            free(Kt), free(V);
        }
        CHECK(ok, "dh %d: AVX-512 attention differs from AVX2", dh);
        printf("dh %3d: AVX-512 attention bit-identical to AVX2 in %d cases (1..1537 keys, 1..100 queries, causal)\n",
               dh, cases);
    }
    /* attention over float16 keys/values (the decoder step's cross-attention): dh 64, 48 and 80
     * (an odd number of 16-groups), key counts around the 16-key blocks, a query past 2^15 */
    {
        const int fdh[] = {64, 48, 80};
        const int fnk[] = {1, 15, 16, 17, 100, 1500};
        int ok = 1, cases = 0;
        for (size_t c = 0; c < sizeof fdh / sizeof fdh[0]; c++)
            for (size_t a = 0; a < sizeof fnk / sizeof fnk[0]; a++) {
                const int dh = fdh[c], nk = fnk[a], nk16 = (nk + 15) & ~15, ldk = vec_attention_ldk(nk);
                float *Kt = malloc((size_t)dh * ldk * 4), *Vf = malloc((size_t)nk * dh * 4);
                uint16_t *Kb = malloc((size_t)nk16 * dh * 2), *Vh = malloc((size_t)nk * dh * 2);
                for (size_t i = 0; i < (size_t)dh * ldk; i++) Kt[i] = frand() * (i % 89 == 0 ? 1e-6f : 2.0f);
                for (size_t i = 0; i < (size_t)nk * dh; i++) Vf[i] = frand() * (i % 97 == 0 ? 1e-6f : 1.0f);
                vec_pack_keys_f16(Kt, ldk, dh, nk, Kb);
                vec_f32_to_f16_lanes(Vf, Vh, (size_t)nk * dh);
                /* 1..12 queries: the AVX-512 kernel takes groups of up to 5 (a beam of 5), the
                 * query past 2^15 leaves its group for the scalar kernel */
                for (int nq = 1; nq <= 12; nq++) {
                    float Q[12 * 80], Oa[12 * 96], Oz[12 * 96];
                    for (int i = 0; i < 12 * 80; i++) Q[i] = frand() * 0.5f;
                    if (nq >= 3) Q[80 + 3] = 50000.0f;
                    memset(Oa, 0, sizeof Oa);
                    memset(Oz, 0, sizeof Oz);
                    vec_avx2.attention_f16(Q, 80, Kb, Vh, dh, nk, dh, nq, Oa, 96);
                    vec_avx512.attention_f16(Q, 80, Kb, Vh, dh, nk, dh, nq, Oz, 96);
                    if (memcmp(Oa, Oz, sizeof Oa)) ok = 0;
                }
                cases++;
                free(Kt), free(Vf), free(Kb), free(Vh);
            }
        CHECK(ok, "float16 attention: AVX-512 differs from AVX2");
        printf("float16 attention: bit-identical to AVX2 in %d cases (dh 48/64/80, 1..1500 keys, 1..12 queries)\n", cases);
    }
    /* GELU: the same bits over a wide range, the 16-lane body and the AVX2 tail */
    {
        const size_t n = 40007;
        float *a = malloc(n * 4), *z = malloc(n * 4);
        /* i % 4 == 3: up to ±40, past the −80 clamp of exp(−x²/2) (|x| > 12.65) */
        for (size_t i = 0; i < n; i++)
            a[i] = frand() * (i % 4 == 0 ? 12.0f : i % 4 == 1 ? 1.0f : i % 4 == 2 ? 1e-3f : 40.0f);
        a[0] = 0.0f, a[1] = -0.0f, a[2] = 1e30f, a[3] = -1e30f, a[4] = INFINITY, a[5] = -INFINITY, a[6] = 1e-40f;
        memcpy(z, a, n * 4);
        vec_avx2.gelu(a, n);
        vec_avx512.gelu(z, n);
        CHECK(memcmp(a, z, n * 4) == 0, "GELU: AVX-512 differs from AVX2");
        printf("gelu: %zu values bit-identical to AVX2\n", n);
        free(a), free(z);
    }
    return test_summary("test_vec_avx512");
#else
    printf("test_vec_avx512: skipped: not an x86-64 GCC/clang build\n");
    return 0;
#endif
}
