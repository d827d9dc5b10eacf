/* wq_mlx_x86.c — the MLX affine dot kernels (wq.h) for AVX2 and AVX512-VNNI (ymm, AVX512VL).
 * Only the integer sums of a 32-value block are vectorized (exact: 4-bit codes × int8 through
 * vpmaddubsw cannot saturate, 2·15·127 < 32767; 8-bit codes are widened to int16 for vpmaddwd on
 * AVX2, and vpdpbusd accumulates exactly in int32); the float steps are wq_mlx_dot_scalar's, in its
 * order, so every instruction set returns the same bits. Compiled with target attributes, chosen
 * at run time (wq.c). */
#include "kernels/quant/wq.h"

#include <string.h>

#include "core/fp16.h"
#include "kernels/quant/blocks.h"

#ifdef STENO_HAVE_X86
#include <immintrin.h>

#define WQ_BODY(TGT, NAME, DOT4, DOT8)                                                                            \
    TGT static inline int NAME##_hsum(__m256i v) {                                                               \
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));                    \
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));                                                        \
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));                                                        \
        return _mm_cvtsi128_si32(s);                                                                             \
    }                                                                                                            \
    TGT float NAME(int n, int bits, int G, const uint32_t *w, const uint16_t *s, const uint16_t *bb,              \
                   const void *xa) {                                                                             \
        const int8_t *y = xa;                                                                                    \
        const float *d = (const float *)((const uint8_t *)xa + (((size_t)n + 63) & ~(size_t)63)), *ds = d + n / 32; \
        const uint8_t *wb = (const uint8_t *)w;                                                                  \
        const __m128i m4 = _mm_set1_epi8(0x0F);                                                                  \
        float acc = 0.0f;                                                                                        \
        for (int g = 0; g < n / G; g++) {                                                                        \
            float sq = 0.0f, sx = 0.0f;                                                                          \
            for (int b = g * G / 32; b < (g + 1) * G / 32; b++) {                                                \
                const __m256i yv = _mm256_loadu_si256((const __m256i *)(y + 32 * b));                            \
                int isum;                                                                                        \
                if (bits == 4) {                                                                                 \
                    const __m128i raw = _mm_loadu_si128((const __m128i *)(wb + 16 * b));                         \
                    const __m128i lo = _mm_and_si128(raw, m4), hi = _mm_and_si128(_mm_srli_epi16(raw, 4), m4);   \
                    const __m256i q = _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));    \
                    isum = NAME##_hsum(DOT4(q, yv));                                                             \
                } else {                                                                                         \
                    const __m256i q = _mm256_loadu_si256((const __m256i *)(wb + 32 * b));                        \
                    isum = NAME##_hsum(DOT8(q, yv));                                                             \
                }                                                                                                \
                sq += d[b] * (float)isum;                                                                        \
                sx += ds[b];                                                                                     \
            }                                                                                                    \
            acc += steno_fp16_to_f32(s[g]) * sq + steno_fp16_to_f32(bb[g]) * sx;                                 \
        }                                                                                                        \
        return acc;                                                                                              \
    }

#define T_AVX2 __attribute__((target("avx2,fma,f16c")))
T_AVX2 static inline __m256i dot4_avx2(__m256i q, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, y), _mm256_set1_epi16(1));
}
T_AVX2 static inline __m256i dot8_avx2(__m256i q, __m256i y) {
    const __m256i q0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(q)), q1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(q, 1));
    const __m256i y0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(y)), y1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(y, 1));
    return _mm256_add_epi32(_mm256_madd_epi16(q0, y0), _mm256_madd_epi16(q1, y1));
}
WQ_BODY(T_AVX2, wq_mlx_dot_avx2, dot4_avx2, dot8_avx2)

#if (defined(__clang__) && __clang_major__ >= 8) || (!defined(__clang__) && __GNUC__ >= 8)
#define T_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))
T_VNNI static inline __m256i dot_vnni(__m256i q, __m256i y) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), q, y); }
WQ_BODY(T_VNNI, wq_mlx_dot_avx512vnni, dot_vnni, dot_vnni)
#else
float wq_mlx_dot_avx512vnni(int n, int bits, int G, const uint32_t *w, const uint16_t *s, const uint16_t *bb,
                            const void *xa) {
    return wq_mlx_dot_avx2(n, bits, G, w, s, bb, xa);
}
#endif
#endif
