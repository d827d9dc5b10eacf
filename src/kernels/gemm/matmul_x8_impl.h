/* matmul_x8_impl.h — the x8 kernels (matmul_x8.h), included once by each xmat_<isa>.c with:
 *   XM_TGT                 the target attribute of the isa
 *   XM_SFX                 the suffix of the table function
 *   XM_DPBUSD(acc, u, s)   acc + eight int32 lanes Σ_{k<4} u[4i+k]·s[4i+k] (u unsigned, s signed bytes;
 *                          exact for u <= 31 with vpmaddubsw, any u with vpdpbusd)
 *   XM_Q8_SIGNED           (AVX2) q8_0 by ggml's sign trick, |w|·sign(y, w), instead of the offset
 *                          form u = w + 128, which vpmaddubsw would saturate; equal for every
 *                          activation steno quantizes (a code −128 only in zero-scale blocks,
 *                          tests/unit/test_dot_rows.c)
 *   XM_MAX_COLS            activation rows per call (8 with 32 vector registers, 4 with 16)
 * Lane r of every vector is weight row r of the group; each lane does the scalar reference's
 * operations (matmul_x8.c scalar_kernel) in its order: exact int32 block dot, one float multiply of the
 * two scales, one fma (q4_1: a second fma with the min and the activation block sum). */
#include <immintrin.h>

#include "kernels/gemm/matmul_x8.h"

#define XM_CAT_(a, b) a##b
#define XM_CAT(a, b) XM_CAT_(a, b)
#define XM_INLINE XM_TGT static inline __attribute__((always_inline))

/* the block's exact dots for one activation row: isum (initialised by the caller) += Σ_k ch[k]·y */
XM_INLINE __m256i xm_dot8(__m256i isum, const __m256i *ch, const int8_t *y) {
    const steno_xm_i32u *w = (const steno_xm_i32u *)y;
    /* two dependency chains of four: integer sums, exact in any order, and half the latency */
    __m256i isum2 = _mm256_setzero_si256();
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
        isum = XM_DPBUSD(isum, ch[k], _mm256_set1_epi32(w[k]));
        isum2 = XM_DPBUSD(isum2, ch[k + 4], _mm256_set1_epi32(w[k + 4]));
    }
    return _mm256_add_epi32(isum, isum2);
}

XM_INLINE void xm_nibbles(const uint8_t *o, __m256i *ch) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(o + 32 * i));
        ch[i] = _mm256_and_si256(v, m4);
        ch[i + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
}

/* q5_0: chunk k = nibbles | bit k of the high-bit vector, moved to bit 4 */
XM_INLINE void xm_q5(const uint8_t *o, __m256i *ch) {
    xm_nibbles(o, ch);
    const __m256i hb = _mm256_loadu_si256((const __m256i *)(o + 128));
    _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) {
        const __m256i bit = _mm256_and_si256(hb, _mm256_set1_epi8((char)(1 << k)));
        const __m256i b4 = k < 4 ? _mm256_slli_epi16(bit, 4 - k) : k > 4 ? _mm256_srli_epi16(bit, k - 4) : bit;
        ch[k] = _mm256_or_si256(ch[k], b4);
    }
}

#ifdef XM_Q8_SIGNED
/* Σ_k |w_k|·sign(y, w_k) with vpmaddubsw + vpmaddwd(1), the AVX2 q8_0 block dot */
XM_INLINE __m256i xm_dot8_signed(const __m256i *ch, const __m256i *ach, const int8_t *y) {
    const steno_xm_i32u *w = (const steno_xm_i32u *)y;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i isum = _mm256_setzero_si256(), isum2 = _mm256_setzero_si256();
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
        const __m256i sy = _mm256_sign_epi8(_mm256_set1_epi32(w[k]), ch[k]);
        const __m256i sy2 = _mm256_sign_epi8(_mm256_set1_epi32(w[k + 4]), ch[k + 4]);
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(ach[k], sy), ones));
        isum2 = _mm256_add_epi32(isum2, _mm256_madd_epi16(_mm256_maddubs_epi16(ach[k + 4], sy2), ones));
    }
    return _mm256_add_epi32(isum, isum2);
}
#endif

/* q4_K (matmul_x8.c pack_q4_K): per sub-block the q4_1 kernel's steps with the float scale d·sc and
 * min dmin·m, products exact in float, so each lane equals matmul_x8.c scalar_q4_K */
XM_INLINE void xm_kernel_q4K(int nb, const uint8_t *g, const int8_t *ya, const float *yd, const void *ye, const int NC,
                             float *out) {
    __m256 acc[XM_MAX_COLS];
    _Pragma("GCC unroll 8") for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();
    for (int s = 0; s < nb / 8; s++) {
        const uint8_t *base = g + (size_t)s * XM_Q4K_SUPER;
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)base));
        const __m256 mx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(base + 16)));
        for (int j = 0; j < 8; j++) {
            const uint8_t *o = base + 32 + 144 * j;
            const int b = s * 8 + j;
            __m256i ch[8];
            xm_nibbles(o, ch);
            const __m256 dsc =
                _mm256_mul_ps(dx, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(o + 128)))));
            const __m256 msc =
                _mm256_mul_ps(mx, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(o + 136)))));
            _Pragma("GCC unroll 8") for (int c = 0; c < NC; c++) {
                const size_t at = (size_t)b * NC + c;
                const __m256i isum = xm_dot8(_mm256_setzero_si256(), ch, ya + at * 32);
                acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(dsc, _mm256_set1_ps(yd[at])), _mm256_cvtepi32_ps(isum), acc[c]);
                acc[c] = _mm256_fnmadd_ps(msc, _mm256_set1_ps(((const float *)ye)[at]), acc[c]);
            }
        }
    }
    _Pragma("GCC unroll 8") for (int c = 0; c < NC; c++) _mm256_storeu_ps(out + 8 * c, acc[c]);
}

/* q6_K (matmul_x8.c pack_q6_K): the two halves' exact dots, scaled by their int8 scales (exactly), one
 * fma; each lane equals matmul_x8.c scalar_q6_K */
XM_INLINE void xm_kernel_q6K(int nb, const uint8_t *g, const int8_t *ya, const float *yd, const void *ye, const int NC,
                             float *out) {
    __m256 acc[XM_MAX_COLS];
    _Pragma("GCC unroll 8") for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int s = 0; s < nb / 8; s++) {
        const uint8_t *base = g + (size_t)s * XM_Q6K_SUPER;
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)base));
        for (int j = 0; j < 8; j++) {
            const uint8_t *o = base + 16 + 208 * j;
            const int b = s * 8 + j;
            __m256i ch[8];
            const __m256i h0 = _mm256_loadu_si256((const __m256i *)(o + 128));
            const __m256i h1 = _mm256_loadu_si256((const __m256i *)(o + 160));
            _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(o + 32 * i));
                /* bits 2i..2i+1 of the pair vector to bits 4..5 */
                const __m256i p0 = _mm256_and_si256(h0, _mm256_set1_epi8((char)(3 << (2 * i))));
                const __m256i p1 = _mm256_and_si256(h1, _mm256_set1_epi8((char)(3 << (2 * i))));
                const __m256i s0 = i < 2 ? _mm256_slli_epi16(p0, 4 - 2 * i) : i > 2 ? _mm256_srli_epi16(p0, 2) : p0;
                const __m256i s1 = i < 2 ? _mm256_slli_epi16(p1, 4 - 2 * i) : i > 2 ? _mm256_srli_epi16(p1, 2) : p1;
                ch[i] = _mm256_or_si256(_mm256_and_si256(v, m4), s0);
                ch[i + 4] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), s1);
            }
            /* the int32 sum sc_0·i_0 + sc_1·i_1 in float: |i_h| <= 2^16, |sc| <= 2^7, so both products
             * and their sum (|.| <= 2^24) are exact, equal to the scalar reference's int32 total
             * converted once; cheaper than two vpmulld */
            const __m256 sc0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(o + 192))));
            const __m256 sc1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(o + 200))));
            _Pragma("GCC unroll 8") for (int c = 0; c < NC; c++) {
                const size_t at = (size_t)b * NC + c;
                const steno_xm_i32u *w = (const steno_xm_i32u *)(ya + at * 32);
                __m256i i0 = _mm256_set1_epi32(((const int32_t *)ye)[2 * at]);
                __m256i i1 = _mm256_set1_epi32(((const int32_t *)ye)[2 * at + 1]);
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
                    i0 = XM_DPBUSD(i0, ch[k], _mm256_set1_epi32(w[k]));
                    i1 = XM_DPBUSD(i1, ch[k + 4], _mm256_set1_epi32(w[k + 4]));
                }
                const __m256 tot = _mm256_fmadd_ps(sc1, _mm256_cvtepi32_ps(i1), _mm256_mul_ps(sc0, _mm256_cvtepi32_ps(i0)));
                acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(yd[at])), tot, acc[c]);
            }
        }
    }
    _Pragma("GCC unroll 8") for (int c = 0; c < NC; c++) _mm256_storeu_ps(out + 8 * c, acc[c]);
}

/* TYPE 0: q4_0 (offset −8Σy), 1: q4_1 (+ m·s), 2: q8_0 (u = w ^ 0x80, offset −128Σy; AVX2: the sign
 * trick, no offset), 3: q5_0 (offset −16Σy) */
XM_INLINE void xm_kernel(const int TYPE, int nb, const uint8_t *g, const int8_t *ya, const float *yd, const void *ye,
                         const int NC, float *out) {
    if (TYPE == 4) {
        xm_kernel_q4K(nb, g, ya, yd, ye, NC, out);
        return;
    }
    if (TYPE == 5) {
        xm_kernel_q6K(nb, g, ya, yd, ye, NC, out);
        return;
    }
    const size_t bb = TYPE == 0 ? 144 : TYPE == 1 ? 160 : TYPE == 3 ? 176 : 272;
    const size_t so = TYPE == 2 ? 256 : TYPE == 3 ? 160 : 128; /* the scales' offset in a block group */
    __m256 acc[XM_MAX_COLS];
    _Pragma("GCC unroll 8") for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const uint8_t *o = g + (size_t)b * bb;
        __m256i ch[8];
#ifdef XM_Q8_SIGNED
        __m256i ach[8];
#endif
        if (TYPE == 2) {
#ifdef XM_Q8_SIGNED
            _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) {
                ch[k] = _mm256_loadu_si256((const __m256i *)(o + 32 * k));
                ach[k] = _mm256_sign_epi8(ch[k], ch[k]);
            }
#else
            const __m256i flip = _mm256_set1_epi8((char)0x80);
            _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
                ch[k] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(o + 32 * k)), flip);
#endif
        } else if (TYPE == 3) {
            xm_q5(o, ch);
        } else {
            xm_nibbles(o, ch);
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + so)));
        __m256 mx = _mm256_setzero_ps();
        if (TYPE == 1) mx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 144)));
        _Pragma("GCC unroll 8") for (int c = 0; c < NC; c++) {
            const size_t at = (size_t)b * NC + c;
#ifdef XM_Q8_SIGNED
            const __m256i isum = TYPE == 2 ? xm_dot8_signed(ch, ach, ya + at * 32)
                                           : xm_dot8(TYPE == 1 ? _mm256_setzero_si256()
                                                               : _mm256_set1_epi32(((const int32_t *)ye)[at]),
                                                     ch, ya + at * 32);
#else
            const __m256i init = TYPE == 1 ? _mm256_setzero_si256() : _mm256_set1_epi32(((const int32_t *)ye)[at]);
            const __m256i isum = xm_dot8(init, ch, ya + at * 32);
#endif
            const __m256 d = _mm256_mul_ps(dx, _mm256_set1_ps(yd[at]));
            acc[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc[c]);
            if (TYPE == 1) acc[c] = _mm256_fmadd_ps(mx, _mm256_set1_ps(((const float *)ye)[at]), acc[c]);
        }
    }
    _Pragma("GCC unroll 8") for (int c = 0; c < NC; c++) _mm256_storeu_ps(out + 8 * c, acc[c]);
}

#define XM_ONE(T, TI, K)                                                                           \
    XM_TGT static void XM_CAT(XM_CAT(xm_##T##_, K), XM_SFX)(int nb, const uint8_t *g, const int8_t *ya, \
                                                            const float *yd, const void *ye, float *out) { \
        xm_kernel(TI, nb, g, ya, yd, ye, K, out);                                                   \
    }
#define XM_TYPE(T, TI)                                                                             \
    XM_ONE(T, TI, 1) XM_ONE(T, TI, 2) XM_ONE(T, TI, 3) XM_ONE(T, TI, 4) XM_WIDE(T, TI)             \
    static void XM_CAT(xm_##T##_, XM_SFX)(int nb, const uint8_t *g, const int8_t *ya, const float *yd, \
                                          const void *ye, int nc, float *out) {                    \
        switch (nc) {                                                                              \
        case 1: XM_CAT(xm_##T##_1, XM_SFX)(nb, g, ya, yd, ye, out); break;                         \
        case 2: XM_CAT(xm_##T##_2, XM_SFX)(nb, g, ya, yd, ye, out); break;                         \
        case 3: XM_CAT(xm_##T##_3, XM_SFX)(nb, g, ya, yd, ye, out); break;                         \
        case 4: XM_CAT(xm_##T##_4, XM_SFX)(nb, g, ya, yd, ye, out); break;                         \
        XM_WIDE_CASES(T)                                                                           \
        }                                                                                          \
    }
#if XM_MAX_COLS > 4
#define XM_WIDE(T, TI) XM_ONE(T, TI, 5) XM_ONE(T, TI, 6) XM_ONE(T, TI, 7) XM_ONE(T, TI, 8)
#define XM_WIDE_CASES(T)                                                                           \
    case 5: XM_CAT(xm_##T##_5, XM_SFX)(nb, g, ya, yd, ye, out); break;                             \
    case 6: XM_CAT(xm_##T##_6, XM_SFX)(nb, g, ya, yd, ye, out); break;                             \
    case 7: XM_CAT(xm_##T##_7, XM_SFX)(nb, g, ya, yd, ye, out); break;                             \
    case 8: XM_CAT(xm_##T##_8, XM_SFX)(nb, g, ya, yd, ye, out); break;
#else
#define XM_WIDE(T, TI)
#define XM_WIDE_CASES(T)
#endif

XM_TYPE(q4_0, 0)
XM_TYPE(q4_1, 1)
XM_TYPE(q8_0, 2)
XM_TYPE(q5_0, 3)
XM_TYPE(q4_K, 4)
XM_TYPE(q6_K, 5)

static const steno_xmat_kernels XM_CAT(xm_table_, XM_SFX) = {XM_CAT(xm_q4_0_, XM_SFX), XM_CAT(xm_q4_1_, XM_SFX),
                                                             XM_CAT(xm_q8_0_, XM_SFX), XM_CAT(xm_q5_0_, XM_SFX),
                                                             XM_CAT(xm_q4_K_, XM_SFX), XM_CAT(xm_q6_K_, XM_SFX),
                                                             XM_MAX_COLS,
#ifdef XM_X16_TABLE
                                                             XM_X16_TABLE
#else
                                                             {0}
#endif
};

const steno_xmat_kernels *XM_CAT(steno_xmat_kernels_, XM_SFX)(void) { return &XM_CAT(xm_table_, XM_SFX); }
