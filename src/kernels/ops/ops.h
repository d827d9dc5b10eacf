/* ops.h — element-wise and row kernels of the LLM forward passes: RMSNorm, RoPE, gated
 * activations. Two numerics where the references differ:
 *   ggml     llama.cpp's CPU backend (ggml-cpu/ops.cpp ggml_compute_forward_rms_norm_f32: sum of
 *            squares in double, y = x * (1/sqrtf(mean + eps)) then * w; rope: ggml_rope_cache_init
 *            with theta_{i+1} = theta_i * base^(-2/n_dims) in float, rotate_pairs with the FMA
 *            contraction llama.cpp's compiler applies — bit-identical to llama.cpp);
 *   llama2c  run.c (rmsnorm: float sum, o = w * (ss * x); RoPE: freq = 1 / powf(10000, i/hs)).
 */
#ifndef STENO_KERNELS_OPS_H
#define STENO_KERNELS_OPS_H

/** y[i] = x[i] * (1/sqrt(mean(x²) + eps)) * w[i] over n values (ggml numerics). y may equal x. */
void steno_rmsnorm_ggml(float *y, const float *x, const float *w, int n, float eps);
/** steno_rmsnorm_ggml of `rows` rows of n values, row r at x + r·n (y + r·n; y may equal x): the
 *  same bits as one call per row. Four rows' sums of squares run side by side (four independent
 *  chains of double additions, each in its row's order): a row's sum alone is one long chain of
 *  dependent adds, latency-bound (a batched decode step normalizes 8 rows twice per layer). */
void steno_rmsnorm_ggml_rows(float *y, const float *x, const float *w, int rows, int n, float eps);
/** run.c rmsnorm(): o[j] = w[j] * (ss * x[j]), ss = 1/sqrtf(Σx²/n + eps) with a float sum. */
void steno_rmsnorm_llama2c(float *o, const float *x, const float *w, int n, float eps);

/** Rotary embedding of n_heads vectors of head_dim floats (contiguous) at position pos, rotating the
 *  first n_rot dims. neox = 0: pairs (2i, 2i+1) (GGML_ROPE_TYPE_NORMAL, Llama); neox = 1: pairs
 *  (i, i + n_rot/2) (GGML_ROPE_TYPE_NEOX, Gemma). freq_scale multiplies the angle (1 = none). */
void steno_rope_ggml(float *x, int n_heads, int head_dim, int n_rot, int pos, float base, float freq_scale,
                     int neox);
/** steno_rope_ggml of q (n_head vectors) and k (n_head_kv vectors) at the same position, the
 *  cos/sin table computed once for both (same bits as two calls). */
void steno_rope_ggml_qk(float *q, int n_head, float *k, int n_head_kv, int head_dim, int n_rot, int pos, float base,
                        float freq_scale, int neox);
/** steno_rope_ggml_qk with frequency factors: pair i's angle is divided by freq_factors[i] (n_rot/2
 *  values: a file's rope_freqs, Llama 3's long-context frequencies, Phi-3's LongRoPE factors;
 *  ggml_rope_ext's c argument; NULL: none), and cos/sin multiplied by mscale (ggml_rope_ext's
 *  attn_factor; 1: none). NULL and 1 give the bits of steno_rope_ggml_qk. */
void steno_rope_ggml_qk_ff(float *q, int n_head, float *k, int n_head_kv, int head_dim, int n_rot, int pos, float base,
                           float freq_scale, const float *freq_factors, float mscale, int neox);
/** run.c RoPE: pairs (i, i+1) over the whole vector of dim floats, freq from i % head_size. */
void steno_rope_llama2c(float *x, int dim, int head_size, int pos);

/** h[i] = silu(g[i]) * u[i] (SwiGLU; float, as run.c; ggml's exact variant is
 *  kernels/ops/ggml_simd.h steno_ggml_swiglu). */
void steno_swiglu(float *h, const float *g, const float *u, int n);
/** h[i] = gelu(g[i]) * u[i], GELU's tanh approximation in float (no table). */
void steno_geglu(float *h, const float *g, const float *u, int n);
/** h[i] = gelu(g[i]) * u[i] with ggml's fp16-table GELU (GeGLU, ggml_vec_geglu_f32). */
void steno_geglu_ggml(float *h, const float *g, const float *u, int n);

#endif
