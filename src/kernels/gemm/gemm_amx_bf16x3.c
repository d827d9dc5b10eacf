/* gemm_amx_bf16x3.c — gemm_amx_bf16x3.h's bf16x3 products on AMX tiles.
 *
 * Tiles: C0..C3 hold a 32 × 32 output block (2 × 2 tiles of 16 × 16 float32), T4/T5 two 16-row
 * A tiles (32 inputs each), T6/T7 two B tiles (16 input pairs × 16 outputs). Per 32 inputs the
 * block takes xl·wh, xh·wh, xh·wl in that order (8 tile loads for 12 products: xl and wh first,
 * then xh over xl, then wl over wh). The block loop runs rows outside and the chunk's outputs
 * inside: a 32-row A block (32·K·4 bytes) stays in L1/L2 while the packed weights (cn·K·4 bytes)
 * stream from L2; the other order re-read all of x per 32 outputs (a prototype, 1500 × 1536 × 384 on
 * one core: 5.1 against 6.9 ms). */
#include "kernels/gemm/gemm_amx_bf16x3.h"

#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <cpuid.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/gemm/amx_tiles.h"

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int env_off(const char *name) {
    const char *e = getenv(name);
    return e && *e && strcmp(e, "0") != 0;
}

/* CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE; subleaf 1 EAX bit 5 AVX512-BF16. Then the
 * kernel's grant of the tile data state (Linux 5.16+): without it the first tile load faults. */
static int probe(void) {
    unsigned a, b, c, d;
    if (!steno_cpu_has_avx512_skx()) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || a < 1) return 0;
    if (!((d >> 22) & 1) || !((d >> 24) & 1)) return 0;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d) || !((a >> 5) & 1)) return 0;
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

int gemm_amx_available(void) {
    static _Atomic int known = -1;
    int v = atomic_load_explicit(&known, memory_order_relaxed);
    if (v < 0) atomic_store_explicit(&known, v = probe(), memory_order_relaxed);
    return v && !env_off("STENO_NO_AMX") && !env_off("STENO_NO_SIMD") && steno_cpu_avx512_allowed();
}

AMXF void gemm_amx_split(const float *x, int ldx, int K, int r0, int r1, uint16_t *xh, uint16_t *xl) {
    for (int r = r0; r < r1; r++) {
        const float *xr = x + (size_t)r * ldx;
        uint16_t *hr = xh + (size_t)r * K, *lr = xl + (size_t)r * K;
        for (int k = 0; k < K; k += 16) {
            __m256i h, l;
            split16(_mm512_loadu_ps(xr + k), &h, &l);
            _mm256_storeu_si256((__m256i *)(hr + k), h);
            _mm256_storeu_si256((__m256i *)(lr + k), l);
        }
    }
}

AMXF void gemm_amx_pack_f16(const uint16_t *W, int K, int c0, int cn, uint16_t *bh, uint16_t *bl) {
    const int KB = K / 32;
    uint32_t *h32 = (uint32_t *)bh, *l32 = (uint32_t *)bl; /* one input pair (two halves) per word */
    uint16_t th[32] __attribute__((aligned(64))), tl[32] __attribute__((aligned(64)));
    for (int j = 0; j < cn; j++) {
        const uint16_t *w = W + (size_t)(c0 + j) * K;
        const size_t base = (size_t)(j / 16) * KB * 256 + (size_t)(j % 16);
        for (int kb = 0; kb < KB; kb++) {
            for (int half = 0; half < 2; half++) {
                __m256i h, l;
                split16(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + kb * 32 + half * 16))), &h, &l);
                _mm256_store_si256((__m256i *)(th + half * 16), h);
                _mm256_store_si256((__m256i *)(tl + half * 16), l);
            }
            uint32_t *hd = h32 + base + (size_t)kb * 256, *ld = l32 + base + (size_t)kb * 256;
            for (int p = 0; p < 16; p++) { /* pair p (inputs 2p, 2p+1): tile row p, column j % 16 */
                uint32_t hv, lv;
                memcpy(&hv, th + 2 * p, 4);
                memcpy(&lv, tl + 2 * p, 4);
                hd[p * 16] = hv;
                ld[p * 16] = lv;
            }
        }
    }
}

AMXF void gemm_amx_mul(const uint16_t *xh, const uint16_t *xl, int T, int K, const uint16_t *bh, const uint16_t *bl,
                       int cn, const float *b, float *y, int ldy) {
    amx_tiles_on();
    const int KB = K / 32, Tp = gemm_amx_rows(T);
    const size_t sa = (size_t)K * 2, bstep = (size_t)KB * 512; /* halves per 16 outputs */
    float c[32][32] __attribute__((aligned(64)));
    for (int m0 = 0; m0 < Tp; m0 += 32) {
        const uint16_t *h0 = xh + (size_t)m0 * K, *l0 = xl + (size_t)m0 * K;
        const int mr = T - m0 < 32 ? T - m0 : 32;
        for (int j0 = 0; j0 < cn; j0 += 32) {
            const uint16_t *wh0 = bh + (size_t)(j0 / 16) * bstep, *wh1 = wh0 + bstep;
            const uint16_t *wl0 = bl + (size_t)(j0 / 16) * bstep, *wl1 = wl0 + bstep;
            amx_zero4();
            AMX_BF16X3_BLOCKS(l0, h0, sa, (size_t)16 * K, wh0, wh1, wl0, wl1, KB)
            amx_store4(&c[0][0], 32);
            const __m512 b0 = b ? _mm512_loadu_ps(b + j0) : _mm512_setzero_ps();
            const __m512 b1 = b ? _mm512_loadu_ps(b + j0 + 16) : _mm512_setzero_ps();
            for (int r = 0; r < mr; r++) {
                float *yr = y + (size_t)(m0 + r) * ldy + j0;
                _mm512_storeu_ps(yr, _mm512_add_ps(b0, _mm512_load_ps(&c[r][0])));
                _mm512_storeu_ps(yr + 16, _mm512_add_ps(b1, _mm512_load_ps(&c[r][16])));
            }
        }
    }
    _tile_release();
}

#else

int gemm_amx_available(void) { return 0; }
void gemm_amx_split(const float *x, int ldx, int K, int r0, int r1, uint16_t *xh, uint16_t *xl) {
    (void)x, (void)ldx, (void)K, (void)r0, (void)r1, (void)xh, (void)xl;
    abort();
}
void gemm_amx_pack_f16(const uint16_t *W, int K, int c0, int cn, uint16_t *bh, uint16_t *bl) {
    (void)W, (void)K, (void)c0, (void)cn, (void)bh, (void)bl;
    abort();
}
void gemm_amx_mul(const uint16_t *xh, const uint16_t *xl, int T, int K, const uint16_t *bh, const uint16_t *bl,
                  int cn, const float *b, float *y, int ldy) {
    (void)xh, (void)xl, (void)T, (void)K, (void)bh, (void)bl, (void)cn, (void)b, (void)y, (void)ldy;
    abort();
}

#endif
