/* vec_avx512.c — the float16 GEMV kernels of vec_avx2.c on 512-bit registers (AVX512F + BW), for
 * the Whisper decoder's single-token step, its batched rows (beam search, batched long-form mode,
 * windows of concurrent requests) and speculative verification. vec_init() selects this table
 * (vec_avx512, defined in vec_avx2.c beside vec_avx2) when the CPU has Skylake-SP's AVX-512 set;
 * every other kernel is vec_avx2's.
 *
 * Bit-identical to vec_avx2 by construction. gemv_f16_row there keeps four 8-lane accumulators
 * a0..a3 per 32 columns (a0 takes weight halves 0-3 and 8-11, a1 4-7 and 12-15, a2 16-19 and
 * 24-27, a3 20-23 and 28-31: the unpacklo/hi order of 16 halves) and ends with
 * hsum8((a0 + a1) + (a2 + a3)). Here one zmm accumulator holds [a0 | a2] and another [a1 | a3]:
 * vpunpcklwd/vpunpckhwd of 32 halves on a zmm produce exactly those lanes, each lane sees the same
 * FMAs in the same order, and the final sum adds [a0 + a1 | a2 + a3] and then its two halves.
 * What changes is the work: 32 halves are widened by 6 instructions (12 in vec_avx2), each input
 * pays two FMAs per 32 columns (four), and one widened weight row serves up to 8 inputs (2).
 * test_kernels checks the bits against vec_avx2 for every batch size and for inputs that cannot
 * take the scaled form. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "kernels/vec_impl.h"

#define Z __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")))
#define ZI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"), always_inline)) static inline

#define XS_MAX 4096 /* longest row taken by the scaled form, as vec_avx2's GEMV_XS_MAX */
#define BATCH 16    /* inputs prepared at once by gemv_f16_batch_z (16 scaled copies on the stack) */
#define GROUP 8     /* inputs served by one widened weight row: 16 accumulators + 2 weight vectors */

/* The scaled copy of x in the zmm lane order: per 32 columns, [x 0-3, 8-11, 16-19, 24-27] then
 * [x 4-7, 12-15, 20-23, 28-31], times 2^112. Returns 0 where vec_avx2's gemv_f16_prepare
 * returns 0 (n not a multiple of 32 or over XS_MAX, MXCSR.DAZ set, some |x| >= 2^15 or NaN):
 * such an input runs vec_avx2's vcvtph2ps form, which gives the same bits. */
Z static int prepare_z(const float *x, int n, float *xz) {
    if (n % 32 || n > XS_MAX || (_mm_getcsr() & 0x0040)) return 0;
    const __m512 two112 = _mm512_set1_ps(0x1p112f), lim = _mm512_set1_ps(0x1p15f);
    __mmask16 big = 0;
    for (int k = 0; k < n; k += 32) {
        const __m512 l = _mm512_loadu_ps(x + k), h = _mm512_loadu_ps(x + k + 16);
        const __m512 lo = _mm512_shuffle_f32x4(l, h, 0x88), hi = _mm512_shuffle_f32x4(l, h, 0xDD);
        big |= _mm512_cmp_ps_mask(_mm512_abs_ps(lo), lim, _CMP_NLT_UQ);
        big |= _mm512_cmp_ps_mask(_mm512_abs_ps(hi), lim, _CMP_NLT_UQ);
        _mm512_store_ps(xz + k, _mm512_mul_ps(lo, two112));
        _mm512_store_ps(xz + k + 16, _mm512_mul_ps(hi, two112));
    }
    return big == 0;
}

/* 32 halves as [w0 | w2] and [w1 | w3], scaled by 2^-112 (vec_avx2.c's ld_h16_scaled) */
ZI void widen32(const uint16_t *p, __m512 *lo, __m512 *hi) {
    const __m512i v = _mm512_loadu_si512((const void *)p), z = _mm512_setzero_si512();
    const __m512i m = _mm512_set1_epi32((int)0x8FFFFFFF);
    *lo = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srai_epi32(_mm512_unpacklo_epi16(z, v), 3), m));
    *hi = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srai_epi32(_mm512_unpackhi_epi16(z, v), 3), m));
}

/* hsum8((a0 + a1) + (a2 + a3)) of vec_avx2 from A = [a0 | a2], B = [a1 | a3] */
ZI float finish(__m512 A, __m512 B) {
    const __m512 s = _mm512_add_ps(A, B);
    const __m256 v = _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
    __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    __m128 sh = _mm_movehdup_ps(lo);
    lo = _mm_add_ps(lo, sh);
    sh = _mm_movehl_ps(sh, lo);
    return _mm_cvtss_f32(_mm_add_ss(lo, sh));
}

/* One weight row w [n] against N prepared inputs xz[0..N-1] (N a constant after inlining). */
ZI void row_n(const uint16_t *w, const float *const *xz, int N, int n, float *out) {
    __m512 A[GROUP], B[GROUP];
    for (int i = 0; i < N; i++) A[i] = B[i] = _mm512_setzero_ps();
    for (int k = 0; k < n; k += 32) {
        __m512 lo, hi;
        widen32(w + k, &lo, &hi);
        for (int i = 0; i < N; i++) {
            A[i] = _mm512_fmadd_ps(lo, _mm512_load_ps(xz[i] + k), A[i]);
            B[i] = _mm512_fmadd_ps(hi, _mm512_load_ps(xz[i] + k + 16), B[i]);
        }
    }
    for (int i = 0; i < N; i++) out[i] = finish(A[i], B[i]);
}

/* Two weight rows against one input: four independent FMA chains hide the FMA latency that one
 * row's two chains would wait on. */
ZI void rows2(const uint16_t *w0, const uint16_t *w1, const float *xz, int n, float *y0, float *y1) {
    __m512 A0 = _mm512_setzero_ps(), B0 = A0, A1 = A0, B1 = A0;
    for (int k = 0; k < n; k += 32) {
        __m512 l0, h0, l1, h1;
        widen32(w0 + k, &l0, &h0);
        widen32(w1 + k, &l1, &h1);
        const __m512 xl = _mm512_load_ps(xz + k), xh = _mm512_load_ps(xz + k + 16);
        A0 = _mm512_fmadd_ps(l0, xl, A0);
        B0 = _mm512_fmadd_ps(h0, xh, B0);
        A1 = _mm512_fmadd_ps(l1, xl, A1);
        B1 = _mm512_fmadd_ps(h1, xh, B1);
    }
    *y0 = finish(A0, B0);
    *y1 = finish(A1, B1);
}

Z void vec_avx512_gemv_f16(const uint16_t *W, const float *b, const float *x, int n, int r0, int r1, float *y) {
    float xz[XS_MAX] __attribute__((aligned(64)));
    if (!prepare_z(x, n, xz)) {
        vec_avx2.gemv_f16(W, b, x, n, r0, r1, y);
        return;
    }
    int r = r0;
    for (; r + 2 <= r1; r += 2) {
        float s0, s1;
        rows2(W + (size_t)r * n, W + (size_t)(r + 1) * n, xz, n, &s0, &s1);
        y[r] = (b ? b[r] : 0.0f) + s0;
        y[r + 1] = (b ? b[r + 1] : 0.0f) + s1;
    }
    if (r < r1) {
        const float *one[1] = {xz};
        float s;
        row_n(W + (size_t)r * n, one, 1, n, &s);
        y[r] = (b ? b[r] : 0.0f) + s;
    }
}

Z void vec_avx512_gemv_f16_rows(const uint16_t *W, const float *x, int n, const int *rows, int count, float *y) {
    float xz[XS_MAX] __attribute__((aligned(64)));
    if (!prepare_z(x, n, xz)) {
        vec_avx2.gemv_f16_rows(W, x, n, rows, count, y);
        return;
    }
    int i = 0;
    for (; i + 2 <= count; i += 2) {
        float s0, s1;
        rows2(W + (size_t)rows[i] * n, W + (size_t)rows[i + 1] * n, xz, n, &s0, &s1);
        y[rows[i]] = 0.0f + s0;
        y[rows[i + 1]] = 0.0f + s1;
    }
    if (i < count) {
        const float *one[1] = {xz};
        float s;
        row_n(W + (size_t)rows[i] * n, one, 1, n, &s);
        y[rows[i]] = 0.0f + s;
    }
}

/* Rows [a, e) of W against the N prepared inputs xz[0..N-1], outputs to y[i][r]; one input takes
 * two rows at a time (rows2). */
ZI void block_n(const uint16_t *W, const float *b, const float *const *xz, float *const *y, int N, int n, int a,
                int e) {
    int r = a;
    if (N == 1)
        for (; r + 2 <= e; r += 2) {
            float s0, s1;
            rows2(W + (size_t)r * n, W + (size_t)(r + 1) * n, xz[0], n, &s0, &s1);
            y[0][r] = (b ? b[r] : 0.0f) + s0;
            y[0][r + 1] = (b ? b[r + 1] : 0.0f) + s1;
        }
    for (; r < e; r++) {
        float s[GROUP];
        row_n(W + (size_t)r * n, xz, N, n, s);
        for (int i = 0; i < N; i++) y[i][r] = (b ? b[r] : 0.0f) + s[i];
    }
}

/* vec_gemv_rows over float16 weights: per block of weight rows (L1-sized), the inputs in the
 * scaled form go through in groups of up to 8, each weight row widened once per group;
 * the others through vec_avx2's vcvtph2ps form. */
Z void vec_avx512_gemv_f16_batch(const uint16_t *W, const float *b, const float *X, int ldx, int nx, int n, int r0,
                               int r1, float *Y, int ldy, int block) {
    float xz[BATCH][XS_MAX] __attribute__((aligned(64)));
    for (int i0 = 0; i0 < nx; i0 += BATCH) {
        const int in = nx - i0 < BATCH ? nx - i0 : BATCH;
        const float *xp[BATCH];
        float *yp[BATCH];
        int nf = 0, slow[BATCH], ns = 0;
        for (int i = 0; i < in; i++) {
            if (prepare_z(X + (size_t)(i0 + i) * ldx, n, xz[nf])) {
                xp[nf] = xz[nf];
                yp[nf++] = Y + (size_t)(i0 + i) * ldy;
            } else {
                slow[ns++] = i0 + i;
            }
        }
        for (int a = r0; a < r1; a += block) {
            const int e = a + block < r1 ? a + block : r1;
            for (int i = 0; i < nf; i += GROUP) {
                const float *const *xg = xp + i;
                float *const *yg = yp + i;
                switch (nf - i < GROUP ? nf - i : GROUP) { /* constant group sizes keep the accumulators in registers */
                case 8: block_n(W, b, xg, yg, 8, n, a, e); break;
                case 7: block_n(W, b, xg, yg, 7, n, a, e); break;
                case 6: block_n(W, b, xg, yg, 6, n, a, e); break;
                case 5: block_n(W, b, xg, yg, 5, n, a, e); break;
                case 4: block_n(W, b, xg, yg, 4, n, a, e); break;
                case 3: block_n(W, b, xg, yg, 3, n, a, e); break;
                case 2: block_n(W, b, xg, yg, 2, n, a, e); break;
                default: block_n(W, b, xg, yg, 1, n, a, e); break;
                }
            }
            for (int s = 0; s < ns; s++)
                vec_avx2.gemv_f16(W, b, X + (size_t)slow[s] * ldx, n, a, e, Y + (size_t)slow[s] * ldy);
        }
    }
}

#endif
