/* quant_avx2.c — AVX2 dot kernels for the ggml block types (selected at run time by quant.c when
 * the CPU has AVX2+FMA+F16C). Integer sums per block are exact, as in the scalar kernels; the float
 * accumulation follows llama.cpp's x86 kernels (ggml-cpu/arch/x86/quants.c ggml_vec_dot_*_q8_*, and
 * for q4_K arch/x86/repack.cpp ggml_gemv_q4_K_8x8_q8_K, which llama.cpp uses for q4_K weights on
 * AVX2) lane for lane: bit-identical to llama.cpp for the types checked against llama.cpp's
 * intermediate tensors for SmolLM2 (q4_1, q8_0) and Gemma 3 (q4_K, q5_0, q6_K, q8_0). Technique:
 * maddubs of |x| with sign-adjusted y, madd with scales. */
#include "kernels/quant/blocks.h"

#ifdef STENO_HAVE_X86
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/quant/avx2_lanes.h"

#define TGT __attribute__((target("avx2,fma,f16c")))
/* F16C conversion of one half (exact, like the software one in core/fp16.h). */
#define H2F(h) _cvtsh_ss(h)

/* Σ x*y of 32 signed bytes each, as 8 int32 lanes. */
TGT static inline __m256i dot_i8(__m256i x, __m256i y) {
    __m256i ax = _mm256_sign_epi8(x, x), sy = _mm256_sign_epi8(y, x);
    __m256i p = _mm256_maddubs_epi16(ax, sy);
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* Σ x*y with x unsigned bytes (< 128), y signed bytes, as 8 int32 lanes. */
TGT static inline __m256i dot_u8i8(__m256i x, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
}

TGT float steno_dot_f16_avx2(int n, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 a = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i)));
        __m256 b = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(y + i)));
        acc = _mm256_fmadd_ps(a, b, acc);
    }
    float s = avx2_hsum_ps(acc);
    for (; i < n; i++) s += H2F(x[i]) * H2F(y[i]);
    return s;
}

TGT void steno_f16_axpy_avx2(int n, float a, const void *vx, float *y) {
    const uint16_t *x = vx;
    __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i)));
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, v, _mm256_loadu_ps(y + i)));
    }
    for (; i < n; i++) y[i] += a * H2F(x[i]);
}

TGT void steno_f16_to_f32_avx2(const void *vx, float *y, int64_t n) {
    const uint16_t *x = vx;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    for (; i < n; i++) y[i] = H2F(x[i]);
}

TGT float steno_dot_q4_0_avx2(int n, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int ib = 0; ib < n / 32; ++ib) {
        __m256i q = _mm256_sub_epi8(avx2_unpack_nibbles(x[ib].qs), _mm256_set1_epi8(8));
        __m256i p = dot_i8(q, _mm256_loadu_si256((const __m256i *)y[ib].qs));
        __m256 d = _mm256_set1_ps(H2F(x[ib].d) * H2F(y[ib].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
    }
    return avx2_hsum_ps(acc);
}

TGT float steno_dot_q4_1_avx2(int n, const void *vx, const void *vy) {
    const block_q4_1 *x = vx;
    const block_q8_1 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0;
    for (int ib = 0; ib < n / 32; ++ib) {
        summs += H2F(x[ib].m) * H2F(y[ib].s);
        __m256i p = dot_u8i8(avx2_unpack_nibbles(x[ib].qs), _mm256_loadu_si256((const __m256i *)y[ib].qs));
        __m256 d = _mm256_set1_ps(H2F(x[ib].d) * H2F(y[ib].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
    }
    return avx2_hsum_ps(acc) + summs;
}

TGT float steno_dot_q8_0_avx2(int n, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int ib = 0; ib < n / 32; ++ib) {
        __m256i p = dot_i8(_mm256_loadu_si256((const __m256i *)x[ib].qs),
                           _mm256_loadu_si256((const __m256i *)y[ib].qs));
        __m256 d = _mm256_set1_ps(H2F(x[ib].d) * H2F(y[ib].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
    }
    return avx2_hsum_ps(acc);
}

TGT float steno_dot_q5_0_avx2(int n, const void *vx, const void *vy) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int ib = 0; ib < n / 32; ++ib) {
        __m256i q = avx2_unpack_nibbles(x[ib].qs);
        /* (q | hbit << 4) - 16  ==  q | (hbit ? 0 : 0xF0) as signed bytes */
        __m256i hi = _mm256_andnot_si256(avx2_bytes_from_bits_32(x[ib].qh), _mm256_set1_epi8((char)0xF0));
        q = _mm256_or_si256(q, hi);
        __m256i p = dot_i8(q, _mm256_loadu_si256((const __m256i *)y[ib].qs));
        __m256 d = _mm256_set1_ps(H2F(x[ib].d) * H2F(y[ib].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
    }
    return avx2_hsum_ps(acc);
}

TGT float steno_dot_q5_1_avx2(int n, const void *vx, const void *vy) {
    const block_q5_1 *x = vx;
    const block_q8_1 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0;
    for (int ib = 0; ib < n / 32; ++ib) {
        summs += H2F(x[ib].m) * H2F(y[ib].s);
        __m256i q = avx2_unpack_nibbles(x[ib].qs);
        __m256i hi = _mm256_and_si256(avx2_bytes_from_bits_32(x[ib].qh), _mm256_set1_epi8(0x10));
        q = _mm256_or_si256(q, hi);
        __m256i p = dot_u8i8(q, _mm256_loadu_si256((const __m256i *)y[ib].qs));
        __m256 d = _mm256_set1_ps(H2F(x[ib].d) * H2F(y[ib].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
    }
    return avx2_hsum_ps(acc) + summs;
}

static inline void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
    }
}

/* q4_K: the arithmetic of llama.cpp's repacked q4_K×8 GEMV (arch/x86/repack.cpp
 * ggml_gemv_q4_K_8x8_q8_K), which is what llama.cpp runs for q4_K weights on AVX2: per super-block
 * the exact integer sums Σ scale·(q·q8) and Σ min·bsum, then acc = fma(isum, d·d8, acc),
 * accm = fma(imin, dmin·d8, accm), result acc − accm. */
TGT static inline void q4_K_block_sums(const block_q4_K *xb, const block_q8_K *yb, int32_t *isum, int32_t *imin) {
    uint8_t sc[8], mn[8];
    for (int k = 0; k < 8; k++) scale_min_k4(k, xb->scales, &sc[k], &mn[k]);
    int32_t summ = 0;
    for (int k = 0; k < 8; k++) summ += mn[k] * (yb->bsums[2 * k] + yb->bsums[2 * k + 1]);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const uint8_t *q4 = xb->qs;
    const int8_t *q8 = yb->qs;
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
        __m256i b = _mm256_loadu_si256((const __m256i *)q4);
        __m256i lo = _mm256_and_si256(b, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
        __m256i plo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)q8));
        __m256i phi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(q8 + 32)));
        plo = _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * j]));
        phi = _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * j + 1]));
        sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(plo, phi));
        q4 += 32;
        q8 += 64;
    }
    *isum = avx2_hsum_i32(sumi);
    *imin = summ;
}

TGT float steno_dot_q4_K_avx2(int n, const void *vx, const void *vy) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    float acc = 0, accm = 0;
    for (int i = 0; i < n / 256; ++i) {
        int32_t isum, imin;
        q4_K_block_sums(&x[i], &y[i], &isum, &imin);
        acc = fmaf((float)isum, H2F(x[i].d) * y[i].d, acc);
        accm = fmaf((float)imin, H2F(x[i].dmin) * y[i].d, accm);
    }
    return acc - accm;
}

/* q6_K: llama.cpp's AVX2 ggml_vec_dot_q6_K_q8_K (arch/x86/quants.c), transcribed: eight int32
 * lanes per super-block (bias subtracted per lane), fma into eight float lanes, hsum at the end. */
static const uint8_t k_scale_shuffle[128] = {
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
    4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7,
    8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11,
    12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13, 14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15};

TGT static inline __m256i q6_K_block_lanes(const block_q6_K *xb, const block_q8_K *yb) {
    const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi8(15);
    const uint8_t *q4 = xb->ql, *qh = xb->qh;
    const int8_t *q8 = yb->qs;
    const __m256i q8sums = _mm256_loadu_si256((const __m256i *)yb->bsums);
    const __m128i scales = _mm_loadu_si128((const __m128i *)xb->scales);
    const __m256i scales_16 = _mm256_cvtepi8_epi16(scales);
    const __m256i q8sclsub = _mm256_slli_epi32(_mm256_madd_epi16(q8sums, scales_16), 5);
    __m256i sumi = _mm256_setzero_si256();
    int is = 0;
    for (int j = 0; j < 2; ++j) {
        const __m256i q4bits1 = _mm256_loadu_si256((const __m256i *)q4);
        q4 += 32;
        const __m256i q4bits2 = _mm256_loadu_si256((const __m256i *)q4);
        q4 += 32;
        const __m256i q4bitsH = _mm256_loadu_si256((const __m256i *)qh);
        qh += 32;
        const __m256i q4h_0 = _mm256_slli_epi16(_mm256_and_si256(q4bitsH, m3), 4);
        const __m256i q4h_1 = _mm256_slli_epi16(_mm256_and_si256(q4bitsH, _mm256_set1_epi8(12)), 2);
        const __m256i q4h_2 = _mm256_and_si256(q4bitsH, _mm256_set1_epi8(48));
        const __m256i q4h_3 = _mm256_srli_epi16(_mm256_and_si256(q4bitsH, _mm256_set1_epi8(-64)), 2);
        const __m256i q4_0 = _mm256_or_si256(_mm256_and_si256(q4bits1, m15), q4h_0);
        const __m256i q4_1 = _mm256_or_si256(_mm256_and_si256(q4bits2, m15), q4h_1);
        const __m256i q4_2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4bits1, 4), m15), q4h_2);
        const __m256i q4_3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4bits2, 4), m15), q4h_3);
        const __m256i q8_0 = _mm256_loadu_si256((const __m256i *)q8);
        const __m256i q8_1 = _mm256_loadu_si256((const __m256i *)(q8 + 32));
        const __m256i q8_2 = _mm256_loadu_si256((const __m256i *)(q8 + 64));
        const __m256i q8_3 = _mm256_loadu_si256((const __m256i *)(q8 + 96));
        q8 += 128;
        __m256i p16_0 = _mm256_maddubs_epi16(q4_0, q8_0);
        __m256i p16_1 = _mm256_maddubs_epi16(q4_1, q8_1);
        __m256i p16_2 = _mm256_maddubs_epi16(q4_2, q8_2);
        __m256i p16_3 = _mm256_maddubs_epi16(q4_3, q8_3);
        const __m128i scale_0 = _mm_shuffle_epi8(scales, _mm_loadu_si128((const __m128i *)k_scale_shuffle + is + 0));
        const __m128i scale_1 = _mm_shuffle_epi8(scales, _mm_loadu_si128((const __m128i *)k_scale_shuffle + is + 1));
        const __m128i scale_2 = _mm_shuffle_epi8(scales, _mm_loadu_si128((const __m128i *)k_scale_shuffle + is + 2));
        const __m128i scale_3 = _mm_shuffle_epi8(scales, _mm_loadu_si128((const __m128i *)k_scale_shuffle + is + 3));
        is += 4;
        p16_0 = _mm256_madd_epi16(_mm256_cvtepi8_epi16(scale_0), p16_0);
        p16_1 = _mm256_madd_epi16(_mm256_cvtepi8_epi16(scale_1), p16_1);
        p16_2 = _mm256_madd_epi16(_mm256_cvtepi8_epi16(scale_2), p16_2);
        p16_3 = _mm256_madd_epi16(_mm256_cvtepi8_epi16(scale_3), p16_3);
        sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p16_0, p16_1));
        sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p16_2, p16_3));
    }
    return _mm256_sub_epi32(sumi, q8sclsub);
}

TGT float steno_dot_q6_K_avx2(int n, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / 256; ++i) {
        const float d = y[i].d * H2F(x[i].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(q6_K_block_lanes(&x[i], &y[i])), acc);
    }
    return avx2_hsum_ps(acc);
}

/* ------------------------------------------------------------------------------------------- */
/* Four activation rows at once (prompt evaluation): each weight block is unpacked once and used
 * four times. Every column's arithmetic is exactly the single-row kernel's (same operations in the
 * same order), so results do not depend on how many tokens are evaluated together. */
#define Y4(c) ((const uint8_t *)vy + (size_t)(c) * ys)

TGT void steno_dot4_q4_0_avx2(int n, const void *vx, const void *vy, size_t ys, float *out) {
    const block_q4_0 *x = vx;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int ib = 0; ib < n / 32; ++ib) {
        __m256i q = _mm256_sub_epi8(avx2_unpack_nibbles(x[ib].qs), _mm256_set1_epi8(8));
        const float dx = H2F(x[ib].d);
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
            const block_q8_0 *y = (const block_q8_0 *)Y4(c);
            __m256i p = dot_i8(q, _mm256_loadu_si256((const __m256i *)y[ib].qs));
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * H2F(y[ib].d)), _mm256_cvtepi32_ps(p), acc[c]);
        }
    }
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) out[c] = avx2_hsum_ps(acc[c]);
}

TGT void steno_dot4_q4_1_avx2(int n, const void *vx, const void *vy, size_t ys, float *out) {
    const block_q4_1 *x = vx;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    float summs[4] = {0, 0, 0, 0};
    for (int ib = 0; ib < n / 32; ++ib) {
        __m256i q = avx2_unpack_nibbles(x[ib].qs);
        const float dx = H2F(x[ib].d), mx = H2F(x[ib].m);
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
            const block_q8_1 *y = (const block_q8_1 *)Y4(c);
            summs[c] += mx * H2F(y[ib].s);
            __m256i p = dot_u8i8(q, _mm256_loadu_si256((const __m256i *)y[ib].qs));
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * H2F(y[ib].d)), _mm256_cvtepi32_ps(p), acc[c]);
        }
    }
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) out[c] = avx2_hsum_ps(acc[c]) + summs[c];
}

TGT void steno_dot4_q5_0_avx2(int n, const void *vx, const void *vy, size_t ys, float *out) {
    const block_q5_0 *x = vx;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int ib = 0; ib < n / 32; ++ib) {
        __m256i q = avx2_unpack_nibbles(x[ib].qs);
        __m256i hi = _mm256_andnot_si256(avx2_bytes_from_bits_32(x[ib].qh), _mm256_set1_epi8((char)0xF0));
        q = _mm256_or_si256(q, hi);
        const float dx = H2F(x[ib].d);
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
            const block_q8_0 *y = (const block_q8_0 *)Y4(c);
            __m256i p = dot_i8(q, _mm256_loadu_si256((const __m256i *)y[ib].qs));
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * H2F(y[ib].d)), _mm256_cvtepi32_ps(p), acc[c]);
        }
    }
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) out[c] = avx2_hsum_ps(acc[c]);
}

TGT void steno_dot4_q8_0_avx2(int n, const void *vx, const void *vy, size_t ys, float *out) {
    const block_q8_0 *x = vx;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int ib = 0; ib < n / 32; ++ib) {
        __m256i q = _mm256_loadu_si256((const __m256i *)x[ib].qs);
        const float dx = H2F(x[ib].d);
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
            const block_q8_0 *y = (const block_q8_0 *)Y4(c);
            __m256i p = dot_i8(q, _mm256_loadu_si256((const __m256i *)y[ib].qs));
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * H2F(y[ib].d)), _mm256_cvtepi32_ps(p), acc[c]);
        }
    }
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) out[c] = avx2_hsum_ps(acc[c]);
}

TGT void steno_dot4_q4_K_avx2(int n, const void *vx, const void *vy, size_t ys, float *out) {
    /* the weights are unpacked once per super-block; each column's integer sums are exact, and its
     * float steps are the single-row kernel's */
    const block_q4_K *x = vx;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    float acc[4] = {0, 0, 0, 0}, accm[4] = {0, 0, 0, 0};
    for (int i = 0; i < n / 256; ++i) {
        uint8_t sc[8], mn[8];
        for (int k = 0; k < 8; k++) scale_min_k4(k, x[i].scales, &sc[k], &mn[k]);
        __m256i lo[4], hi[4];
        for (int j = 0; j < 4; j++) {
            __m256i b = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * j));
            lo[j] = _mm256_and_si256(b, m4);
            hi[j] = _mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
        }
        const float xd = H2F(x[i].d), xm = H2F(x[i].dmin);
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
            const block_q8_K *y = (const block_q8_K *)Y4(c) + i;
            int32_t summ = 0;
            for (int k = 0; k < 8; k++) summ += mn[k] * (y->bsums[2 * k] + y->bsums[2 * k + 1]);
            __m256i sumi = _mm256_setzero_si256();
            for (int j = 0; j < 4; ++j) {
                __m256i plo = _mm256_maddubs_epi16(lo[j], _mm256_loadu_si256((const __m256i *)(y->qs + 64 * j)));
                __m256i phi = _mm256_maddubs_epi16(hi[j], _mm256_loadu_si256((const __m256i *)(y->qs + 64 * j + 32)));
                plo = _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * j]));
                phi = _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * j + 1]));
                sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(plo, phi));
            }
            acc[c] = fmaf((float)avx2_hsum_i32(sumi), xd * y->d, acc[c]);
            accm[c] = fmaf((float)summ, xm * y->d, accm[c]);
        }
    }
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) out[c] = acc[c] - accm[c];
}

TGT void steno_dot4_q6_K_avx2(int n, const void *vx, const void *vy, size_t ys, float *out) {
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) out[c] = steno_dot_q6_K_avx2(n, vx, Y4(c));
}
#undef Y4
#endif
