/* amx_tiles.h — what gemm_amx_bf16x3.c and attention_amx.c share: the target, the bfloat16 split of 16
 * floats, the tile configuration (8 tiles of 16 rows × 64 bytes), and the bf16x3 block loop over
 * C0..C3 (a 32 × 32 float32 block), A tiles T4/T5 and B tiles T6/T7. Not a public header. */
#ifndef STENO_KERNELS_AMX_IMPL_H
#define STENO_KERNELS_AMX_IMPL_H

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <immintrin.h>
#include <stdint.h>

#define AMX_TARGET "amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,f16c,fma,avx2"
#define AMXF __attribute__((target(AMX_TARGET)))
#define AMXI __attribute__((target(AMX_TARGET), always_inline)) static inline

/* 16 floats → their bfloat16 halves hi = bf16(x), lo = bf16(x − hi), both rounded to nearest even */
AMXI void split16(__m512 x, __m256i *hi, __m256i *lo) {
    const __m256bh h = _mm512_cvtneps_pbh(x);
    const __m512 hf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)h), 16));
    *hi = (__m256i)h;
    *lo = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(x, hf));
}

/* two rows' halves interleaved as one tile row of input pairs: word n = a[n] | b[n] << 16 */
AMXI __m512i pair16(__m256i a, __m256i b) {
    return _mm512_or_si512(_mm512_cvtepu16_epi32(a), _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
}

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_tile_config;

/* the calling thread's tiles: 8 × (16 rows × 64 bytes); pair with _tile_release(). The
 * configuration is a static object: GCC's ldtilecfg asm names only its first 8 bytes as an
 * input, so the stores of a local one could be dropped as dead. */
AMXI void amx_tiles_on(void) {
    static const amx_tile_config cfg = {
        .palette = 1,
        .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
        .rows = {16, 16, 16, 16, 16, 16, 16, 16},
    };
    _tile_loadconfig(&cfg);
}

/* GCC's tileloadd asm declares no memory input: ordinary stores that a tile load reads back in
 * the same function must not be moved past it */
AMXI void amx_stores_before_tile_loads(void) { __asm__ volatile("" ::: "memory"); }

/* C0..C3 = 0 */
AMXI void amx_zero4(void) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
}

/* the 32 × 32 float32 block C0..C3 into c (row stride ldc floats): C0 C1 over C2 C3 */
AMXI void amx_store4(float *c, int ldc) {
    const size_t ld = (size_t)ldc * sizeof(float);
    _tile_stored(0, c, ld);
    _tile_stored(1, c + 16, ld);
    _tile_stored(2, c + (size_t)16 * ldc, ld);
    _tile_stored(3, c + (size_t)16 * ldc + 16, ld);
}

/* C0..C3 += (A rows a0, a0 + 16 of lo, then hi halves) · (B tiles b0, b1 of hi, then lo halves)
 * over kn 32-input blocks: A blocks advance by 32 halves, B blocks by 512 */
#define AMX_BF16X3_BLOCKS(alo, ahi, lda_bytes, a_row16, bhi0, bhi1, blo0, blo1, kn)                        \
    for (int kb = 0; kb < (kn); kb++) {                                                                     \
        const size_t ka = (size_t)kb * 32, kw = (size_t)kb * 512;                                           \
        _tile_loadd(4, (alo) + ka, lda_bytes);                                                              \
        _tile_loadd(5, (alo) + (a_row16) + ka, lda_bytes);                                                  \
        _tile_loadd(6, (bhi0) + kw, 64);                                                                    \
        _tile_loadd(7, (bhi1) + kw, 64);                                                                    \
        _tile_dpbf16ps(0, 4, 6);                                                                            \
        _tile_dpbf16ps(1, 4, 7);                                                                            \
        _tile_dpbf16ps(2, 5, 6);                                                                            \
        _tile_dpbf16ps(3, 5, 7);                                                                            \
        _tile_loadd(4, (ahi) + ka, lda_bytes);                                                              \
        _tile_loadd(5, (ahi) + (a_row16) + ka, lda_bytes);                                                  \
        _tile_dpbf16ps(0, 4, 6);                                                                            \
        _tile_dpbf16ps(1, 4, 7);                                                                            \
        _tile_dpbf16ps(2, 5, 6);                                                                            \
        _tile_dpbf16ps(3, 5, 7);                                                                            \
        _tile_loadd(6, (blo0) + kw, 64);                                                                    \
        _tile_loadd(7, (blo1) + kw, 64);                                                                    \
        _tile_dpbf16ps(0, 4, 6);                                                                            \
        _tile_dpbf16ps(1, 4, 7);                                                                            \
        _tile_dpbf16ps(2, 5, 6);                                                                            \
        _tile_dpbf16ps(3, 5, 7);                                                                            \
    }
#endif

#endif
