/* act_avx2.c — AVX2 activation quantizers, byte-identical to the scalar ones in quant.c
 * (see act.h). q8_0/q8_1 follow llama.cpp ggml-cpu/arch/x86/quants.c quantize_row_q8_0/_q8_1
 * (AVX2 branch: max of |x| over 4 vectors, _mm256_round_ps nearest = half to even like nearbyintf,
 * saturating packs); q8_K vectorizes ggml-quants.c quantize_row_q8_K_ref (its nearest_int, the
 * 1.5·2^23 trick, is also half to even for |v| < 2^22, which holds once the scale is finite).
 * Why the equality holds for finite inputs: |x·id| ≤ 127·(1 + 2^-23)^2 rounds to at most 127, so
 * neither the scalar clamps nor the packs' saturation ever act; max over |x| is order-free. Blocks
 * with a NaN or an infinity, or a scale that overflows, are handed to the scalar code. */
#include "kernels/quant/act.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/quant/blocks.h"

#define TGT __attribute__((target("avx2,fma,f16c")))

/* |v| and a lane mask of "not finite" (NaN or ±inf) for one vector. */
TGT static inline __m256 absv(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

TGT static inline float hmax8(__m256 m) {
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    return _mm_cvtss_f32(m4);
}

/* 32 floats × id → 32 int8 in order; *sum gets the sum of the 32 integers. */
TGT static inline __m256i quant32(const float *x, float id, int *sum) {
    const __m256 mul = _mm256_set1_ps(id);
    __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 0), mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8), mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 16), mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 24), mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    if (sum) {
        __m256i s = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
        *sum = _mm_cvtsi128_si32(s4);
    }
    i0 = _mm256_packs_epi32(i0, i1);
    i2 = _mm256_packs_epi32(i2, i3);
    i0 = _mm256_packs_epi16(i0, i2);
    return _mm256_permutevar8x32_epi32(i0, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* amax of 32 floats, or -1 when one of them is NaN or infinite. */
TGT static inline float amax32(const float *x) {
    const __m256 inf = _mm256_set1_ps(INFINITY);
    __m256 a0 = absv(_mm256_loadu_ps(x)), a1 = absv(_mm256_loadu_ps(x + 8));
    __m256 a2 = absv(_mm256_loadu_ps(x + 16)), a3 = absv(_mm256_loadu_ps(x + 24));
    /* !(|x| < inf) is true for inf and NaN */
    __m256 bad = _mm256_or_ps(_mm256_or_ps(_mm256_cmp_ps(a0, inf, _CMP_NLT_UQ), _mm256_cmp_ps(a1, inf, _CMP_NLT_UQ)),
                              _mm256_or_ps(_mm256_cmp_ps(a2, inf, _CMP_NLT_UQ), _mm256_cmp_ps(a3, inf, _CMP_NLT_UQ)));
    if (_mm256_movemask_ps(bad)) return -1.0f;
    return hmax8(_mm256_max_ps(_mm256_max_ps(a0, a1), _mm256_max_ps(a2, a3)));
}

TGT void steno_quantize_q8_0_avx2(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / 32; i++, x += 32) {
        const float amax = amax32(x);
        const float id = amax != 0.0f ? 127.f / amax : 0.0f;
        if (amax < 0.0f || id == INFINITY) {
            steno_quantize_q8_0_scalar(x, y + i, 32);
            continue;
        }
        y[i].d = (uint16_t)_cvtss_sh(amax / 127.f, _MM_FROUND_TO_NEAREST_INT);
        _mm256_storeu_si256((__m256i *)y[i].qs, quant32(x, id, NULL));
    }
}

TGT void steno_quantize_q8_1_avx2(const float *x, void *vy, int64_t n) {
    block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / 32; i++, x += 32) {
        const float amax = amax32(x);
        const float id = amax != 0.0f ? 127.f / amax : 0.0f;
        if (amax < 0.0f || id == INFINITY) {
            steno_quantize_q8_1_scalar(x, y + i, 32);
            continue;
        }
        const float d = amax / 127.f;
        int sum;
        _mm256_storeu_si256((__m256i *)y[i].qs, quant32(x, id, &sum));
        y[i].d = (uint16_t)_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        y[i].s = (uint16_t)_cvtss_sh(d * (float)sum, _MM_FROUND_TO_NEAREST_INT);
    }
}

TGT void steno_quantize_q8_K_avx2(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    const __m256 inf = _mm256_set1_ps(INFINITY);
    for (int64_t i = 0; i < n / 256; i++, x += 256) {
        __m256 m = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
        for (int j = 0; j < 256; j += 8) {
            const __m256 a = absv(_mm256_loadu_ps(x + j));
            bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));
            m = _mm256_max_ps(m, a);
        }
        const float amax = hmax8(m);
        if (_mm256_movemask_ps(bad) || amax == 0.0f) {
            steno_quantize_q8_K_scalar(x, y + i, 256);
            continue;
        }
        /* the scalar loop keeps the first element of largest magnitude (strict >) */
        const __m256 am = _mm256_set1_ps(amax);
        int first = 0;
        for (int j = 0; j < 256; j += 8) {
            const int mask = _mm256_movemask_ps(_mm256_cmp_ps(absv(_mm256_loadu_ps(x + j)), am, _CMP_EQ_OQ));
            if (mask) {
                first = j + __builtin_ctz((unsigned)mask);
                break;
            }
        }
        const float iscale = -127.f / x[first];
        if (!(fabsf(iscale) < INFINITY)) {
            steno_quantize_q8_K_scalar(x, y + i, 256);
            continue;
        }
        const __m256 mul = _mm256_set1_ps(iscale);
        for (int j = 0; j < 256; j += 64) {
            __m256i v[8];
            for (int k = 0; k < 8; k++)
                v[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * k), mul),
                                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            /* bsums of the 4 groups of 16 */
            const __m256i a = _mm256_add_epi32(v[0], v[1]), b = _mm256_add_epi32(v[2], v[3]);
            const __m256i c = _mm256_add_epi32(v[4], v[5]), d = _mm256_add_epi32(v[6], v[7]);
            const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
            const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            _mm_storel_epi64((__m128i *)(y[i].bsums + j / 16), _mm_packs_epi32(s4, s4));
            const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
            for (int k = 0; k < 8; k += 4) {
                __m256i p0 = _mm256_packs_epi32(v[k], v[k + 1]), p2 = _mm256_packs_epi32(v[k + 2], v[k + 3]);
                p0 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p0, p2), perm);
                _mm256_storeu_si256((__m256i *)(y[i].qs + j + 8 * k), p0);
            }
        }
        y[i].d = 1 / iscale;
    }
}

TGT void steno_f32_to_f16_row_f16c(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))) {
            /* vcvtps2ph keeps a NaN's payload; steno_f32_to_f16 gives the canonical quiet NaN */
            for (int k = 0; k < 8; k++) y[i + k] = steno_f32_to_f16(x[i + k]);
            continue;
        }
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; i++) y[i] = steno_f32_to_f16(x[i]);
}

#endif
