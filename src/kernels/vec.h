/* vec.h — CPU vector kernels for the fast path: GEMV over float32 or float16 weights with float32
 * accumulation, LayerNorm, GELU, and fused (streaming-softmax) attention.
 *
 * Each kernel has a portable scalar version and an AVX2+FMA+F16C version chosen once at run time
 * (vec_init, from __builtin_cpu_supports). A kernel reduces in a fixed order that does not depend
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

/** Selects the AVX2 kernels when the CPU has AVX2, FMA and F16C (idempotent, thread-safe).
 *  STENO_NO_SIMD=1 in the environment forces the scalar kernels. Returns 1 when SIMD is used. */
int vec_init(void);

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

/** Converts n halves to floats. */
void vec_f16_to_f32(const uint16_t *src, float *dst, size_t n);
/** Converts n floats to halves (round to nearest even). */
void vec_f32_to_f16(const float *src, uint16_t *dst, size_t n);

/** y = LayerNorm(x) over n values, eps 1e-5, with gamma/beta. */
void vec_layernorm(const float *x, const float *gamma, const float *beta, int n, float *y);

/** In place GELU (erf form) over n values. */
void vec_gelu(float *x, size_t n);

/** In place y[i] += x[i]. */
void vec_add(float *y, const float *x, size_t n);

/** Streaming-softmax attention of nq queries against keys [0, nk) of one head:
 *  q [nq][q_stride] (dh values each, already scaled by 1/√dh); keys transposed, Kt [dh][ldk]
 *  (key j is column j; ldk >= nk rounded up to 16, and columns past nk must be readable);
 *  values V [nk][ldv] (dh values each); out [nq][out_stride]. When causal, query i sees keys 0..(q_pos0 + i).
 *  No score matrix is materialized: keys are visited in blocks of 64 whose maximum rescales the
 *  running sum once per block. */
void vec_attention(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv, int nk,
                   int dh, int nq, int causal, int q_pos0, float *out, int out_stride);

/** Rounds n up to the key padding vec_attention needs for ldk. */
static inline int vec_attention_ldk(int n) { return (n + 15) & ~15; }

#endif
