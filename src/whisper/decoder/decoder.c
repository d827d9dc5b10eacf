#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "whisper/faithful.h"

steno_status whisper_decoder_init(whisper_decoder *d, const whisper_model *m) {
    return whisper_decoder_init_rows(d, m, 1);
}

steno_status whisper_decoder_init_rows(whisper_decoder *d, const whisper_model *m, int rows) {
    memset(d, 0, sizeof *d);
    if (m->decoder_f16)
        return steno_fail(STENO_E_INVALID_ARG, "faithful decoder: the model was loaded with float16 decoder weights");
    if (rows < 1 || rows > m->n_text_ctx)
        return steno_fail(STENO_E_INVALID_ARG, "decoder: %d rows (must be 1..%d)", rows, m->n_text_ctx);
    d->m = m;
    const size_t D = (size_t)m->n_text_state, N = (size_t)m->n_text_ctx;
    const size_t Lyr = (size_t)m->n_text_layer, A = (size_t)m->n_audio_ctx;
    steno_status st = whisper_kv_rows_init(&d->kv, rows);
    if (st != STENO_OK) return st;
    d->self_k = calloc(Lyr * N * D * (size_t)rows, sizeof(float));
    d->self_v = calloc(Lyr * N * D * (size_t)rows, sizeof(float));
    d->cross_k = calloc(Lyr * A * D, sizeof(float));
    d->cross_v = calloc(Lyr * A * D, sizeof(float));
    d->x = malloc(N * D * sizeof(float));
    d->h = malloc(N * D * sizeof(float));
    d->qkv = malloc(N * 4 * D * sizeof(float));
    d->attn = malloc(N * D * sizeof(float));
    d->mlp = malloc(N * 4 * D * sizeof(float));
    d->scores = malloc(N * (A > N ? A : N) * sizeof(float));
    if (!d->self_k || !d->self_v || !d->cross_k || !d->cross_v || !d->x || !d->h || !d->qkv ||
        !d->attn || !d->mlp || !d->scores) {
        whisper_decoder_free(d);
        return steno_fail(STENO_E_NOMEM, "decoder: out of memory");
    }
    return STENO_OK;
}

void whisper_decoder_free(whisper_decoder *d) {
    whisper_kv_rows_free(&d->kv);
    free(d->self_k);
    free(d->self_v);
    free(d->cross_k);
    free(d->cross_v);
    free(d->x);
    free(d->h);
    free(d->qkv);
    free(d->attn);
    free(d->mlp);
    free(d->scores);
    memset(d, 0, sizeof *d);
}

void whisper_decoder_set_audio(whisper_decoder *d, const float *xa) {
    const whisper_model *m = d->m;
    const int D = m->n_text_state, A = m->n_audio_ctx;
    float *kv = malloc(sizeof(float) * (size_t)A * 2 * D);
    for (int l = 0; l < m->n_text_layer; l++) {
        float *ck = d->cross_k + (size_t)l * A * D, *cv = d->cross_v + (size_t)l * A * D;
        if (kv) {
            nn_linear_forward(&m->dec[l].cross_kv, xa, A, kv);
            for (int t = 0; t < A; t++) {
                memcpy(ck + (size_t)t * D, kv + (size_t)t * 2 * D, sizeof(float) * D);
                memcpy(cv + (size_t)t * D, kv + (size_t)t * 2 * D + D, sizeof(float) * D);
            }
        } else { /* low memory: split the fused projection into its K and V halves */
            nn_linear k = m->dec[l].cross_kv, v = k;
            k.n_out = v.n_out = D;
            v.w += (size_t)D * D;
            if (v.b) v.b += D;
            nn_linear_forward(&k, xa, A, ck);
            nn_linear_forward(&v, xa, A, cv);
        }
    }
    free(kv);
    d->n_past = 0;
}

void whisper_decoder_reset(whisper_decoder *d) { d->n_past = 0; }

steno_status whisper_decoder_forward(whisper_decoder *d, const int *tokens, int T, float *logits,
                                     int all_positions) {
    const whisper_model *m = d->m;
    const int D = m->n_text_state, N = m->n_text_ctx, A = m->n_audio_ctx;
    const int H = m->n_text_head, dh = D / H, off = d->n_past;
    if (T <= 0 || off + T > N)
        return steno_fail(STENO_E_INVALID_ARG, "decoder: %d tokens at position %d exceed n_text_ctx %d",
                          T, off, N);
    for (int t = 0; t < T; t++) {
        if (tokens[t] < 0 || tokens[t] >= m->n_vocab)
            return steno_fail(STENO_E_INVALID_ARG, "decoder: token id %d out of range", tokens[t]);
        const float *e = m->tok_emb + (size_t)tokens[t] * D, *p = m->dec_pos + (size_t)(off + t) * D;
        float *xr = d->x + (size_t)t * D;
        for (int i = 0; i < D; i++) xr[i] = e[i] + p[i];
    }
    float *x = d->x, *h = d->h, *qkv = d->qkv, *att = d->attn;
    for (int l = 0; l < m->n_text_layer; l++) {
        const whisper_layer *L = &m->dec[l];
        const size_t slot = (size_t)d->kv.slot[0] * m->n_text_layer * N * D;
        float *K = d->self_k + slot + (size_t)l * N * D, *V = d->self_v + slot + (size_t)l * N * D;

        nn_layernorm_forward(&L->attn_ln, x, T, h);
        nn_linear_forward(&L->attn_qkv, h, T, qkv);
        for (int t = 0; t < T; t++) {
            memcpy(K + (size_t)(off + t) * D, qkv + (size_t)t * 3 * D + D, sizeof(float) * D);
            memcpy(V + (size_t)(off + t) * D, qkv + (size_t)t * 3 * D + 2 * D, sizeof(float) * D);
        }
        nn_attention(qkv, 3 * D, K, V, D, T, off + T, H, dh, 1, off, att, d->scores);
        nn_linear_forward(&L->attn_out, att, T, h);
        for (size_t i = 0; i < (size_t)T * D; i++) x[i] += h[i];

        nn_layernorm_forward(&L->cross_ln, x, T, h);
        nn_linear_forward(&L->cross_q, h, T, qkv);
        whisper_xattn_capture_layer(d->capture, l, T, qkv, D, 1.0f / sqrtf((float)dh), d->cross_k + (size_t)l * A * D,
                                    D, 0, dh);
        nn_attention(qkv, D, d->cross_k + (size_t)l * A * D, d->cross_v + (size_t)l * A * D, D, T, A,
                     H, dh, 0, 0, att, d->scores);
        nn_linear_forward(&L->cross_out, att, T, h);
        for (size_t i = 0; i < (size_t)T * D; i++) x[i] += h[i];

        nn_layernorm_forward(&L->mlp_ln, x, T, h);
        nn_linear_forward(&L->fc1, h, T, d->mlp);
        nn_gelu(d->mlp, (size_t)T * 4 * D);
        nn_linear_forward(&L->fc2, d->mlp, T, h);
        for (size_t i = 0; i < (size_t)T * D; i++) x[i] += h[i];
    }
    d->n_past = off + T;
    if (all_positions) {
        nn_layernorm_forward(&m->dec_ln, x, T, h);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, m->n_vocab, D, 1.0f, h, D, m->tok_emb,
                    D, 0.0f, logits, m->n_vocab);
    } else {
        nn_layernorm_forward(&m->dec_ln, x + (size_t)(T - 1) * D, 1, h);
        cblas_sgemv(CblasRowMajor, CblasNoTrans, m->n_vocab, D, 1.0f, m->tok_emb, D, h, 1, 0.0f, logits,
                    1);
    }
    return STENO_OK;
}

void whisper_decoder_logits_at(whisper_decoder *d, int t, float *logits) {
    const whisper_model *m = d->m;
    const int D = m->n_text_state;
    nn_layernorm_forward(&m->dec_ln, d->x + (size_t)t * D, 1, d->h);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, m->n_vocab, D, 1.0f, m->tok_emb, D, d->h, 1, 0.0f, logits,
                1);
}

steno_status whisper_decoder_step_rows(whisper_decoder *d, const int *tokens, int B, float *logits) {
    const whisper_model *m = d->m;
    const int D = m->n_text_state, N = m->n_text_ctx, A = m->n_audio_ctx;
    const int H = m->n_text_head, dh = D / H, off = d->n_past, Lyr = m->n_text_layer;
    if (B < 1 || B > d->kv.rows)
        return steno_fail(STENO_E_INVALID_ARG, "decoder: %d rows (the decoder has %d)", B, d->kv.rows);
    if (off < 1 || off + 1 > N)
        return steno_fail(STENO_E_INVALID_ARG, "decoder: a row step at position %d (needs 1..%d)", off, N - 1);
    for (int b = 0; b < B; b++) {
        if (tokens[b] < 0 || tokens[b] >= m->n_vocab)
            return steno_fail(STENO_E_INVALID_ARG, "decoder: token id %d out of range", tokens[b]);
        const float *e = m->tok_emb + (size_t)tokens[b] * D, *p = m->dec_pos + (size_t)off * D;
        float *xr = d->x + (size_t)b * D;
        for (int i = 0; i < D; i++) xr[i] = e[i] + p[i];
    }
    float *x = d->x, *h = d->h, *qkv = d->qkv, *att = d->attn;
    for (int l = 0; l < Lyr; l++) {
        const whisper_layer *L = &m->dec[l];

        nn_layernorm_forward(&L->attn_ln, x, B, h);
        nn_linear_forward(&L->attn_qkv, h, B, qkv);
        for (int b = 0; b < B; b++) {
            const size_t slot = (size_t)d->kv.slot[b] * Lyr * N * D;
            float *K = d->self_k + slot + (size_t)l * N * D, *V = d->self_v + slot + (size_t)l * N * D;
            memcpy(K + (size_t)off * D, qkv + (size_t)b * 3 * D + D, sizeof(float) * D);
            memcpy(V + (size_t)off * D, qkv + (size_t)b * 3 * D + 2 * D, sizeof(float) * D);
            nn_attention(qkv + (size_t)b * 3 * D, 3 * D, K, V, D, 1, off + 1, H, dh, 1, off, att + (size_t)b * D,
                         d->scores);
        }
        nn_linear_forward(&L->attn_out, att, B, h);
        for (size_t i = 0; i < (size_t)B * D; i++) x[i] += h[i];

        nn_layernorm_forward(&L->cross_ln, x, B, h);
        nn_linear_forward(&L->cross_q, h, B, qkv);
        nn_attention(qkv, D, d->cross_k + (size_t)l * A * D, d->cross_v + (size_t)l * A * D, D, B, A, H, dh, 0, 0,
                     att, d->scores);
        nn_linear_forward(&L->cross_out, att, B, h);
        for (size_t i = 0; i < (size_t)B * D; i++) x[i] += h[i];

        nn_layernorm_forward(&L->mlp_ln, x, B, h);
        nn_linear_forward(&L->fc1, h, B, d->mlp);
        nn_gelu(d->mlp, (size_t)B * 4 * D);
        nn_linear_forward(&L->fc2, d->mlp, B, h);
        for (size_t i = 0; i < (size_t)B * D; i++) x[i] += h[i];
    }
    d->n_past = off + 1;
    nn_layernorm_forward(&m->dec_ln, x, B, h);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, m->n_vocab, D, 1.0f, h, D, m->tok_emb, D, 0.0f, logits,
                m->n_vocab);
    return STENO_OK;
}

static void copy_slot(void *ctx, int from, int to) {
    whisper_decoder *d = ctx;
    const whisper_model *m = d->m;
    const size_t per = (size_t)m->n_text_ctx * m->n_text_state, slot = per * m->n_text_layer;
    for (int l = 0; l < m->n_text_layer; l++) {
        memcpy(d->self_k + slot * to + per * l, d->self_k + slot * from + per * l,
               sizeof(float) * (size_t)d->n_past * m->n_text_state);
        memcpy(d->self_v + slot * to + per * l, d->self_v + slot * from + per * l,
               sizeof(float) * (size_t)d->n_past * m->n_text_state);
    }
}

steno_status whisper_decoder_reorder(whisper_decoder *d, const int *src, int B) {
    return whisper_kv_rows_reorder(&d->kv, src, B, copy_slot, d);
}
