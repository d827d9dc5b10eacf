/* vec.h — CPU vector kernels for the fast path: GEMV over float32 or float16 weights with float32
 * accumulation, LayerNorm, GELU, and fused (streaming-softmax) attention.
 *
 * Each kernel has a portable scalar version and an AVX2+FMA+F16C version chosen once at run time
 * (vec_init, through core/cpu.h); on a CPU with AVX512F/BW/DQ/VL the float16 GEMVs, GELU and both
 * attentions run 512-bit versions that give the same bits (vec_avx512.c, streaming_avx512.c). A kernel reduces in a fixed order that does not depend
 * on how callers split rows across threads, so results are identical for any thread count.
 *
 * Sources: the online softmax of Milakov & Gimelshein, "Online normalizer calculation for
 * softmax" (2018) and FlashAttention (Dao et al., 2022), as used by the seed's fused attention
 * (mlx-bun src/models/whisper/fast.ts, S1); expf by range reduction x = n·ln2 + r and a degree-6
 * polynomial (Cephes expf); erf by Abramowitz & Stegun 7.1.26 refined to float precision
 * (max abs error 1.5e-7). */
#ifndef STENO_KERNELS_VEC_H
#define STENO_KERNELS_VEC_H

#include <stddef.h>
#include <stdint.h>

/** Selects the AVX2 kernels when the CPU has AVX2, FMA and F16C, and their AVX-512 versions where
 *  the CPU has AVX512F/BW/DQ/VL (idempotent, thread-safe). STENO_NO_SIMD=1 in the environment
 *  forces the scalar kernels, STENO_NO_AVX512=1 the AVX2 ones (any value but empty or "0" counts).
 *  Returns 1 when SIMD is used. */
int vec_init(void);

/** The instruction set the kernels run after vec_init(): "avx512", "avx2" or "scalar". */
const char *vec_isa_name(void);

/** Element type of a weight matrix. */
typedef enum { VEC_F32 = 0, VEC_F16 = 1 } vec_dtype;

/** y[r] = b[r] + Σ_k W[r][k]·x[k] for rows r in [r0, r1); W [rows][n] row-major of dtype,
 *  b may be NULL. */
void vec_gemv(vec_dtype dt, const void *W, const float *b, const float *x, int n, int r0, int r1,
              float *y);

/** Y[i][r] = b[r] + Σ_k W[r][k]·X[i][k] for nx inputs X [nx][ldx] and weight rows r in [r0, r1);
 *  Y [nx][ldy]. Every output is bit-identical to vec_gemv's for that input (the same kernel, the
 *  same reduction order): the weights are walked in blocks of rows small enough for L1, and each
 *  block serves all nx inputs, so W is read from memory once for the batch (the beam-search
 *  decoder step), not nx times. */
void vec_gemv_rows(vec_dtype dt, const void *W, const float *b, const float *X, int ldx, int nx, int n, int r0,
                   int r1, float *Y, int ldy);

/** vec_gemv_rows with input i's outputs at Y[i][r0..r1) (nx row pointers, the caller's): the
 *  batched decoder step writes each row's logits straight into its decoder's buffer. */
void vec_gemv_rows_to(vec_dtype dt, const void *W, const float *b, const float *X, int ldx, int nx, int n, int r0,
                      int r1, float *const *Y);

/** The float16 panel of W [rows][n]: a second copy of its whole blocks of 32 rows, laid out so
 *  that one widened weight vector serves many inputs (kernels/gemv/vec_panel_avx512.c has the order).
 *  vec_f16_panel_halves: its size in halves ((rows / 32) · 32 · n), 0 when the running kernels
 *  have no use for one (not AVX-512, n not a multiple of 32 or over 4096): callers then skip it.
 *  vec_f16_panel_pack writes it into P (the caller's, that many halves). Not thread-specific. */
size_t vec_f16_panel_halves(int rows, int n);
void vec_f16_panel_pack(const uint16_t *W, int rows, int n, uint16_t *P);

/** vec_gemv_rows_to(VEC_F16, W, ...) with P the panel of W (or NULL): every output bit-identical
 *  to it. At VEC_PANEL_MIN_INPUTS inputs or more the rows of whole blocks come from the panel
 *  (1.3-1.5x the row kernel's rate at 40 inputs, ~2x at 8-10: the git history of docs/PERFORMANCE.md); below, or
 *  without P, the row kernel runs. Thread-safe (P and W read only). */
#define VEC_PANEL_MIN_INPUTS 8
void vec_gemv_f16_panel_to(const uint16_t *W, const uint16_t *P, const float *b, const float *X, int ldx, int nx,
                           int n, int r0, int r1, float *const *Y);

/** y[rows[i]] = Σ_k W[rows[i]][k]·x[k] for the count listed rows of float16 weights W [.][n]: each
 *  value bit-identical to vec_gemv(VEC_F16, ...) of that row (same kernel, same order); x is
 *  prepared once for the whole list. */
void vec_gemv_f16_rows(const uint16_t *W, const float *x, int n, const int *rows, int count, float *y);

/** vec_gemv_f16_rows for nx <= 16 inputs X [nx][ldx] at once: Y[i][rows[k]] for every listed row
 *  and every input i whose bit is set in need[k] (need NULL: every input), each value
 *  bit-identical to vec_gemv_f16_rows of input i; each row's halves are read from memory once for
 *  all its inputs (a verify pass's positions share the rows they recompute). */
void vec_gemv_f16_rows_multi(const uint16_t *W, const float *X, int ldx, int nx, int n, const int *rows,
                             const uint16_t *need, int count, float *const *Y);

/* ---- Logit screen: int8 rows that bound a float16 GEMV from above and below.
 * Row w (float16 values, n a multiple of VEC_SCREEN_BLOCK) is stored as w ≈ s·q, q int8 in
 * [-127, 127], s = max|w|/127; the input as x ≈ s_b·qx per block b of 32 values. The screened
 * value z = s·Σ_b s_b·(q_b·qx_b) (integer dots, exact) differs from x·w by at most
 *   b = h·g + ‖x‖₂·c + 1e-6·|z|,  h = √Σ_b (s_b/2)²,  g = s·√Σ_b (Σ_{k∈b}|q_k|)²,
 *   c = ‖w − s·q‖₂ + 3e-5·‖w‖₂
 * (|x_k − s_b·qx_k| <= s_b/2 and Cauchy–Schwarz over the blocks for the first term, Cauchy–Schwarz
 * for x·(w − s·q); 3e-5·‖x‖₂‖w‖₂ covers the float32 rounding of the exact GEMV and of z, n <= 4096). */
#define VEC_SCREEN_BLOCK 32

typedef struct vec_screen_rows {
    const int8_t *q;       /* [rows][n] */
    const float *s, *g, *c; /* [rows] */
} vec_screen_rows;

/** Fills one row's q [n], *s, *g, *c from its float16 weights w [n]. */
void vec_screen_build_row(const uint16_t *w, int n, int8_t *q, float *s, float *g, float *c);

/** The input side: buffers owned by the caller (qx, ax: n bytes; sb: n/32 floats). */
typedef struct vec_screen_x {
    int8_t *qx;  /* [n] */
    uint8_t *ax; /* [n] |qx| */
    float *sb;   /* [n/32] block scales */
    float h, norm;
} vec_screen_x;

/** Quantizes x [n] (n a multiple of 32) into sx. */
void vec_screen_prepare(const float *x, int n, vec_screen_x *sx);

/** For rows r in [r0, r1): z[r] = the screened value, hi[r] = z[r] + b (see above); returns the
 *  largest z[r] − b over the rows with allow == NULL or allow[r] == 0 (−inf if none). */
float vec_screen_i8(const vec_screen_rows *w, const vec_screen_x *x, int n, int r0, int r1, const float *allow,
                    float *z, float *hi);
/** vec_screen_i8 for nx inputs xs[0..nx) over one read of the rows (each row's bytes stay in L1
 *  while the nx dots run): input i writes z + i·ld and hi + i·ld and best[i], each bit-identical
 *  to vec_screen_i8 of xs[i] alone. Why: a speculative verify pass screens several positions. */
void vec_screen_i8_multi(const vec_screen_rows *w, const vec_screen_x *xs, int nx, int n, int r0, int r1,
                         const float *allow, float *z, float *hi, size_t ld, float *best);

/** Converts n halves to floats, exactly (F16C after vec_init when the CPU has it). */
void vec_f16_to_f32(const uint16_t *src, float *dst, size_t n);
/** Converts n floats to halves (round to nearest even). */
void vec_f32_to_f16(const float *src, uint16_t *dst, size_t n);

/** y = LayerNorm(x) over n values, eps 1e-5, with gamma/beta. */
void vec_layernorm(const float *x, const float *gamma, const float *beta, int n, float *y);

/** In place GELU (erf form) over n values. */
void vec_gelu(float *x, size_t n);

/** Σ_i exp(x[i] − m) over n floats, for a log-sum-exp: m must be finite and >= every x[i]; −inf
 *  entries add exactly 0. SIMD: float32 exponentials (the expf of vec_attention, relative error
 *  about 2e-7) summed in float64, 8 lanes then a fixed tree; scalar: exp in float64. The result
 *  does not depend on the caller's thread count. */
double vec_sum_exp(const float *x, int n, float m);

/** In place y[i] += x[i]. */
void vec_add(float *y, const float *x, size_t n);

/** Softmax attention of nq queries against keys [0, nk) of one head:
 *  q [nq][q_stride] (dh values each, already scaled by 1/√dh); keys transposed, Kt [dh][ldk]
 *  (key j is column j; ldk >= nk rounded up to 16, and columns past nk must be readable);
 *  values V [nk][ldv] (dh values each); out [nq][out_stride]. When causal, query i sees keys 0..(q_pos0 + i).
 *  Not causal with nk <= 1536 and dh a multiple of 16 (the Whisper encoder, the float32
 *  cross-attention): each 6-query tile's whole score row, its exact maximum, then the values
 *  (kernels/attention/whole_rows.c). Otherwise streaming: no score matrix is materialized, keys are
 *  visited in blocks of 64 whose maximum rescales the running sum once per block. Either way a
 *  query's result does not depend on nq or the other queries, and the AVX2 and AVX-512 kernels
 *  give the same bits. */
void vec_attention(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv, int nk,
                   int dh, int nq, int causal, int q_pos0, float *out, int out_stride);

/** Converts n floats (n a multiple of 16) to halves (round to nearest even, as vec_f32_to_f16) in
 *  "lane order": within each group of 16, the halves of elements 0–3, 8–11, 4–7, 12–15. This is
 *  the storage vec_attention_f16 reads: the AVX2 kernel widens 16 halves with one unpack per 8,
 *  which yields exactly that interleaving, so the stored order puts every value back in place. */
void vec_f32_to_f16_lanes(const float *src, uint16_t *dst, size_t n);

/** Position in lane-order storage of element i (groups of 16 keep their place):
 *  elements 0–3 → slots 0–3, 8–11 → 4–7, 4–7 → 8–11, 12–15 → 12–15. */
static inline int vec_lane_slot(int i) { return (i & ~15) | ((i & 3) | ((i & 4) << 1) | ((i & 8) >> 1)); }

/** Packs the keys of one head for vec_attention_f16: from Kt [dh][ldk] (float32, key j is column j)
 *  to Kb [ceil(nk/16)][dh][16] halves, each block of 16 keys contiguous (2 KiB for dh 64) and in lane
 *  order, so the kernel streams the keys instead of reading dh rows ldk apart. Columns of Kt from nk
 *  to the next multiple of 16 must be readable (they are packed too; the kernel ignores them). */
void vec_pack_keys_f16(const float *Kt, int ldk, int dh, int nk, uint16_t *Kb);

/** Attention of nq independent queries over keys [0, nk) of one head, every query seeing all keys
 *  (cross-attention of the decoder step), with float16 keys and values: Kb as vec_pack_keys_f16
 *  writes it, V [nk][ldv] halves in lane order (vec_f32_to_f16_lanes of the [nk][dh] rows, dh
 *  values each). q [nq][q_stride] (already scaled), out [nq][out_stride], float32 throughout. dh
 *  must be a multiple of 16 and nk <= VEC_ATTENTION_F16_MAX_KEYS.
 *  Per query the score row [nk] is kept (a 1-query row, not a score matrix): scores, their
 *  maximum, exponentials and sum, then Σ p_j v_j, all accumulated in float32; products of halves
 *  and floats are exact. Results do not depend on how callers split queries or heads. */
void vec_attention_f16(const float *q, int q_stride, const uint16_t *Kb, const uint16_t *V, int ldv, int nk, int dh,
                       int nq, float *out, int out_stride);

/** Keys vec_attention_f16 accepts. */
#define VEC_ATTENTION_F16_MAX_KEYS 4096

/** The ldk to allocate for n keys: n rounded up to the 16 that vec_attention needs, plus 16 more
 *  when that is an even number of 64-byte lines (e.g. 1500 → 1520, not 1504): the kernels walk Kt
 *  down its dh rows, and an even stride in lines maps those rows onto half of L1's sets (measured:
 *  the encoder's 1500-key heads 1.3× slower at ldk 1504). */
static inline int vec_attention_ldk(int n) {
    const int r = (n + 15) & ~15;
    return (r / 16) % 2 ? r : r + 16;
}

#endif
