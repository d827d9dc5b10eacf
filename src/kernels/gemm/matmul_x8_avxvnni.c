/* matmul_x8_avxvnni.c — the x8 kernels (matmul_x8.h) with AVX-VNNI (VEX vpdpbusd, 16 vector registers: four
 * activation rows per call). */
#include "kernels/quant/blocks.h" /* STENO_HAVE_X86 */
#include "kernels/gemm/matmul_x8.h"

#if defined(STENO_HAVE_X86) && \
    ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && __GNUC__ >= 11))
#define XM_TGT __attribute__((target("avx2,fma,f16c,avxvnni")))
#define XM_SFX avxvnni
#define XM_DPBUSD(a, u, s) _mm256_dpbusd_avx_epi32((a), (u), (s))
#define XM_MAX_COLS 4
#include "kernels/gemm/matmul_x8_impl.h"
#else
const steno_xmat_kernels *steno_xmat_kernels_avxvnni(void) { return 0; }
#endif
