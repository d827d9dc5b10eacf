/* nn.h — the fp32 building blocks of the faithful Whisper path (openai-whisper whisper/model.py):
 * Linear, LayerNorm, GELU (erf form, torch.nn.GELU default) and softmax. Matrices are row-major
 * float32; GEMMs go through OpenBLAS (cblas_sgemm), whose result for a given thread count and
 * shape is deterministic. */
#ifndef STENO_WHISPER_NN_H
#define STENO_WHISPER_NN_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/quant/wq.h"

/** A Linear layer y = x Wᵀ + b, W [n_out][n_in] (PyTorch/CTranslate2 layout), b [n_out] or NULL. */
typedef struct nn_linear {
    const float *w;        /* NULL when the model keeps only the float16 copy */
    const uint16_t *w16;   /* float16 copy [n_out][n_in], or NULL */
    wq_mat q;              /* quantized copy (q.q != NULL; the fast path only), else q.q == NULL */
    const float *b;
    int n_out, n_in;
} nn_linear;

/** LayerNorm with eps 1e-5: gamma/beta [n]. */
typedef struct nn_layernorm {
    const float *gamma, *beta;
    int n;
} nn_layernorm;

/** y[T][n_out] = x[T][n_in] Wᵀ + b. */
void nn_linear_forward(const nn_linear *l, const float *x, int T, float *y);

/** y[T][n] = LayerNorm(x[T][n]) (mean/variance in float64 for a stable reference; eps 1e-5). */
void nn_layernorm_forward(const nn_layernorm *ln, const float *x, int T, float *y);

/** In place x = 0.5 x (1 + erf(x / √2)) over n values. */
void nn_gelu(float *x, size_t n);

/** In place softmax over each of the rows (length n) of x [rows][n]; -INFINITY entries give 0. */
void nn_softmax_rows(float *x, int rows, int n);

/** Multi-head scaled dot-product attention (openai-whisper MultiHeadAttention.qkv_attention):
 *  q [Tq][q_stride], k/v [Tk][kv_stride], each holding n_head heads of d_head contiguous values;
 *  out [Tq][n_head·d_head]. Scores are (q·k)/√d_head; when causal, query i attends keys
 *  0..(q_offset + i). scratch holds Tq·Tk floats. */
void nn_attention(const float *q, int q_stride, const float *k, const float *v, int kv_stride,
                  int Tq, int Tk, int n_head, int d_head, int causal, int q_offset, float *out,
                  float *scratch);

#endif
