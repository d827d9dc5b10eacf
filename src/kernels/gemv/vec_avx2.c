/* vec_avx2.c — AVX2 + FMA + F16C versions of the vec.h kernels, compiled with target attributes
 * so the rest of the build stays baseline x86-64; vec_init() selects them at run time. The
 * reduction order of each kernel is fixed (4 or 8 lane accumulators, then a fixed tree). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>

#include "kernels/prefetch.h"
#include "kernels/simd_avx2.h"
#include "kernels/gemv/vec_impl.h"

/* Both GEMV kernels give accumulator a0 the columns k+0..3 and k+8..11 of each 32-column step, a1
 * k+4..7 and k+12..15, a2 and a3 the same pattern over k+16..31: the order in which
 * _mm256_unpacklo/hi_epi16 widen 16 halves (see gemv_f16_avx2). With the same lanes, the same
 * accumulation order and the same final tree, f16 weights and their exact f32 widening give
 * bit-identical results (test_kernels checks it). */
AVX2 static inline __m256 ld_perm(const float *p) { return _mm256_loadu2_m128(p + 8, p); }

AVX2 static void gemv_f32_avx2(const float *W, const float *b, const float *x, int n, int r0, int r1, float *y) {
    for (int r = r0; r < r1; r++) {
        const float *w = W + (size_t)r * n;
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
               a3 = _mm256_setzero_ps();
        int k = 0;
        for (; k + 32 <= n; k += 32) {
            a0 = _mm256_fmadd_ps(ld_perm(w + k), ld_perm(x + k), a0);
            a1 = _mm256_fmadd_ps(ld_perm(w + k + 4), ld_perm(x + k + 4), a1);
            a2 = _mm256_fmadd_ps(ld_perm(w + k + 16), ld_perm(x + k + 16), a2);
            a3 = _mm256_fmadd_ps(ld_perm(w + k + 20), ld_perm(x + k + 20), a3);
        }
        for (; k + 8 <= n; k += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + k), _mm256_loadu_ps(x + k), a0);
        float s = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
        for (; k < n; k++) s += w[k] * x[k];
        y[r] = (b ? b[r] : 0.0f) + s;
    }
}

AVX2 static inline __m256 ld_h8(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

/* halves p[0..3] and p[8..11] widened, the lanes of ld_perm */
AVX2 static inline __m256 ld_h8_perm(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)p), _mm_loadl_epi64((const __m128i *)(p + 8))));
}

#define GEMV_XS_MAX 4096 /* longest row taken by the scaled kernel (stack copy of x) */

/* Same lanes, order and tree as gemv_f32_avx2. The fast form multiplies weights scaled by 2^-112
 * (ld_h16_scaled) with x scaled by 2^112, copied once per call into the lane order: every product
 * is exactly w·x (powers of two; FMA rounds only the sum), so the result is bit-identical to
 * widening with vcvtph2ps. It needs |x| < 2^15 (no overflow of the copy), n <= GEMV_XS_MAX and n
 * a multiple of 32; otherwise the vcvtph2ps form runs. */
/* The scaled copy of x for ld_h16_scaled (0: the vcvtph2ps form must run). */

AVX2 static int gemv_f16_prepare(const float *x, int n, float *xs) {
    if (n % 32 || n > GEMV_XS_MAX || daz_set()) return 0;
    const __m256 two112 = _mm256_set1_ps(0x1p112f), lim = _mm256_set1_ps(0x1p15f),
                 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 big = _mm256_setzero_ps();
    for (int k = 0; k < n; k += 16) {
        const __m256 lo = ld_perm(x + k), hi = ld_perm(x + k + 4);
        /* !(|x| < 2^15) also catches NaN */
        big = _mm256_or_ps(big, _mm256_cmp_ps(_mm256_and_ps(lo, absm), lim, _CMP_NLT_UQ));
        big = _mm256_or_ps(big, _mm256_cmp_ps(_mm256_and_ps(hi, absm), lim, _CMP_NLT_UQ));
        _mm256_store_ps(xs + k, _mm256_mul_ps(lo, two112));
        _mm256_store_ps(xs + k + 8, _mm256_mul_ps(hi, two112));
    }
    return _mm256_movemask_ps(big) == 0;
}

AVX2 static inline float gemv_f16_row(const uint16_t *w, const float *x, const float *xs, int fast, int n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int k = 0;
    if (fast) {
        for (; k + 32 <= n; k += 32) {
            __m256 w0, w1, w2, w3;
            ld_h16_scaled(w + k, &w0, &w1);
            ld_h16_scaled(w + k + 16, &w2, &w3);
            a0 = _mm256_fmadd_ps(w0, _mm256_load_ps(xs + k), a0);
            a1 = _mm256_fmadd_ps(w1, _mm256_load_ps(xs + k + 8), a1);
            a2 = _mm256_fmadd_ps(w2, _mm256_load_ps(xs + k + 16), a2);
            a3 = _mm256_fmadd_ps(w3, _mm256_load_ps(xs + k + 24), a3);
        }
    } else {
        for (; k + 32 <= n; k += 32) {
            a0 = _mm256_fmadd_ps(ld_h8_perm(w + k), ld_perm(x + k), a0);
            a1 = _mm256_fmadd_ps(ld_h8_perm(w + k + 4), ld_perm(x + k + 4), a1);
            a2 = _mm256_fmadd_ps(ld_h8_perm(w + k + 16), ld_perm(x + k + 16), a2);
            a3 = _mm256_fmadd_ps(ld_h8_perm(w + k + 20), ld_perm(x + k + 20), a3);
        }
    }
    for (; k + 8 <= n; k += 8) a0 = _mm256_fmadd_ps(ld_h8(w + k), _mm256_loadu_ps(x + k), a0);
    float s = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; k < n; k++) {
        __m128 h = _mm_cvtph_ps(_mm_cvtsi32_si128(w[k]));
        s += _mm_cvtss_f32(h) * x[k];
    }
    return s;
}

/* Same lanes, order and tree as gemv_f32_avx2. The fast form multiplies weights scaled by 2^-112
 * (ld_h16_scaled) with x scaled by 2^112, copied once per call into the lane order: every product
 * is exactly w·x (powers of two; FMA rounds only the sum), so the result is bit-identical to
 * widening with vcvtph2ps. It needs |x| < 2^15 (no overflow of the copy), n <= GEMV_XS_MAX and n
 * a multiple of 32; otherwise the vcvtph2ps form runs. */
AVX2 static void gemv_f16_avx2(const uint16_t *W, const float *b, const float *x, int n, int r0, int r1, float *y) {
    float xs[GEMV_XS_MAX] __attribute__((aligned(32)));
    const int fast = gemv_f16_prepare(x, n, xs);
    const size_t rb = sizeof(uint16_t) * (size_t)n;
    const int pf = vec_pf_rows(rb);
    for (int r = r0; r < r1; r++) {
        if (r + pf < r1) vec_prefetch_bytes(W + (size_t)(r + pf) * n, rb);
        y[r] = (b ? b[r] : 0.0f) + gemv_f16_row(W + (size_t)r * n, x, xs, fast, n);
    }
}

#define GEMV_BATCH 16 /* inputs prepared at once by gemv_f16_batch_avx2 (16 scaled copies on the stack) */

/* gemv_f16_row of one weight row for two inputs that both take the fast form: each row of
 * halves is widened once for both, and each input's accumulators see the very FMAs, in the very
 * order, of gemv_f16_row (n is a multiple of 32 in the fast form), so both results are
 * bit-identical to it. Halves the widening work of the batched decoder step. */
AVX2 static inline void gemv_f16_row_x2(const uint16_t *w, const float *xs0, const float *xs1, int n, float *y0,
                                        float *y1) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps(), b2 = _mm256_setzero_ps(), b3 = _mm256_setzero_ps();
    for (int k = 0; k + 32 <= n; k += 32) {
        __m256 w0, w1, w2, w3;
        ld_h16_scaled(w + k, &w0, &w1);
        ld_h16_scaled(w + k + 16, &w2, &w3);
        a0 = _mm256_fmadd_ps(w0, _mm256_load_ps(xs0 + k), a0);
        a1 = _mm256_fmadd_ps(w1, _mm256_load_ps(xs0 + k + 8), a1);
        a2 = _mm256_fmadd_ps(w2, _mm256_load_ps(xs0 + k + 16), a2);
        a3 = _mm256_fmadd_ps(w3, _mm256_load_ps(xs0 + k + 24), a3);
        b0 = _mm256_fmadd_ps(w0, _mm256_load_ps(xs1 + k), b0);
        b1 = _mm256_fmadd_ps(w1, _mm256_load_ps(xs1 + k + 8), b1);
        b2 = _mm256_fmadd_ps(w2, _mm256_load_ps(xs1 + k + 16), b2);
        b3 = _mm256_fmadd_ps(w3, _mm256_load_ps(xs1 + k + 24), b3);
    }
    *y0 = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    *y1 = hsum8(_mm256_add_ps(_mm256_add_ps(b0, b1), _mm256_add_ps(b2, b3)));
}

/* vec_gemv_rows for float16 weights: each input's scaled copy is prepared once per call, not once
 * per block of weight rows; per output the same gemv_f16_row (or gemv_f16_row_x2 for a pair of
 * inputs in the fast form), so the same bits as vec_gemv. */
AVX2 static void gemv_f16_batch_avx2(const uint16_t *W, const float *b, const float *X, int ldx, int nx, int n, int r0,
                                     int r1, float *const *Y, int block) {
    float xs[GEMV_BATCH][GEMV_XS_MAX] __attribute__((aligned(32)));
    int fast[GEMV_BATCH];
    for (int i0 = 0; i0 < nx; i0 += GEMV_BATCH) {
        const int in = nx - i0 < GEMV_BATCH ? nx - i0 : GEMV_BATCH;
        for (int i = 0; i < in; i++) fast[i] = gemv_f16_prepare(X + (size_t)(i0 + i) * ldx, n, xs[i]);
        for (int a = r0; a < r1; a += block) {
            const int e = a + block < r1 ? a + block : r1;
            int i = 0;
            for (; i + 1 < in && fast[i] && fast[i + 1]; i += 2) {
                float *y0 = Y[i0 + i], *y1 = Y[i0 + i + 1];
                for (int r = a; r < e; r++) {
                    float s0, s1;
                    gemv_f16_row_x2(W + (size_t)r * n, xs[i], xs[i + 1], n, &s0, &s1);
                    y0[r] = (b ? b[r] : 0.0f) + s0;
                    y1[r] = (b ? b[r] : 0.0f) + s1;
                }
            }
            for (; i < in; i++) {
                const float *x = X + (size_t)(i0 + i) * ldx;
                float *y = Y[i0 + i];
                for (int r = a; r < e; r++) y[r] = (b ? b[r] : 0.0f) + gemv_f16_row(W + (size_t)r * n, x, xs[i], fast[i], n);
            }
        }
    }
}

AVX2 static void gemv_f16_rows_avx2(const uint16_t *W, const float *x, int n, const int *rows, int count, float *y) {
    float xs[GEMV_XS_MAX] __attribute__((aligned(32)));
    const int fast = gemv_f16_prepare(x, n, xs);
    const size_t rb = sizeof(uint16_t) * (size_t)n;
    const int pf = vec_pf_rows(rb);
    for (int i = 0; i < count; i++) {
        if (i + pf < count) vec_prefetch_bytes(W + (size_t)rows[i + pf] * n, rb);
        y[rows[i]] = 0.0f + gemv_f16_row(W + (size_t)rows[i] * n, x, xs, fast, n);
    }
}

/* Σ_b sb[b]·(w_b·qx_b): per block of 32, |qx| times w with qx's sign, so the unsigned×signed pair
 * products of vpmaddubsw stay within int16 (2·127·127 < 32767); the block's 8 int32 partial sums
 * (exact) are scaled by sb[b] into float lanes. */
AVX2 static float dot_i8_blocks_avx2(const int8_t *w, const int8_t *qx, const uint8_t *ax, const float *sb, int n) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (int k = 0; k < n; k += 32) {
        const __m256i sw = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(w + k)),
                                            _mm256_loadu_si256((const __m256i *)(qx + k)));
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_loadu_si256((const __m256i *)(ax + k)), sw), ones);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_broadcast_ss(sb + k / 32), acc);
    }
    return hsum8(acc);
}

/* vec_screen_build_row for n a multiple of 32: codes rounded to nearest even (any nearest rounding
 * keeps |w·inv − q| <= 1/2), block sums of |q| exact in integers, ‖w − s·q‖² and ‖w‖² summed in
 * float per block of 32 and in double across blocks; the 1e-5 margin covers the float sums. */
AVX2 static void screen_build_row_avx2(const uint16_t *w16, int n, int8_t *q, float *s, float *g, float *c) {
    if (n % 32) {
        vec_scalar.screen_build_row(w16, n, q, s, g, c);
        return;
    }
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 vmx = _mm256_setzero_ps();
    for (int k = 0; k < n; k += 8) vmx = _mm256_max_ps(vmx, _mm256_and_ps(ld_h8(w16 + k), absm));
    const float mx = hmax8(vmx);
    const float sc = mx > 0.0f ? mx / 127.0f : 0.0f, inv = mx > 0.0f ? 127.0f / mx : 0.0f;
    const __m256 vinv = _mm256_set1_ps(inv), vsc = _mm256_set1_ps(sc), lim = _mm256_set1_ps(127.0f);
    double g2 = 0.0, e2 = 0.0, w2 = 0.0;
    for (int b = 0; b < n; b += 32) {
        __m256 de = _mm256_setzero_ps(), dw = _mm256_setzero_ps();
        __m256i l1 = _mm256_setzero_si256();
        for (int k = b; k < b + 32; k += 8) {
            const __m256 w = ld_h8(w16 + k);
            __m256 qf = _mm256_round_ps(_mm256_mul_ps(w, vinv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            qf = _mm256_min_ps(_mm256_max_ps(qf, _mm256_sub_ps(_mm256_setzero_ps(), lim)), lim);
            const __m256i qi = _mm256_cvtps_epi32(qf);
            const __m256 d = _mm256_fnmadd_ps(vsc, qf, w);
            de = _mm256_fmadd_ps(d, d, de);
            dw = _mm256_fmadd_ps(w, w, dw);
            l1 = _mm256_add_epi32(l1, _mm256_abs_epi32(qi));
            int32_t t[8];
            _mm256_storeu_si256((__m256i *)t, qi);
            for (int i = 0; i < 8; i++) q[k + i] = (int8_t)t[i];
        }
        int32_t t[8];
        _mm256_storeu_si256((__m256i *)t, l1);
        const double l = (double)t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
        g2 += l * l;
        e2 += hsum8(de);
        w2 += hsum8(dw);
    }
    *s = sc;
    *g = (float)(sc * sqrt(g2)) * (1.0f + 1e-6f);
    *c = (float)sqrt(e2) * (1.0f + 1e-5f) + 3e-5f * (float)sqrt(w2);
}

AVX2 static void layernorm_avx2(const float *x, const float *gamma, const float *beta, int n, float *y) {
    if (n % 8) {
        vec_scalar.layernorm(x, gamma, beta, n, y);
        return;
    }
    __m256 s = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) s = _mm256_add_ps(s, _mm256_loadu_ps(x + i));
    const float mean = hsum8(s) / n;
    const __m256 vm = _mm256_set1_ps(mean);
    __m256 v = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) {
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
        v = _mm256_fmadd_ps(d, d, v);
    }
    const __m256 inv = _mm256_set1_ps(1.0f / sqrtf(hsum8(v) / n + 1e-5f));
    for (int i = 0; i < n; i += 8) {
        __m256 d = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), inv);
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(d, _mm256_loadu_ps(gamma + i), _mm256_loadu_ps(beta + i)));
    }
}

/* GELU(x) = x·Φ(x) with erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7). */
AVX2 static void gelu_avx2(float *x, size_t n) {
    const __m256 p = _mm256_set1_ps(0.3275911f), a1 = _mm256_set1_ps(0.254829592f),
                 a2 = _mm256_set1_ps(-0.284496736f), a3 = _mm256_set1_ps(1.421413741f),
                 a4 = _mm256_set1_ps(-1.453152027f), a5 = _mm256_set1_ps(1.061405429f),
                 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f),
                 rs2 = _mm256_set1_ps(0.70710678118654752f), sign = _mm256_set1_ps(-0.0f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 z = _mm256_mul_ps(v, rs2);
        __m256 az = _mm256_andnot_ps(sign, z);
        __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(p, az, one));
        __m256 poly = _mm256_fmadd_ps(a5, t, a4);
        poly = _mm256_fmadd_ps(poly, t, a3);
        poly = _mm256_fmadd_ps(poly, t, a2);
        poly = _mm256_fmadd_ps(poly, t, a1);
        poly = _mm256_mul_ps(poly, t);
        /* exp(−az²) from −80 down is < 2^-115: 1 − poly·e rounds to 1 either way, but below
         * about −87 its product is subnormal, a microcode assist per lane on Intel cores (two
         * thirds of the encoder's GELU time, perf, base on long120); clamped, the same bits */
        __m256 e = exp8(_mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(az, az)), _mm256_set1_ps(-80.0f)));
        __m256 erf_abs = _mm256_fnmadd_ps(poly, e, one);
        __m256 erf = _mm256_or_ps(erf_abs, _mm256_and_ps(sign, z));
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, erf)));
    }
    if (i < n) vec_scalar.gelu(x + i, n - i);
}

AVX2 static void f32_to_f16_lanes_avx2(const float *src, uint16_t *dst, size_t n) {
    /* ld_perm's lanes (elements 0–3, 8–11, then 4–7, 12–15) are the lane order itself */
    /* saturated to ±65504: the kernels read an infinite half as a finite value */
    const __m256 hi = _mm256_set1_ps(65504.0f), lo = _mm256_set1_ps(-65504.0f);
    for (size_t g = 0; g < n; g += 16) {
        const __m256 a = _mm256_max_ps(_mm256_min_ps(ld_perm(src + g), hi), lo);
        const __m256 b = _mm256_max_ps(_mm256_min_ps(ld_perm(src + g + 4), hi), lo);
        _mm_storeu_si128((__m128i *)(dst + g), _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT));
        _mm_storeu_si128((__m128i *)(dst + g + 8), _mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT));
    }
}

AVX2 static double sum_exp_avx2(const float *x, int n, float m) {
    const __m256 vm = _mm256_set1_ps(m);
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double lanes[4];
    _mm256_storeu_pd(lanes, _mm256_add_pd(a0, a1));
    double s = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
    if (i < n) {
        float t[8] __attribute__((aligned(32)));
        for (int k = 0; k < 8; k++) t[k] = i + k < n ? x[i + k] - m : -INFINITY;
        _mm256_store_ps(t, exp8(_mm256_load_ps(t)));
        for (int k = 0; k < n - i; k++) s += t[k];
    }
    return s;
}

AVX2 static void f16_to_f32_avx2(const uint16_t *src, float *dst, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, ld_h8(src + i));
    for (; i < n; i++) dst[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(src[i])));
}

const vec_kernels vec_avx2 = {
    .gemv_f32 = gemv_f32_avx2,
    .gemv_f16 = gemv_f16_avx2,
    .layernorm = layernorm_avx2,
    .gelu = gelu_avx2,
    .attention = vec_avx2_attention,
    .f32_to_f16_lanes = f32_to_f16_lanes_avx2,
    .attention_f16 = vec_avx2_attention_f16,
    .sum_exp = sum_exp_avx2,
    .gemv_f16_rows = gemv_f16_rows_avx2,
    .gemv_f16_batch = gemv_f16_batch_avx2,
    .dot_i8_blocks = dot_i8_blocks_avx2,
    .screen_build_row = screen_build_row_avx2,
    .f16_to_f32 = f16_to_f32_avx2,
};

const vec_kernels vec_avx512 = {
    .gemv_f32 = gemv_f32_avx2,
    .gemv_f16 = vec_avx512_gemv_f16,
    .layernorm = layernorm_avx2,
    .gelu = vec_avx512_gelu,
    .attention = vec_avx512_attention,
    .f32_to_f16_lanes = f32_to_f16_lanes_avx2,
    .attention_f16 = vec_avx512_attention_f16,
    .sum_exp = sum_exp_avx2,
    .gemv_f16_rows = vec_avx512_gemv_f16_rows,
    .gemv_f16_rows_multi = vec_avx512_gemv_f16_rows_multi,
    .gemv_f16_batch = vec_avx512_gemv_f16_batch,
    .gemv_f16_panel = vec_avx512_gemv_f16_panel,
    .dot_i8_blocks = dot_i8_blocks_avx2,
    .screen_build_row = screen_build_row_avx2,
    .f16_to_f32 = f16_to_f32_avx2,
};

#endif
