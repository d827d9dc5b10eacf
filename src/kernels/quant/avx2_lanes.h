/* avx2_lanes.h — the AVX2 lane helpers of the quantized dot products (quant_avx2.c) and of the
 * rows kernels built from them (gemv/dot_rows_impl.h): fixed horizontal sums (their order is part
 * of the bits both give) and ggml's nibble and bit unpacking. Inlined; a caller compiled for a
 * superset of AVX2 (AVX-VNNI, AVX-512) inlines them too. Internal. */
#ifndef STENO_KERNELS_QUANT_AVX2_LANES_H
#define STENO_KERNELS_QUANT_AVX2_LANES_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define AVX2_LANES_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) static inline

AVX2_LANES_INLINE float avx2_hsum_ps(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
    return _mm_cvtss_f32(lo);
}

AVX2_LANES_INLINE int avx2_hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* 32 nibbles of 16 bytes: low nibbles in bytes 0..15, high nibbles in 16..31. */
AVX2_LANES_INLINE __m256i avx2_unpack_nibbles(const uint8_t *qs) {
    __m128i x = _mm_loadu_si128((const __m128i *)qs);
    __m256i b = _mm256_set_m128i(_mm_srli_epi16(x, 4), x);
    return _mm256_and_si256(b, _mm256_set1_epi8(0x0F));
}

/* 32 bytes, 0xFF where bit i of the 32-bit word at x is set (ggml's bytes_from_bits_32). */
AVX2_LANES_INLINE __m256i avx2_bytes_from_bits_32(const uint8_t *x) {
    uint32_t x32;
    memcpy(&x32, x, 4);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x32), shuf);
    bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1));
}
#endif

#endif
