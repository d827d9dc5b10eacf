/* dot_rows_avxvnni.c — the rows kernels (dot_rows.h) with AVX-VNNI (VEX vpdpbusd/vpdpwssd,
 * e.g. Alder Lake and later, Sapphire Rapids): one instruction for the four-product int32 lanes
 * that AVX2 builds with vpmaddubsw + vpmaddwd. Needs GCC >= 11 or clang >= 12 for the intrinsics;
 * with an older compiler the table is empty and AVX2 runs. */
#include "kernels/quant/blocks.h"
#include "kernels/gemv/dot_rows.h"

#if defined(STENO_HAVE_X86) && \
    ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && __GNUC__ >= 11))
#define RW_TGT __attribute__((target("avx2,fma,f16c,avxvnni")))
#define RW_SFX avxvnni
#define RW_DPBUSD(u, s) _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), (u), (s))
#define RW_DPWSSD(a, p, s) _mm256_dpwssd_avx_epi32((a), (p), (s))
#define RW_DPBUSD_ACC(a, u, s) _mm256_dpbusd_avx_epi32((a), (u), (s))
#define RW_MAX_ROWS 8
#include "kernels/gemv/dot_rows_impl.h"
#else
const steno_rows_kernels *steno_rows_table_avxvnni(int type) { return NULL; }
#endif
