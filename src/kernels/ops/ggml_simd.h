/* ggml_simd.h — element-wise arithmetic exactly as llama.cpp's x86 CPU backend (AVX2 + FMA + F16C
 * build) performs it, so that steno's GGUF forward passes give the same float results as llama.cpp
 * rather than merely close ones. A one-ulp difference can flip an activation's q8 rounding, after
 * which a 135M model's logits drift by tenths (measured on SmolLM2); matching the arithmetic keeps
 * steno's top-1 tokens on llama.cpp's.
 *
 * Sources (llama.cpp ggml/src/ggml-cpu): vec.h ggml_v_expf / ggml_v_silu (AVX2), vec.cpp
 * ggml_vec_dot_f16 (4 accumulators × 8 lanes over 32-element steps, GGML_F32x8_REDUCE, leftovers in
 * double), ggml_vec_soft_max_f32 (8-lane exp, per-chunk horizontal sum added in double),
 * ggml_vec_swiglu_f32; ops.cpp rotate_pairs as compiled with FMA contraction
 * (x0·c − x1·s = fma(x0, c, −(x1·s)), x0·s + x1·c = fma(x0, s, x1·c), checked bit for bit).
 * Available when steno_kernels_isa() is "avx2"; otherwise callers use portable code that is close to
 * llama.cpp but not bit-identical.
 */
#ifndef STENO_KERNELS_GGML_SIMD_H
#define STENO_KERNELS_GGML_SIMD_H

#include <stddef.h>
#include <stdint.h>

/** 1 when the ggml-exact kernels below may be called (x86 with AVX2, FMA, F16C). */
int steno_ggml_exact_available(void);

/** ggml_vec_dot_f16(n, x, y) with x, y IEEE halves. */
float steno_ggml_dot_f16(int n, const uint16_t *x, const uint16_t *y);

/** ggml_vec_soft_max_f32 over n floats: y[i] = exp(x[i] - max) (ggml_v_expf per 8 lanes, expf for
 *  the tail); returns the sum in double, accumulated in ggml's order. */
double steno_ggml_soft_max(int n, float *y, const float *x, float max);

/** steno_ggml_soft_max continued: the chunk sums are added to `sum` in order (a run of 8-position
 *  chunks after earlier runs gives the same double as one call per chunk). */
double steno_ggml_soft_max_from(int n, float *y, const float *x, float max, double sum);

/** g key dot products against one f16 key row k[n]: out[h·out_stride] = ggml_vec_dot_f16(k, q_h) ·
 *  scale for the queries q_h = qf + h·q_stride, given as floats that are already exact halves (the
 *  f16-rounded query, steno_ggml_round_f16_row). Bit-identical to steno_ggml_dot_f16(n, k, f16(q_h))
 *  · scale; the key row is converted once for all g queries (a GQA group). */
void steno_ggml_dot_f16_multi(int n, const uint16_t *k, const float *qf, size_t q_stride, int g, float scale,
                              float *out, size_t out_stride);

/** steno_ggml_dot_f16_multi for nr ≤ 8 key rows krows[r]: out[h·out_stride + r] for query h and row r,
 *  bit-identical to it; the horizontal sums of 8 rows are done together (a transposed reduce4). */
void steno_ggml_dot_f16_block(int n, const uint16_t *const *krows, int nr, const float *qf, size_t q_stride, int g,
                              float scale, float *out, size_t out_stride);

/** y[i] = float(half(x[i])) (round to nearest even; F16C). */
void steno_ggml_round_f16_row(int n, const float *x, float *y);

/** Attention probabilities as llama.cpp stores them for the f16 V product: w[k] =
 *  float(half(dense[pos[k] − first] · inv)) for k < n (n ≥ 1, pos increasing). */
void steno_ggml_probs_f16(int n, const float *dense, const int32_t *pos, int first, float inv, float *w);

/** h[i] = steno_gelu_ggml(g[i]) · u[i] (ggml_vec_geglu_f32 with GGML_GELU_FP16: the table looked up
 *  at the F16C half of g[i]), bit-identical to the scalar loop. */
void steno_ggml_geglu(float *h, const float *g, const float *u, int n);

/** h[i] = silu(g[i]) * u[i] as ggml_vec_swiglu_f32 (ggml_v_silu on 8 lanes, scalar tail). */
void steno_ggml_swiglu(float *h, const float *g, const float *u, int n);

/** The value products of attention: out[d] = Σ_p v_p[d] · w_p over the positions p in pos[0..n)
 *  (increasing), as ggml_vec_dot_f16 over llama.cpp's transposed V cache computes them: position p
 *  accumulates in lane p % 32 (4 accumulators × 8 lanes), then GGML_F32x8_REDUCE.
 *  v_rows[i] points at the n_dims halves of position pos[i]; w[i] is already an f16-rounded float.
 *  acc is scratch of 32 × n_dims floats (n_dims a multiple of 8). */
void steno_ggml_attn_values(int n, const int32_t *pos, const uint16_t *const *v_rows, const float *w, int n_dims,
                            float *acc, float *out);

#endif
