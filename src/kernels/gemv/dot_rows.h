/* dot_rows.h — dot kernels of one weight row with 1..8 activation rows at once (private to
 * src/kernels/): the batched decode step's kernels (steno_matmul, T = 1..16 packed rows).
 *
 * A rows kernel unpacks each weight block once and uses it for every activation row. Its output
 * for activation row c is BIT-IDENTICAL to the type's single-row AVX2 kernel (quant_avx2.c, which
 * follows llama.cpp's ggml-cpu/arch/x86/quants.c ggml_vec_dot_*_q8_* and arch/x86/repack.cpp
 * ggml_gemv_q4_K_8x8_q8_K) on the same operands: the same integer lanes, the same float operations
 * in the same order. Two things differ from that kernel and neither changes a bit:
 *   - the activation blocks' fp16 scales are converted to float once per matmul (steno_rows_pack),
 *     not once per weight row: the conversion is exact and done by the same instruction (F16C);
 *   - with VNNI, vpdpbusd (u8×s8, four products summed per int32 lane) replaces
 *     vpmaddubsw + vpmaddwd(1) (the same four products per lane, through int16 pairs). The two agree
 *     whenever vpmaddubsw does not saturate, which it cannot here: q4_0/q5_0/q8_0 use ggml's sign
 *     trick |x|·sign(y, x) with |x| <= 128, so a pair lies in [-32768, 32512]; q4_1's nibbles are
 *     0..15, so a pair lies in [-3840, 3810]. For q4_K/q6_K the int16 pair products are then
 *     scaled by vpmaddwd and added; vpdpwssd fuses that add (exact int32 sums either way).
 *     With VNNI, q4_0/q5_0/q8_0 use the offset form instead of the sign trick (one vpdpbusd per
 *     column, see dot_rows_impl.h): bit-identical for every activation that steno's q8_0
 *     quantizer produces, which is the only source of q8_0 activations (test_dot_rows.c).
 * Instruction sets: AVX2 (+FMA, F16C), AVX-VNNI (VEX, 16 ymm registers) and AVX512-VNNI with
 * AVX512VL (ymm operations, 32 registers). Each is compiled with target attributes, so the build
 * does not depend on the compiler's -march; which one runs is decided at run time. */
#ifndef STENO_KERNELS_QUANT_ROWS_H
#define STENO_KERNELS_QUANT_ROWS_H

#include <stddef.h>
#include <stdint.h>

/** Dot products of weight row x (n elements of the weight type) with nr activation rows packed by
 *  steno_rows_pack (yp, 32-byte aligned). out[c], c < nr, is bit-identical to the single-row AVX2
 *  vec_dot(n, x, y_c) of the unpacked row c (for the kernels with a bias or act_offset, the VNNI
 *  offset forms: when row c comes from steno's q8_0 quantizer, or has no code -128). nr is fixed by
 *  the table slot. */
typedef void (*steno_dot_rows_fn)(int n, const void *x, const void *yp, float *out);

#define STENO_ROWS_MAX 12 /* the most activation rows of any kernel call */

/** fn[nr] handles nr activation rows, 1 <= nr <= max_rows (8 with 16 vector registers, 12 with
 *  AVX-512's 32, where 12 columns still keep their accumulators in registers). */
typedef struct steno_rows_kernels {
    int max_rows;
    int bias;       /* K != 0: the packed activations carry −K·Σy lanes (weights read as w + K) */
    int act_offset; /* 1: the packed activation codes are y + 128 as unsigned bytes */
    steno_dot_rows_fn fn[STENO_ROWS_MAX + 1];
} steno_rows_kernels;

enum { STENO_ROWS_AVX2 = 0, STENO_ROWS_AVXVNNI = 1, STENO_ROWS_AVX512VNNI = 2, STENO_ROWS_NISA = 3 };

/** "avx2", "avxvnni", "avx512vnni". */
const char *steno_rows_isa_name(int isa);
/** 1 when this build has the kernels of isa and this CPU and OS can run them, else 0. */
int steno_rows_isa_supported(int isa);
/** When isa is unsupported, why ("CPU lacks AVX512_VNNI", "compiler lacks AVX-VNNI"); else NULL. */
const char *steno_rows_isa_missing(int isa);
/** The rows kernels of weight type `type` for isa, or NULL when there are none (the type has only
 *  single-row kernels, or isa is not compiled in). Does not check the CPU. */
const steno_rows_kernels *steno_rows_kernels_for(int type, int isa);

/** The rows kernels steno_matmul uses for `type`: NULL when the dot kernels are scalar
 *  (STENO_NO_AVX2=1 or no AVX2) or the type has none. Picks AVX512-VNNI, else AVX-VNNI, else AVX2;
 *  STENO_NO_VNNI=1 forces AVX2, STENO_ROWS_ISA=avx2|avxvnni|avx512vnni picks one when supported (=none: the
 *  single-row kernels, for comparison).
 *  Read once. */
const steno_rows_kernels *steno_rows_get(int type);
/** Test and benchmark hook: makes steno_rows_get use isa (STENO_ROWS_NISA: none, the single-row
 *  kernels) when it is supported; returns 0, or -1 (nothing changed) when it is not. Not safe while
 *  another thread runs a matmul. */
int steno_rows_set_isa(int isa);
/** The instruction set steno_rows_get dispatches to ("avx512vnni", ..., or "none"). */
const char *steno_rows_isa(void);

/** Bytes per activation row of the packed layout (a multiple of 64), 0 for a type the rows
 *  kernels do not read (act_type: q8_0, q8_1 or q8_K; n elements; rk as for steno_rows_pack). */
size_t steno_rows_pack_row_bytes(int act_type, const steno_rows_kernels *rk, int64_t n);
/** Packs nr activation rows xq + c·xq_row (act_type, n elements each) into dst (32-byte aligned,
 *  nr · steno_rows_pack_row_bytes bytes) so that a rows kernel finds every column at a constant
 *  offset: for q8_K, block i of row c at dst + (i·nr + c)·292 (the blocks unchanged); for q8_0
 *  and q8_1, the codes of block ib of row c at dst + (ib·nr + c)·32 (for q8_0 and rk->act_offset,
 *  as unsigned bytes code + 128); then, for q8_0 with rk->bias K != 0, eight int32
 *  −K·(sum of four codes) per block and row at the same (ib·nr + c)·32 offsets in a second region
 *  of nb·nr·32 bytes; then the scales as floats (exact conversion, F16C where the rows kernels
 *  run): per block ib the nr values d (q8_0), or nr values d and then nr values s (q8_1).
 *  rk: the kernels that will read dst (the VNNI offset forms); NULL packs for neither. */
void steno_rows_pack(int act_type, const steno_rows_kernels *rk, const void *xq, size_t xq_row, int64_t n, int nr,
                     void *dst);

/* Per-isa tables (quant_rows_<isa>.c); NULL where the compiler lacks the isa. */
const steno_rows_kernels *steno_rows_table_avx2(int type);
const steno_rows_kernels *steno_rows_table_avxvnni(int type);
const steno_rows_kernels *steno_rows_table_avx512vnni(int type);

#endif
