/* matmul_x8.h — the LLM fast path's weight matrices: q4_0, q4_1, q5_0, q8_0, q4_K and q6_K rows repacked
 * eight at a time ("x8") so that one integer dot instruction serves eight weight rows.
 *
 * Layout. Rows are taken in groups of 8 (the last group padded with zero rows). For group g and
 * 32-element block b, the 8 rows' codes are stored as eight 32-byte chunks: chunk k holds elements
 * 4k..4k+3 of row 0, then of row 1, ..., row 7 (q8_0: the signed bytes; q4_0/q4_1: two chunks per
 * 32 bytes, chunk k in the low nibbles and chunk k+4 in the high nibbles of the same bytes), then
 * the 8 rows' fp16 scales d (and for q4_1 the 8 fp16 mins m). q5_0: the nibbles as q4_0, then 32
 * bytes of high bits (bit k of byte 4r + e: element 4k + e of row r), then the scales. A block
 * group is as large as the 8 original blocks (144, 160, 176, 272 bytes), so a decode step reads
 * as many bytes as the ggml path, as one sequential stream.
 * K types (n_in a multiple of 256), per 256-element super-block group: q4_K: the 8 rows' fp16 d,
 * then their fp16 dmin, then per 32-element sub-block the nibbles as q4_1's and the 8 rows' 6-bit
 * scales, then mins, as bytes (32 + 8 · 144 = 1184 bytes); q6_K: the 8 fp16 d, then per sub-block
 * the low nibbles as q4_0's, 64 bytes of 2-bit high pairs (byte 4r + e of the first 32: chunk k's
 * pair at bits 2k..2k+1, k < 4; of the second: k − 4) and the int8 scales of the two 16-element
 * halves for the 8 rows (16 + 8 · 208 = 1680 bytes).
 *
 * Arithmetic (this is NOT llama.cpp's: a Lab path, `--compute fast`, gated in docs/LLM.md). For
 * output (row r, activation row c), with the activation row quantized as the ggml path does (q8_0
 * for q4_0/q8_0, q8_1 for q4_1 weights; same codes, same scales):
 *     acc = 0; for each block b: acc = fmaf(d_r · d_c, (float)Σ_32 w·y, acc)
 *                                (q4_1: acc = fmaf(m_r, s_c, acc) after it; s_c the q8_1 block sum)
 * where Σ w·y is the exact integer dot of the block (q4_0: w = nibble − 8; q4_1: w = nibble;
 * q5_0: w = (nibble | high bit << 4) − 16; q8_0: w = the byte).
 * q4_K, per sub-block (activations q8_1): acc = fmaf((d_r·sc_r)·d_c, Σ q·y, acc); acc = fmaf(−(dmin_r·m_r), s_c, acc)
 *   (d·sc, dmin·m exact); q6_K (activations q8_0): i_h = Σ_{half h} (q − 32)·y exactly, then
 *   acc = fmaf(d_r·d_c, (float)(sc_0·i_0 + sc_1·i_1), acc) (|.| <= 2^24: exact in float too). llama.cpp's q8_K
 *   activations (one scale per 256) are not used: q8_1/q8_0 blocks of 32 are finer.
 * ggml instead keeps eight float partial sums per block lane and adds them at
 * the end; here each block's dot is exact and adds one rounding. Every (r, c) output takes the same
 * operations in the same order whatever T, the grouping of activation rows or the thread count, so
 * results are identical for any batch size and thread count, and equal to the scalar reference
 * (steno_xmat_dot_ref) to the bit on every CPU.
 *
 * Kernels: AVX512-VNNI (EVEX, ymm), AVX-VNNI and AVX2 (vpmaddubsw + vpmaddwd: the same exact
 * integer lanes), chosen at run time; the scalar reference elsewhere (or with STENO_XMAT_ISA=scalar). Thread-safety: a packed matrix is read-only after packing. */
#ifndef STENO_KERNELS_XMAT_H
#define STENO_KERNELS_XMAT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/gemm/matmul.h"

typedef struct steno_xmat {
    int type;            /* the source weight type: STENO_T_Q4_0, _Q4_1, _Q5_0, _Q8_0, _Q4_K or _Q6_K */
    int64_t n_in, n_out; /* as the source matrix (n_in a multiple of 32; K types: of 256) */
    int64_t n_groups;    /* (n_out + 7) / 8 */
    size_t block_bytes;  /* bytes per (group, 32-element block): 144, 160, 176, 272; K types 148, 210 */
    uint8_t *data;       /* n_groups · (n_in / 32) · block_bytes, 64-byte aligned */
    int owned;           /* 1: data is freed by steno_xmat_free (steno_xmat_pack); 0: the caller's */
} steno_xmat;

/** 1 when W's type has an x8 layout (q4_0, q4_1, q5_0, q8_0, q4_K, q6_K) and n_in is a multiple of
 *  32 (K types: of 256). */
int steno_xmat_supported(const steno_mat *W);

/** Repacks W into *out (allocates out->data). Returns 0, or -1 (unsupported type, out of memory). */
int steno_xmat_pack(const steno_mat *W, steno_xmat *out);

/** Bytes of W's x8 copy (what steno_xmat_pack_into writes), or 0 when !steno_xmat_supported(W). */
size_t steno_xmat_bytes(const steno_mat *W);

/** steno_xmat_pack into caller memory: dst, 64-byte aligned, steno_xmat_bytes(W) bytes, stays the
 *  caller's (out->owned = 0) and must outlive *out. Lets one model put all its copies in one
 *  huge-page block (core/bigmem.h). Returns 0, or -1 (unsupported type). */
int steno_xmat_pack_into(const steno_mat *W, steno_xmat *out, uint8_t *dst);

void steno_xmat_free(steno_xmat *x);

/** Rows [r0, r1) of the packed matrix as float32 (out: [r1 − r0][n_in]), the values ggml's
 *  dequantize_row_<type> gives for the unpacked rows (q8_0: c·d, q4_0: (c − 8)·d, q5_0: (c − 16)·d,
 *  q4_1: c·d + m). A matrix kept only packed still has its rows looked up (an embedding). Returns 0,
 *  or -1 for the K types (not provided). */
int steno_xmat_dequant_rows(const steno_xmat *x, int64_t r0, int64_t r1, float *out);

/** Y = X · Wᵀ with the arithmetic above. X: float32 [T][n_in]; Y: float32 [T][ldy >= n_out].
 *  Rows of W are split among the pool's threads by groups of 8. Returns 0, or -1 (out of memory). */
int steno_matmul_x(steno_pool *pool, steno_work *work, const steno_xmat *W, const float *X, int T, float *Y,
                   int64_t ldy);

/** The scratch bytes steno_matmul_x(_n, _pre) takes from its steno_work for T activation rows of
 *  n_in values against weights of `type`: a caller that grows its work to this before the first
 *  product (steno_work_get) makes every later product of at most T rows allocation-free. */
size_t steno_matmul_x_work_bytes(int type, int64_t n_in, int T);

/** steno_matmul_x of nm (1..STENO_MATMUL_MAX_N) matrices of one type and n_in over the same
 *  activations (a layer's Q/K/V, gate/up): one conversion, one pool job; each Y_m bit-identical to
 *  steno_matmul_x(W_m). -1 when out of memory or the matrices differ in type or width. */
int steno_matmul_x_n(steno_pool *pool, steno_work *work, int nm, const steno_xmat *const *W, const float *X, int T,
                     float *const *Y, const int64_t *ldy);

/** A per-row step the activations' conversion runs just before it quantizes row t of X: the
 *  forward's RMSNorm (with the residual add before it) or SwiGLU of that row, done on the thread
 *  that converts the row instead of on the caller before the product (at 8 rows of a batched
 *  step, those serial ops left the second core idle for ~5 % of the step). fn(ctx, t) writes
 *  row t of X (and may update other per-row state of t), touching no other row; rows run in any
 *  order, on any thread, each exactly once. */
typedef struct steno_xmat_pre {
    void (*fn)(void *ctx, int t);
    void *ctx;
} steno_xmat_pre;

/** steno_matmul_x_n with pre (NULL: none) run on every row of X before its conversion; X is read
 *  only after that row's pre. The same products, bit for bit, as pre over all rows and then
 *  steno_matmul_x_n. */
int steno_matmul_x_pre(steno_pool *pool, steno_work *work, const steno_xmat_pre *pre, int nm,
                       const steno_xmat *const *W, const float *X, int T, float *const *Y, const int64_t *ldy);

/** The activation type whose blocks steno_matmul_x quantizes X to for weights of `type`: STENO_T_Q8_1
 *  for q4_1 and q4_K, else STENO_T_Q8_0 (for q4_K this is not llama.cpp's q8_K). */
int steno_xmat_act_type(int type);

/** The scalar reference of one output: row r of W (unpacked, ggml layout) with one activation row
 *  quantized to steno_xmat_act_type(type) (q8_0 or q8_1 blocks). For the tests. */
float steno_xmat_dot_ref(int type, int n, const void *w_row, const void *y_row);

/** "avx512vnni", "avxvnni" or "scalar": the kernels steno_matmul_x runs (STENO_XMAT_ISA=... picks
 *  a supported one). */
const char *steno_xmat_isa(void);

/** Test and benchmark hook: makes steno_matmul_x run the kernels named ("scalar", "avxvnni",
 *  "avx512vnni"); 0, or -1 (nothing changed) when this CPU or build lacks them. Not safe while a
 *  product runs. */
int steno_xmat_set_isa(const char *name);

/* ---- private to src/kernels (the kernel files) ---- */

#define STENO_XMAT_MAX_COLS 8
#define XM_Q4K_SUPER 1184 /* bytes of a q4_K super-block group: 32 of header, 8 sub-blocks of 144 */
#define XM_Q6K_SUPER 1680 /* q6_K: 16 of header, 8 sub-blocks of 208 */

/** One group of 8 weight rows (g = the group's first block group) with nc (1..MAX_COLS) packed
 *  activation rows: out[c·8 + r]. ya: codes [nb][nc][32]; yd: d [nb][nc]; ye: per (b, c) the int32
 *  offset −K·Σy (q4_0: K = 8, q5_0: K = 16, q8_0: K = 128 after the kernel's +128; read as int32) or the float
 *  s (q4_1, q4_K), or (q6_K) two int32, −32·Σy of each 16-element half. K types: g is the group's
 *  first super-block group, nb still counts 32-element blocks (a multiple of 8). */
typedef void (*steno_xmat_fn)(int nb, const uint8_t *g, const int8_t *ya, const float *yd, const void *ye, int nc,
                              float *out);

/** Two groups at once (groups g and g + 1, the second's block groups gs bytes after the first's):
 *  out[c·ldo + r], r < 8 the rows of group g, r >= 8 those of g + 1, each equal to the one-group
 *  kernel's output to the bit (ldo >= 16: the product's rows are written in place). */
typedef void (*steno_xmat_fn2)(int nb, const uint8_t *g, size_t gs, const int8_t *ya, const float *yd, const void *ye,
                               int nc, float *out, int64_t ldo);

typedef struct steno_xmat_kernels {
    steno_xmat_fn q4_0, q4_1, q8_0, q5_0, q4_K, q6_K;
    int max_cols;
    steno_xmat_fn2 x16[6]; /* the same types' two-group kernels, in that order; NULL where none */
} steno_xmat_kernels;

const steno_xmat_kernels *steno_xmat_kernels_avx512vnni(void);
const steno_xmat_kernels *steno_xmat_kernels_avxvnni(void);
const steno_xmat_kernels *steno_xmat_kernels_avx2(void);

/* an int32 read from any byte address: four activation codes as one value, so that the kernels'
 * broadcasts come straight from memory (a `vpbroadcastd m32`, or an embedded {1to16} operand)
 * instead of through general registers (a memcpy to int32_t[8] compiled to 64-bit loads, shifts
 * and register broadcasts: half the kernel's vector-port uops at 8 activation rows) */
typedef int32_t steno_xm_i32u __attribute__((may_alias, aligned(1)));

#endif
