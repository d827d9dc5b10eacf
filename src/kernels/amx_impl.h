/* amx_impl.h — what gemm_amx.c and attention_amx.c share: the target, the bfloat16 split of 16
 * floats, the tile configuration (8 tiles of 16 rows × 64 bytes). Not a public header. */
#ifndef STENO_KERNELS_AMX_IMPL_H
#define STENO_KERNELS_AMX_IMPL_H

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

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

/* the calling thread's tiles: 8 × (16 rows × 64 bytes); pair with _tile_release() */
AMXI void amx_tiles_on(void) {
    amx_tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int i = 0; i < 8; i++) cfg.rows[i] = 16, cfg.colsb[i] = 64;
    _tile_loadconfig(&cfg);
}
#endif

#endif
