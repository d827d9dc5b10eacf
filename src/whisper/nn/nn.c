#include "whisper/nn/nn.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void nn_linear_forward(const nn_linear *l, const float *x, int T, float *y) {
    if (l->b) {
        for (int t = 0; t < T; t++) memcpy(y + (size_t)t * l->n_out, l->b, sizeof(float) * l->n_out);
    }
    if (T == 1) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, l->n_out, l->n_in, 1.0f, l->w, l->n_in, x, 1,
                    l->b ? 1.0f : 0.0f, y, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, l->n_out, l->n_in, 1.0f, x, l->n_in,
                l->w, l->n_in, l->b ? 1.0f : 0.0f, y, l->n_out);
}

void nn_layernorm_forward(const nn_layernorm *ln, const float *x, int T, float *y) {
    const int n = ln->n;
    for (int t = 0; t < T; t++) {
        const float *xr = x + (size_t)t * n;
        float *yr = y + (size_t)t * n;
        double mean = 0.0, var = 0.0;
        for (int i = 0; i < n; i++) mean += xr[i];
        mean /= n;
        for (int i = 0; i < n; i++) {
            double d = xr[i] - mean;
            var += d * d;
        }
        var /= n;
        const float inv = (float)(1.0 / sqrt(var + 1e-5));
        const float m = (float)mean;
        for (int i = 0; i < n; i++) yr[i] = (xr[i] - m) * inv * ln->gamma[i] + ln->beta[i];
    }
}

void nn_gelu(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

void nn_softmax_rows(float *x, int rows, int n) {
    for (int r = 0; r < rows; r++) {
        float *xr = x + (size_t)r * n;
        float mx = -INFINITY;
        for (int i = 0; i < n; i++) mx = xr[i] > mx ? xr[i] : mx;
        if (mx == -INFINITY) { /* every entry masked: define the row as zeros */
            memset(xr, 0, sizeof(float) * n);
            continue;
        }
        double sum = 0.0;
        for (int i = 0; i < n; i++) {
            xr[i] = expf(xr[i] - mx);
            sum += xr[i];
        }
        const float inv = (float)(1.0 / sum);
        for (int i = 0; i < n; i++) xr[i] *= inv;
    }
}

void nn_attention(const float *q, int q_stride, const float *k, const float *v, int kv_stride,
                  int Tq, int Tk, int n_head, int d_head, int causal, int q_offset, float *out,
                  float *scratch) {
    const float scale = 1.0f / sqrtf((float)d_head);
    const int D = n_head * d_head;
    for (int h = 0; h < n_head; h++) {
        /* scores[Tq][Tk] = q_h k_hᵀ · scale */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, Tk, d_head, scale, q + h * d_head,
                    q_stride, k + h * d_head, kv_stride, 0.0f, scratch, Tk);
        if (causal) {
            for (int i = 0; i < Tq; i++) {
                for (int j = q_offset + i + 1; j < Tk; j++) scratch[(size_t)i * Tk + j] = -INFINITY;
            }
        }
        nn_softmax_rows(scratch, Tq, Tk);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, d_head, Tk, 1.0f, scratch, Tk,
                    v + h * d_head, kv_stride, 0.0f, out + h * d_head, D);
    }
}
