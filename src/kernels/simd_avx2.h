/* simd_avx2.h — small AVX2 + FMA + F16C helpers shared by the kernels that are
 * compiled with target attributes (vec_avx2.c, attention_fast.c): horizontal
 * sum and maximum in a fixed tree, float32 expf over 8 lanes, and the exact scaled
 * widening of float16 weights (ld_h16_scaled). Include only
 * from x86-64 GCC/Clang translation units. */
#ifndef STENO_KERNELS_SIMD_AVX2_H
#define STENO_KERNELS_SIMD_AVX2_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))

AVX2 static inline float hsum8(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    __m128 sh = _mm_movehdup_ps(lo);
    lo = _mm_add_ps(lo, sh);
    sh = _mm_movehl_ps(sh, lo);
    return _mm_cvtss_f32(_mm_add_ss(lo, sh));
}

AVX2 static inline float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* expf over 8 lanes already clamped to [−87.34, 88.38]: x = n·ln2 + r, |r| <=
 * ln2/2, e^r by a degree-6 polynomial (Cephes). */
AVX2 static inline __m256 exp8_clamped(__m256 x) {
    __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
    __m256 y = _mm256_set1_ps(1.9875691500E-4f);
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507E-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073E-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894E-2f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459E-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201E-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

#define EXP8_LO (-87.3365478515625f)
#define EXP8_HI 88.3762626647949f

/* expf over 8 lanes, any input; exp(−inf) = 0 exactly. The −inf lanes are computed as exp(0)
 * before being zeroed: clamped to EXP8_LO they would give a subnormal product, and on Intel cores
 * a multiply with a subnormal result takes a microcode assist (the masked positions of a causal
 * prompt block are −inf: 12 % of SmolLM2's prompt evaluation went to that one multiply, perf). */
AVX2 static inline __m256 exp8(__m256 x) {
    const __m256 is_neg_inf = _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ);
    x = _mm256_andnot_ps(is_neg_inf, x);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(EXP8_LO)), _mm256_set1_ps(EXP8_HI));
    return _mm256_andnot_ps(is_neg_inf, exp8_clamped(x));
}

/* exp8 for x <= 0 that is finite or −inf, without the upper clamp: the same results
 * for every finite x <= 0, but a −inf lane gives an unspecified value (exp(0): no
 * subnormal product, see exp8) instead of 0, so callers zero those lanes
 * themselves (the softmax's padding past a block's last key). */
AVX2 static inline __m256 exp8_nonpos(__m256 x) {
    x = _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ), x);
    return exp8_clamped(_mm256_max_ps(x, _mm256_set1_ps(EXP8_LO)));
}

/* reduce4's horizontal part for 8 vectors at once: out[r] = ((x_r[0] + x_r[4])
 * + (x_r[1] + x_r[5])) +
 * ((x_r[2] + x_r[6]) + (x_r[3] + x_r[7])), the additions reduce4 performs after
 * its vertical ones. */
AVX2 static inline __m256 hsum8x8(const __m256 *x) {
    __m256 t[4];
    for (int r = 0; r < 4; r++) /* [x_2r lo + hi | x_2r+1 lo + hi] */
        t[r] = _mm256_add_ps(_mm256_permute2f128_ps(x[2 * r], x[2 * r + 1], 0x20),
                             _mm256_permute2f128_ps(x[2 * r], x[2 * r + 1], 0x31));
    /* hadd(t0, t1) lanes: [x0: a+b, c+d; x2: a+b, c+d | x1: ..; x3: ..]; then the
     * pairs' sums */
    const __m256 u0 = _mm256_hadd_ps(t[0], t[1]), u1 = _mm256_hadd_ps(t[2], t[3]);
    const __m256 v = _mm256_hadd_ps(u0, u1); /* [x0, x2, x4, x6 | x1, x3, x5, x7] */
    return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* 16 halves p[0..15] as two vectors of floats scaled by 2^-112: lo = p[0..3, 8..11], hi =
 * p[4..7, 12..15]. A half's bits shifted into the top of a 32-bit lane, arithmetically shifted
 * right by 3 and with bits 30..28 cleared, are the float with the same sign, exponent field
 * e + 112 − 127 + 127 − 112 (i.e. 2^-112 times the value) and mantissa: exact for normal and
 * subnormal halves (a subnormal half becomes a subnormal float, still exact), without vcvtph2ps,
 * which is slow on some cores (4–5 cycles per 8 halves on this project's Zen machine). Inf and
 * NaN halves would read as finite values; weights never hold them. */
AVX2 static inline void ld_h16_scaled(const uint16_t *p, __m256 *lo, __m256 *hi) {
    const __m256i v = _mm256_loadu_si256((const __m256i *)p), z = _mm256_setzero_si256();
    const __m256i m = _mm256_set1_epi32((int)0x8FFFFFFF);
    *lo = _mm256_castsi256_ps(_mm256_and_si256(_mm256_srai_epi32(_mm256_unpacklo_epi16(z, v), 3), m));
    *hi = _mm256_castsi256_ps(_mm256_and_si256(_mm256_srai_epi32(_mm256_unpackhi_epi16(z, v), 3), m));
}

/* MXCSR.DAZ set by the host process would read the subnormal floats of ld_h16_scaled as 0 */
AVX2 static inline int daz_set(void) { return (_mm_getcsr() & 0x0040) != 0; }

#endif
