/* matmul_x8_avx2.c — the x8 kernels (matmul_x8.h) with AVX2 only: vpmaddubsw + vpmaddwd(1) give vpdpbusd's
 * int32 lanes exactly for the 4/5-bit codes (pairs stay within int16), and q8_0 takes ggml's sign
 * trick (see matmul_x8_impl.h); 16 vector registers: four activation rows per call. */
#include "kernels/quant/blocks.h" /* STENO_HAVE_X86 */
#include "kernels/gemm/matmul_x8.h"

#ifdef STENO_HAVE_X86
#define XM_TGT __attribute__((target("avx2,fma,f16c")))
#define XM_SFX avx2
#define XM_DPBUSD(a, u, s) \
    _mm256_add_epi32((a), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
#define XM_Q8_SIGNED 1
#define XM_MAX_COLS 4
#include "kernels/gemm/matmul_x8_impl.h"
#else
const steno_xmat_kernels *steno_xmat_kernels_avx2(void) { return 0; }
#endif
