/* vec_avx512.c — the float16 GEMV kernels of vec_avx2.c on 512-bit registers (AVX512F + BW), for
 * the Whisper decoder's single-token step, its batched rows (beam search, batched long-form mode,
 * windows of concurrent requests) and speculative verification, and GELU. vec_init() selects this
 * table (vec_avx512, defined in vec_avx2.c beside vec_avx2) when the CPU has Skylake-SP's AVX-512
 * set; the attentions are in streaming_avx512.c, every other kernel is vec_avx2's.
 *
 * Bit-identical to vec_avx2 by construction. gemv_f16_row there keeps four 8-lane accumulators
 * a0..a3 per 32 columns (a0 takes weight halves 0-3 and 8-11, a1 4-7 and 12-15, a2 16-19 and
 * 24-27, a3 20-23 and 28-31: the unpacklo/hi order of 16 halves) and ends with
 * hsum8((a0 + a1) + (a2 + a3)). Here one zmm accumulator holds [a0 | a2] and another [a1 | a3]:
 * each lane sees the same FMAs in the same order, and the final sum adds [a0 + a1 | a2 + a3] and
 * then its two halves. The halves are put in that lane order by one vpermw and widened exactly by
 * vcvtph2ps, against x unscaled: every product is exactly w·x, as in vec_avx2's 2^±112-scaled
 * form (which vec_avx2 shows equal to its vcvtph2ps form). Not the scaled form here: it turns the
 * ~0.4 % of Whisper's float16 weights that are subnormal (tiny.en's decoder: 116 022 of 29.6 M)
 * into subnormal floats, and FMAs with subnormal inputs are slow on Intel cores (microcode
 * assists, by all appearances): bench/vec_isa_bench.c's batched GEMV with 0.1 % / 0.4 % / 1 %
 * subnormal halves ran 1.4x / 3.5x / 6.5x slower than with none. What else changes is the work: each input pays two FMAs per 32
 * columns (four), and one widened weight row serves up to 8 inputs (2).
 * test_vec_avx512 checks the bits against vec_avx2 for every batch size and for inputs that
 * vec_avx2 runs in its vcvtph2ps form. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "kernels/prefetch.h"
#include "kernels/simd_avx512.h"
#include "kernels/gemv/vec_impl.h"

#define Z __attribute__((target(AVX512_TARGET)))
#define ZI AVX512I

#define XS_MAX 4096 /* longest row taken (the stack copy of x), as vec_avx2's GEMV_XS_MAX */
#define BATCH 64    /* inputs prepared at once by vec_avx512_gemv_f16_batch (as many as XZ_FLOATS holds) */
#define XZ_FLOATS 32768 /* their copies in the zmm lane order (128 KiB on the stack: 64 inputs of 512) */
#define GROUP 8     /* inputs served by one widened weight row: 16 accumulators + 2 weight vectors */
#define WZ_FLOATS 4096 /* a block of rows widened once when more than one group reads it (16 KiB) */

/* x in the zmm lane order: per 32 columns, [x 0-3, 8-11, 16-19, 24-27] then [x 4-7, 12-15,
 * 20-23, 28-31]. Returns 0 (vec_avx2's kernel runs, same bits) for n not a multiple of 32 or over
 * XS_MAX. */
Z static int prepare_z(const float *x, int n, float *xz) {
    if (n % 32 || n > XS_MAX) return 0;
    for (int k = 0; k < n; k += 32) {
        const __m512 l = _mm512_loadu_ps(x + k), h = _mm512_loadu_ps(x + k + 16);
        _mm512_store_ps(xz + k, _mm512_shuffle_f32x4(l, h, 0x88));
        _mm512_store_ps(xz + k + 16, _mm512_shuffle_f32x4(l, h, 0xDD));
    }
    return 1;
}

/* 32 halves as floats [w0 | w2] and [w1 | w3]: halves 0-3, 8-11, 16-19, 24-27, then 4-7, 12-15,
 * 20-23, 28-31 */
ZI void widen32(const uint16_t *p, __m512 *lo, __m512 *hi) {
    const __m512i idx = _mm512_set_epi16(31, 30, 29, 28, 23, 22, 21, 20, 15, 14, 13, 12, 7, 6, 5, 4, /* hi */
                                         27, 26, 25, 24, 19, 18, 17, 16, 11, 10, 9, 8, 3, 2, 1, 0);
    const __m512i v = _mm512_permutexvar_epi16(idx, _mm512_loadu_si512((const void *)p));
    *lo = _mm512_cvtph_ps(_mm512_castsi512_si256(v));
    *hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(v, 1));
}

/* hsum8((a0 + a1) + (a2 + a3)) of vec_avx2 from A = [a0 | a2], B = [a1 | a3] */
ZI float finish(__m512 A, __m512 B) {
    const __m512 s = _mm512_add_ps(A, B);
    return hsum8(_mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1)));
}

/* The 8 results of finish() at once: [A_i + B_i] halves added, then simd_avx2.h's hsum8x8, whose
 * per-vector order ((x0 + x4) + (x1 + x5)) + ((x2 + x6) + (x3 + x7)) is hsum8's. */
ZI void finish8(const __m512 *A, const __m512 *B, int N, float *out) {
    __m256 v[8];
    for (int i = 0; i < 8; i++) {
        if (i < N) {
            const __m512 s = _mm512_add_ps(A[i], B[i]);
            v[i] = _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
        } else {
            v[i] = _mm256_setzero_ps();
        }
    }
    _mm256_storeu_ps(out, hsum8x8(v));
}

/* One weight row against N prepared inputs xz[0..N-1] (N a constant after inlining): the halves
 * w [n], widened here, or (w == NULL) the row already widened in wz [n] (lo then hi per 32). */
ZI void row_n(const uint16_t *w, const float *wz, const float *const *xz, int N, int n, float *out) {
    __m512 A[GROUP], B[GROUP];
    for (int i = 0; i < N; i++) A[i] = B[i] = _mm512_setzero_ps();
    for (int k = 0; k < n; k += 32) {
        __m512 lo, hi;
        if (w) widen32(w + k, &lo, &hi);
        else lo = _mm512_load_ps(wz + k), hi = _mm512_load_ps(wz + k + 16);
        for (int i = 0; i < N; i++) {
            A[i] = _mm512_fmadd_ps(lo, _mm512_load_ps(xz[i] + k), A[i]);
            B[i] = _mm512_fmadd_ps(hi, _mm512_load_ps(xz[i] + k + 16), B[i]);
        }
    }
    if (N >= 4) finish8(A, B, N, out);
    else
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
    const size_t rb = sizeof(uint16_t) * (size_t)n;
    const int pf = vec_pf_rows(rb);
    int r = r0;
    for (; r + 2 <= r1; r += 2) {
        float s0, s1;
        if (r + pf + 2 <= r1) vec_prefetch_bytes(W + (size_t)(r + pf) * n, 2 * rb);
        rows2(W + (size_t)r * n, W + (size_t)(r + 1) * n, xz, n, &s0, &s1);
        y[r] = (b ? b[r] : 0.0f) + s0;
        y[r + 1] = (b ? b[r + 1] : 0.0f) + s1;
    }
    if (r < r1) {
        const float *one[1] = {xz};
        float s;
        row_n(W + (size_t)r * n, NULL, one, 1, n, &s);
        y[r] = (b ? b[r] : 0.0f) + s;
    }
}

Z void vec_avx512_gemv_f16_rows(const uint16_t *W, const float *x, int n, const int *rows, int count, float *y) {
    float xz[XS_MAX] __attribute__((aligned(64)));
    if (!prepare_z(x, n, xz)) {
        vec_avx2.gemv_f16_rows(W, x, n, rows, count, y);
        return;
    }
    const size_t rb = sizeof(uint16_t) * (size_t)n;
    const int pf = vec_pf_rows(rb);
    int i = 0;
    for (; i + 2 <= count; i += 2) {
        float s0, s1;
        if (i + pf + 2 <= count) {
            vec_prefetch_bytes(W + (size_t)rows[i + pf] * n, rb);
            vec_prefetch_bytes(W + (size_t)rows[i + pf + 1] * n, rb);
        }
        rows2(W + (size_t)rows[i] * n, W + (size_t)rows[i + 1] * n, xz, n, &s0, &s1);
        y[rows[i]] = 0.0f + s0;
        y[rows[i + 1]] = 0.0f + s1;
    }
    if (i < count) {
        const float *one[1] = {xz};
        float s;
        row_n(W + (size_t)rows[i] * n, NULL, one, 1, n, &s);
        y[rows[i]] = 0.0f + s;
    }
}

/* vec_gemv_f16_rows for nx inputs: each input prepared once, each listed row widened once per
 * group of up to GROUP inputs while it is in L1 (row_n: per output the chains of rows2/row_n, so
 * the bits of vec_avx512_gemv_f16_rows for that input). */
Z void vec_avx512_gemv_f16_rows_multi(const uint16_t *W, const float *X, int ldx, int nx, int n, const int *rows,
                                    const uint16_t *need, int count, float *const *Y) {
    float xzbuf[XZ_FLOATS] __attribute__((aligned(64)));
    if (n % 32 || n > XS_MAX || nx > 16 || (size_t)nx * (size_t)n > XZ_FLOATS) {
        for (int k = 0; k < count; k++)
            for (int i = 0; i < nx; i++)
                if (!need || need[k] >> i & 1) vec_avx512_gemv_f16_rows(W, X + (size_t)i * ldx, n, rows + k, 1, Y[i]);
        return;
    }
    const float *xp[BATCH];
    for (int i = 0; i < nx; i++) {
        prepare_z(X + (size_t)i * ldx, n, xzbuf + (size_t)i * n);
        xp[i] = xzbuf + (size_t)i * n;
    }
    const size_t rb = sizeof(uint16_t) * (size_t)n;
    const int pf = vec_pf_rows(rb);
    for (int k = 0; k < count; k++) {
        if (k + pf < count) vec_prefetch_bytes(W + (size_t)rows[k + pf] * n, rb);
        const int r = rows[k];
        const uint16_t *w = W + (size_t)r * n;
        const float *xs[16]; /* the inputs this row serves */
        int who[16], m = 0;
        for (int i = 0; i < nx; i++)
            if (!need || need[k] >> i & 1) xs[m] = xp[i], who[m++] = i;
        for (int g0 = 0; g0 < m; g0 += GROUP) {
            float s[GROUP];
            const float *const *xg = xs + g0;
            const int G = m - g0 < GROUP ? m - g0 : GROUP;
            switch (G) { /* constant group sizes keep the accumulators in registers */
            case 8: row_n(w, NULL, xg, 8, n, s); break;
            case 7: row_n(w, NULL, xg, 7, n, s); break;
            case 6: row_n(w, NULL, xg, 6, n, s); break;
            case 5: row_n(w, NULL, xg, 5, n, s); break;
            case 4: row_n(w, NULL, xg, 4, n, s); break;
            case 3: row_n(w, NULL, xg, 3, n, s); break;
            case 2: row_n(w, NULL, xg, 2, n, s); break;
            default: row_n(w, NULL, xg, 1, n, s); break;
            }
            for (int i = 0; i < G; i++) Y[who[g0 + i]][r] = 0.0f + s[i];
        }
    }
}

/* Rows [a, e) of W against the N prepared inputs xz[0..N-1], outputs to y[i][r]; wz: the rows
 * already widened ([e - a][n]) or NULL. One input takes two rows at a time (rows2). */
ZI void block_n(const uint16_t *W, const float *wz, const float *b, const float *const *xz, float *const *y, int N,
                int n, int a, int e) {
    const size_t rb = sizeof(uint16_t) * (size_t)n;
    const int pf = vec_pf_rows(rb);
    int r = a;
    if (N == 1 && !wz)
        for (; r + 2 <= e; r += 2) {
            float s0, s1;
            if (r + pf + 2 <= e) vec_prefetch_bytes(W + (size_t)(r + pf) * n, 2 * rb);
            rows2(W + (size_t)r * n, W + (size_t)(r + 1) * n, xz[0], n, &s0, &s1);
            y[0][r] = (b ? b[r] : 0.0f) + s0;
            y[0][r + 1] = (b ? b[r + 1] : 0.0f) + s1;
        }
    for (; r < e; r++) {
        float s[GROUP];
        if (!wz && r + pf < e) vec_prefetch_bytes(W + (size_t)(r + pf) * n, rb);
        row_n(wz ? NULL : W + (size_t)r * n, wz ? wz + (size_t)(r - a) * n : NULL, xz, N, n, s);
        for (int i = 0; i < N; i++) y[i][r] = (b ? b[r] : 0.0f) + s[i];
    }
}

/* vec_gemv_rows over float16 weights: as many inputs as XZ_FLOATS holds (64 at most: a window's
 * 5 beams × 8 windows in one pass) are put in the zmm lane order once; then per block of weight
 * rows (L1-sized) they go through in groups of up to 8, each weight row widened once per group
 * (once per block, into wz, when there are several groups), so W streams from memory once per
 * pass. The inputs vec_avx2 would run in its vcvtph2ps form go through that kernel. */
Z void vec_avx512_gemv_f16_batch(const uint16_t *W, const float *b, const float *X, int ldx, int nx, int n, int r0,
                               int r1, float *const *Y, int block) {
    float xzbuf[XZ_FLOATS] __attribute__((aligned(64)));
    float wz[WZ_FLOATS] __attribute__((aligned(64)));
    const int cap = n > 0 && n <= XS_MAX ? (XZ_FLOATS / n < BATCH ? XZ_FLOATS / n : BATCH) : 1;
    for (int i0 = 0; i0 < nx; i0 += cap) {
        const int in = nx - i0 < cap ? nx - i0 : cap;
        const float *xp[BATCH];
        float *yp[BATCH];
        int nf = 0, slow[BATCH], ns = 0;
        for (int i = 0; i < in; i++) {
            float *xz = xzbuf + (size_t)nf * n; /* n % 32 == 0 when prepare_z accepts: 64-byte aligned */
            if (prepare_z(X + (size_t)(i0 + i) * ldx, n, xz)) {
                xp[nf] = xz;
                yp[nf++] = Y[i0 + i];
            } else {
                slow[ns++] = i0 + i;
            }
        }
        /* more than one group: widen each block of rows once for all of them (WZ_FLOATS) */
        const int pre = nf > GROUP;
        const int blk = pre && block * n > WZ_FLOATS ? (WZ_FLOATS / n > 0 ? WZ_FLOATS / n : 1) : block;
        for (int a = r0; a < r1; a += blk) {
            const int e = a + blk < r1 ? a + blk : r1;
            const float *wp = NULL;
            if (pre) {
                for (int r = a; r < e; r++)
                    for (int k = 0; k < n; k += 32) {
                        __m512 lo, hi;
                        widen32(W + (size_t)r * n + k, &lo, &hi);
                        _mm512_store_ps(wz + (size_t)(r - a) * n + k, lo);
                        _mm512_store_ps(wz + (size_t)(r - a) * n + k + 16, hi);
                    }
                wp = wz;
            }
            for (int i = 0; i < nf; i += GROUP) {
                const float *const *xg = xp + i;
                float *const *yg = yp + i;
                switch (nf - i < GROUP ? nf - i : GROUP) { /* constant group sizes keep the accumulators in registers */
                case 8: block_n(W, wp, b, xg, yg, 8, n, a, e); break;
                case 7: block_n(W, wp, b, xg, yg, 7, n, a, e); break;
                case 6: block_n(W, wp, b, xg, yg, 6, n, a, e); break;
                case 5: block_n(W, wp, b, xg, yg, 5, n, a, e); break;
                case 4: block_n(W, wp, b, xg, yg, 4, n, a, e); break;
                case 3: block_n(W, wp, b, xg, yg, 3, n, a, e); break;
                case 2: block_n(W, wp, b, xg, yg, 2, n, a, e); break;
                default: block_n(W, wp, b, xg, yg, 1, n, a, e); break;
                }
            }
            for (int s = 0; s < ns; s++)
                vec_avx2.gemv_f16(W, b, X + (size_t)slow[s] * ldx, n, a, e, Y[slow[s]]);
        }
    }
}

/* vec_avx2's gelu_avx2 (erf by Abramowitz & Stegun 7.1.26, simd_avx2.h's exp8) on 16 lanes: the
 * same elementwise operations (exp16 = exp8), so the same bits; the last n % 16 values go to
 * vec_avx2's. */
Z void vec_avx512_gelu(float *x, size_t n) {
    const __m512 p = _mm512_set1_ps(0.3275911f), a1 = _mm512_set1_ps(0.254829592f),
                 a2 = _mm512_set1_ps(-0.284496736f), a3 = _mm512_set1_ps(1.421413741f),
                 a4 = _mm512_set1_ps(-1.453152027f), a5 = _mm512_set1_ps(1.061405429f), one = _mm512_set1_ps(1.0f),
                 half = _mm512_set1_ps(0.5f), rs2 = _mm512_set1_ps(0.70710678118654752f);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i);
        const __m512 z = _mm512_mul_ps(v, rs2);
        const __m512 az = _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(z)));
        const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(p, az, one));
        __m512 poly = _mm512_fmadd_ps(a5, t, a4);
        poly = _mm512_fmadd_ps(poly, t, a3);
        poly = _mm512_fmadd_ps(poly, t, a2);
        poly = _mm512_fmadd_ps(poly, t, a1);
        poly = _mm512_mul_ps(poly, t);
        /* clamped at −80 as gelu_avx2 does (no subnormal product; the same bits) */
        const __m512 e =
            exp16(_mm512_max_ps(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(az, az)), _mm512_set1_ps(-80.0f)));
        const __m512 erf_abs = _mm512_fnmadd_ps(poly, e, one);
        const __m512 erf = _mm512_castsi512_ps(
            _mm512_or_si512(_mm512_castps_si512(erf_abs), _mm512_and_si512(sign, _mm512_castps_si512(z))));
        _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_mul_ps(half, v), _mm512_add_ps(one, erf)));
    }
    if (i < n) vec_avx2.gelu(x + i, n - i);
}
#endif
