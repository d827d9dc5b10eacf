#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "whisper/faithful.h"

/* Convolutions are lowered to one GEMM each via im2col, laid out so that the product comes out
 * time-major ([T][D]), the layout every later layer wants. */

steno_status whisper_encode(const whisper_model *m, const float *mel, float *xa) {
    const int D = m->n_audio_state, C = m->n_mels;
    const int T1 = 2 * m->n_audio_ctx, T2 = m->n_audio_ctx;
    const int H = m->n_audio_head, dh = D / H;
    float *col = malloc(sizeof(float) * (size_t)T2 * D * 3 > sizeof(float) * (size_t)T1 * C * 3
                            ? sizeof(float) * (size_t)T2 * D * 3
                            : sizeof(float) * (size_t)T1 * C * 3);
    float *y1 = malloc(sizeof(float) * (size_t)T1 * D);
    float *h = malloc(sizeof(float) * (size_t)T2 * D);
    float *qkv = malloc(sizeof(float) * (size_t)T2 * 4 * D); /* also the MLP hidden [T][4D] */
    float *att = malloc(sizeof(float) * (size_t)T2 * D);
    float *scores = malloc(sizeof(float) * (size_t)T2 * T2);
    steno_status st = STENO_OK;
    if (!col || !y1 || !h || !qkv || !att || !scores) {
        st = steno_fail(STENO_E_NOMEM, "encoder: out of memory");
        goto done;
    }

    /* conv1: col[t][c·3 + k] = mel[c][t + k − 1] (zero outside) */
    for (int t = 0; t < T1; t++) {
        float *row = col + (size_t)t * C * 3;
        for (int c = 0; c < C; c++) {
            for (int k = 0; k < 3; k++) {
                int s = t + k - 1;
                row[c * 3 + k] = (s >= 0 && s < T1) ? mel[(size_t)c * T1 + s] : 0.0f;
            }
        }
    }
    for (int t = 0; t < T1; t++) memcpy(y1 + (size_t)t * D, m->conv1_b, sizeof(float) * D);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T1, D, C * 3, 1.0f, col, C * 3, m->conv1_w,
                C * 3, 1.0f, y1, D);
    nn_gelu(y1, (size_t)T1 * D);

    /* conv2 (stride 2): col[t][c·3 + k] = y1[2t + k − 1][c] */
    for (int t = 0; t < T2; t++) {
        float *row = col + (size_t)t * D * 3;
        for (int k = 0; k < 3; k++) {
            int s = 2 * t + k - 1;
            const float *src = (s >= 0 && s < T1) ? y1 + (size_t)s * D : NULL;
            for (int c = 0; c < D; c++) row[c * 3 + k] = src ? src[c] : 0.0f;
        }
    }
    for (int t = 0; t < T2; t++) memcpy(xa + (size_t)t * D, m->conv2_b, sizeof(float) * D);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T2, D, D * 3, 1.0f, col, D * 3, m->conv2_w,
                D * 3, 1.0f, xa, D);
    nn_gelu(xa, (size_t)T2 * D);
    for (size_t i = 0; i < (size_t)T2 * D; i++) xa[i] += m->enc_pos[i];

    for (int l = 0; l < m->n_audio_layer; l++) {
        const whisper_layer *L = &m->enc[l];
        nn_layernorm_forward(&L->attn_ln, xa, T2, h);
        nn_linear_forward(&L->attn_qkv, h, T2, qkv);
        nn_attention(qkv, 3 * D, qkv + D, qkv + 2 * D, 3 * D, T2, T2, H, dh, 0, 0, att, scores);
        nn_linear_forward(&L->attn_out, att, T2, h);
        for (size_t i = 0; i < (size_t)T2 * D; i++) xa[i] += h[i];

        nn_layernorm_forward(&L->mlp_ln, xa, T2, h);
        nn_linear_forward(&L->fc1, h, T2, qkv);
        nn_gelu(qkv, (size_t)T2 * 4 * D);
        nn_linear_forward(&L->fc2, qkv, T2, h);
        for (size_t i = 0; i < (size_t)T2 * D; i++) xa[i] += h[i];
    }
    nn_layernorm_forward(&m->enc_ln_post, xa, T2, h);
    memcpy(xa, h, sizeof(float) * (size_t)T2 * D);
done:
    free(col);
    free(y1);
    free(h);
    free(qkv);
    free(att);
    free(scores);
    return st;
}
