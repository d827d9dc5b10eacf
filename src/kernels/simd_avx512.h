/* simd_avx512.h — 16-lane versions of simd_avx2.h's expf helpers, the same operations lane for
 * lane (so the same bits), for the AVX-512 kernels (vec_avx512.c, streaming_avx512.c). */
#ifndef STENO_KERNELS_SIMD_AVX512_H
#define STENO_KERNELS_SIMD_AVX512_H

#include <immintrin.h>
#include <math.h>

#include "kernels/simd_avx2.h" /* EXP8_LO, EXP8_HI */

#define AVX512_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"
#define AVX512I __attribute__((target(AVX512_TARGET), always_inline)) static inline

/* exp8_clamped */
AVX512I __m512 exp16_clamped(__m512 x) {
    const __m512 fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
    x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), x);
    __m512 y = _mm512_set1_ps(1.9875691500E-4f);
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.3981999507E-3f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(8.3334519073E-3f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(4.1665795894E-2f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.6666665459E-1f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(5.0000001201E-1f));
    y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
    const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(fx), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
}

/* exp8: any input, exp(−inf) = 0 exactly (−inf lanes computed as exp(0), then zeroed: no
 * subnormal product) */
AVX512I __m512 exp16(__m512 x) {
    const __mmask16 ninf = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ);
    x = _mm512_maskz_mov_ps((__mmask16)~ninf, x);
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(EXP8_LO)), _mm512_set1_ps(EXP8_HI));
    return _mm512_maskz_mov_ps((__mmask16)~ninf, exp16_clamped(x));
}

/* exp8_nonpos: finite x <= 0 (a −inf lane gives an unspecified value, not 0: callers zero those lanes) */
AVX512I __m512 exp16_nonpos(__m512 x) {
    x = _mm512_maskz_mov_ps((__mmask16)~_mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ), x);
    return exp16_clamped(_mm512_max_ps(x, _mm512_set1_ps(EXP8_LO)));
}

#endif
