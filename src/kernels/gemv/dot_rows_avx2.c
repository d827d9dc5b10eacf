/* dot_rows_avx2.c — the rows kernels (dot_rows.h) for AVX2+FMA+F16C: vpmaddubsw + vpmaddwd,
 * the single-row kernels' own integer steps. */
#include "kernels/quant/blocks.h"
#include "kernels/gemv/dot_rows.h"

#ifdef STENO_HAVE_X86
#define RW_TGT __attribute__((target("avx2,fma,f16c")))
#define RW_SFX avx2
#define RW_DPBUSD(u, s) _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1))
#define RW_DPWSSD(a, p, s) _mm256_add_epi32((a), _mm256_madd_epi16((p), (s)))
#define RW_MAX_ROWS 8
#include "kernels/gemv/dot_rows_impl.h"
#else
const steno_rows_kernels *steno_rows_table_avx2(int type) { return NULL; }
#endif
