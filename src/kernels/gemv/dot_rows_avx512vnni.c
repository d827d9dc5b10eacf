/* dot_rows_avx512vnni.c — the rows kernels (dot_rows.h) with AVX512-VNNI + AVX512VL: the
 * EVEX vpdpbusd/vpdpwssd on ymm registers (Ice Lake, Sapphire Rapids, Zen 4), and 32 vector
 * registers, enough for twelve columns' accumulators. Same integer lanes as AVX2's vpmaddubsw +
 * vpmaddwd (see dot_rows.h). */
#include "kernels/quant/blocks.h"
#include "kernels/gemv/dot_rows.h"

#if defined(STENO_HAVE_X86) && \
    ((defined(__clang__) && __clang_major__ >= 8) || (!defined(__clang__) && __GNUC__ >= 8))
#define RW_TGT __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))
#define RW_SFX avx512vnni
#define RW_DPBUSD(u, s) _mm256_dpbusd_epi32(_mm256_setzero_si256(), (u), (s))
#define RW_DPWSSD(a, p, s) _mm256_dpwssd_epi32((a), (p), (s))
#define RW_DPBUSD_ACC(a, u, s) _mm256_dpbusd_epi32((a), (u), (s))
/* 12, not 16: one group for T = 9..12 beat two, but at T = 16 two groups of 8 were as fast as
 * one of 16 (whose q4_K/q6_K kernels spill), bench/matmul_rows.c */
#define RW_MAX_ROWS 12
#include "kernels/gemv/dot_rows_impl.h"
#else
const steno_rows_kernels *steno_rows_table_avx512vnni(int type) { return NULL; }
#endif
