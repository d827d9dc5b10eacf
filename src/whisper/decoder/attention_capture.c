/* attention_capture.c — the alignment heads' pre-softmax cross-attention scores of one decoder
 * layer (attention_capture.h), one sgemm per captured head. */
#include "whisper/decoder/attention_capture.h"

#include <cblas.h>
#include <stddef.h>

void whisper_xattn_capture_layer(const whisper_xattn_capture *c, int layer, int T, const float *q, int ldq,
                                 float alpha, const float *k, int ldk, int k_transposed, int d_head) {
    if (!c || T > c->T_max || c->n_frames <= 0) return;
    for (int i = 0; i < c->n_heads; i++) {
        if (c->heads[i][0] != layer) continue;
        const int h = c->heads[i][1];
        float *out = c->scores + (size_t)i * c->T_max * c->n_frames;
        if (k_transposed) /* k [D][ldk]: head h's rows h·d_head… hold its keys for every position */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, c->n_frames, d_head, alpha, q + h * d_head, ldq,
                        k + (size_t)h * d_head * ldk, ldk, 0.0f, out, c->n_frames);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, c->n_frames, d_head, alpha, q + h * d_head, ldq,
                        k + h * d_head, ldk, 0.0f, out, c->n_frames);
    }
}
