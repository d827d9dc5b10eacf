/* matmul_x8_avx512vnni.c — the x8 kernels (matmul_x8.h) with AVX512-VNNI + AVX512VL: EVEX vpdpbusd on ymm
 * registers and 32 of them (eight activation rows' accumulators beside the eight weight chunks),
 * and for q4_0/q4_1/q8_0/q5_0 the same kernels over two groups per zmm (matmul_x8_x16.h). */
#include "kernels/quant/blocks.h" /* STENO_HAVE_X86 */
#include "kernels/gemm/matmul_x8.h"

#if defined(STENO_HAVE_X86) && \
    ((defined(__clang__) && __clang_major__ >= 8) || (!defined(__clang__) && __GNUC__ >= 8))
#define XM_TGT __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))
#define XM_SFX avx512vnni
#define XM_DPBUSD(a, u, s) _mm256_dpbusd_epi32((a), (u), (s))
#define XM_MAX_COLS 8
#include "kernels/gemm/matmul_x8_x16.h" /* the zmm kernels over two groups at once: XM_X16_TABLE */
#include "kernels/gemm/matmul_x8_impl.h"
#else
const steno_xmat_kernels *steno_xmat_kernels_avx512vnni(void) { return 0; }
#endif
