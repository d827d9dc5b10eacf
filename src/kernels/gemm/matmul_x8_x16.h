/* matmul_x8_x16.h — two x8 groups per instruction: the q4_0, q4_1, q8_0 and q5_0 kernels of
 * matmul_x8_impl.h on 512-bit registers (AVX512F/BW + AVX512-VNNI), included by matmul_x8_avx512vnni.c
 * before matmul_x8_impl.h, which puts them in its table (steno_xmat_kernels.x16).
 *
 * Lanes 0–7 of every vector are the weight rows of group g, lanes 8–15 those of group g + 1 (its
 * block group gstride bytes further on). No repacking: the two groups' 32-byte chunks are loaded
 * into the two halves of one zmm. Each lane does exactly what the ymm kernel's lane does (exact
 * int32 block dot by vpdpbusd, one float multiply of the two scales, one fma; q4_1 a second fma),
 * so every output is bit-identical to the x8 kernel's and to the scalar reference. Why: the ymm
 * kernel spends one vpdpbusd per 4 bytes of 8 rows per activation row; here the same instruction
 * count serves 16 rows (bench/matmul_x.c). */
#ifndef STENO_KERNELS_XMAT_X16_H
#define STENO_KERNELS_XMAT_X16_H

#include <immintrin.h>

#include "kernels/gemm/matmul_x8.h"

#define X16_TGT __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))
#define X16_INLINE X16_TGT static inline __attribute__((always_inline))
#define X16_PF 4 /* weight blocks prefetched ahead (the git history of docs/PERFORMANCE.md) */

/* the 32-byte chunks at p (group g) and p + gs (group g + 1) as one zmm */
X16_INLINE __m512i x16_pair(const uint8_t *p, size_t gs) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p)),
                              _mm256_loadu_si256((const __m256i *)(p + gs)), 1);
}

/* 8 fp16 values at p and 8 at p + gs as 16 floats */
X16_INLINE __m512 x16_halves(const uint8_t *p, size_t gs) {
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p)),
                                                   _mm_loadu_si128((const __m128i *)(p + gs)), 1));
}

X16_INLINE void x16_nibbles(const uint8_t *o, size_t gs, __m512i *ch) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
        const __m512i v = x16_pair(o + 32 * i, gs);
        ch[i] = _mm512_and_si512(v, m4);
        ch[i + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    }
}

/* TYPE 0: q4_0, 1: q4_1, 2: q8_0, 3: q5_0 (matmul_x8_impl.h xm_kernel); out[c·ldo + lane] */
X16_INLINE void x16_kernel(const int TYPE, int nb, const uint8_t *g, size_t gs, const int8_t *ya, const float *yd,
                           const void *ye, const int NC, float *out, int64_t ldo) {
    const size_t bb = TYPE == 0 ? 144 : TYPE == 1 ? 160 : TYPE == 3 ? 176 : 272;
    const size_t so = TYPE == 2 ? 256 : TYPE == 3 ? 160 : 128;
    __m512 acc[8];
    _Pragma("GCC unroll 8") for (int c = 0; c < NC; c++) acc[c] = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const uint8_t *o = g + (size_t)b * bb;
        /* both weight streams X16_PF blocks ahead: at 8 activation rows the kernel is compute-heavy
         * enough that the hardware prefetcher falls behind on weights coming from DRAM */
        _Pragma("GCC unroll 3") for (int l = 0; l < 3; l++) {
            _mm_prefetch((const char *)o + X16_PF * bb + 64 * l, _MM_HINT_T0);
            _mm_prefetch((const char *)o + gs + X16_PF * bb + 64 * l, _MM_HINT_T0);
        }
        __m512i ch[8];
        if (TYPE == 2) {
            const __m512i flip = _mm512_set1_epi8((char)0x80);
            _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) ch[k] = _mm512_xor_si512(x16_pair(o + 32 * k, gs), flip);
        } else {
            x16_nibbles(o, gs, ch);
            if (TYPE == 3) { /* chunk k |= bit k of the high-bit vector, moved to bit 4 */
                const __m512i hb = x16_pair(o + 128, gs);
                _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) {
                    const __m512i bit = _mm512_and_si512(hb, _mm512_set1_epi8((char)(1 << k)));
                    const __m512i b4 = k < 4 ? _mm512_slli_epi16(bit, 4 - k) : k > 4 ? _mm512_srli_epi16(bit, k - 4) : bit;
                    ch[k] = _mm512_or_si512(ch[k], b4);
                }
            }
        }
        const __m512 dx = x16_halves(o + so, gs);
        __m512 mx = _mm512_setzero_ps();
        if (TYPE == 1) mx = x16_halves(o + 144, gs);
        _Pragma("GCC unroll 8") for (int c = 0; c < NC; c++) {
            const size_t at = (size_t)b * NC + c;
            const steno_xm_i32u *w = (const steno_xm_i32u *)(ya + at * 32);
            __m512i isum = TYPE == 1 ? _mm512_setzero_si512() : _mm512_set1_epi32(((const int32_t *)ye)[at]);
            /* two dependency chains of four (integer sums: exact in any order) */
            __m512i isum2 = _mm512_setzero_si512();
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
                isum = _mm512_dpbusd_epi32(isum, ch[k], _mm512_set1_epi32(w[k]));
                isum2 = _mm512_dpbusd_epi32(isum2, ch[k + 4], _mm512_set1_epi32(w[k + 4]));
            }
            isum = _mm512_add_epi32(isum, isum2);
            const __m512 d = _mm512_mul_ps(dx, _mm512_set1_ps(yd[at]));
            acc[c] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(isum), acc[c]);
            if (TYPE == 1) acc[c] = _mm512_fmadd_ps(mx, _mm512_set1_ps(((const float *)ye)[at]), acc[c]);
        }
    }
    _Pragma("GCC unroll 8") for (int c = 0; c < NC; c++) _mm512_storeu_ps(out + ldo * c, acc[c]);
}

#define X16_ONE(T, TI, K)                                                                                      \
    X16_TGT static void x16_##T##_##K(int nb, const uint8_t *g, size_t gs, const int8_t *ya, const float *yd, \
                                      const void *ye, float *out, int64_t ldo) {                              \
        x16_kernel(TI, nb, g, gs, ya, yd, ye, K, out, ldo);                                                    \
    }
#define X16_TYPE(T, TI)                                                                                       \
    X16_ONE(T, TI, 1) X16_ONE(T, TI, 2) X16_ONE(T, TI, 3) X16_ONE(T, TI, 4)                                   \
    X16_ONE(T, TI, 5) X16_ONE(T, TI, 6) X16_ONE(T, TI, 7) X16_ONE(T, TI, 8)                                   \
    static void x16_##T(int nb, const uint8_t *g, size_t gs, const int8_t *ya, const float *yd, const void *ye, \
                        int nc, float *out, int64_t ldo) {                                                    \
        switch (nc) {                                                                                         \
        case 1: x16_##T##_1(nb, g, gs, ya, yd, ye, out, ldo); break;                                               \
        case 2: x16_##T##_2(nb, g, gs, ya, yd, ye, out, ldo); break;                                               \
        case 3: x16_##T##_3(nb, g, gs, ya, yd, ye, out, ldo); break;                                               \
        case 4: x16_##T##_4(nb, g, gs, ya, yd, ye, out, ldo); break;                                               \
        case 5: x16_##T##_5(nb, g, gs, ya, yd, ye, out, ldo); break;                                               \
        case 6: x16_##T##_6(nb, g, gs, ya, yd, ye, out, ldo); break;                                               \
        case 7: x16_##T##_7(nb, g, gs, ya, yd, ye, out, ldo); break;                                               \
        default: x16_##T##_8(nb, g, gs, ya, yd, ye, out, ldo); break;                                              \
        }                                                                                                     \
    }

X16_TYPE(q4_0, 0)
X16_TYPE(q4_1, 1)
X16_TYPE(q8_0, 2)
X16_TYPE(q5_0, 3)

#define XM_X16_TABLE {x16_q4_0, x16_q4_1, x16_q8_0, x16_q5_0, 0, 0}

#endif
