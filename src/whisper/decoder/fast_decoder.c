/* fast_decoder.c — the fast path's text decoder (openai-whisper model.py TextDecoder): the
 * window's cross-attention keys and values from one GEMM pair, the prompt's forward, the
 * single-token steps of one or several rows (beam search), each row on its own self-attention
 * slot (kv_rows.h), and the rows' reorder. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "whisper/decoder/kv_rows.h"
#include "whisper/fast_internal.h"
#include "whisper/nn/linear_quant.h"

steno_status whisper_fast_decoder_create(whisper_fast *f, whisper_fast_decoder **out) {
    return whisper_fast_decoder_create_rows(f, 1, out);
}

steno_status whisper_fast_decoder_create_rows(whisper_fast *f, int rows, whisper_fast_decoder **out) {
    *out = NULL;
    if (rows < 1 || rows > f->m->n_text_ctx)
        return steno_fail(STENO_E_INVALID_ARG, "fast decoder: %d rows (must be 1..%d)", rows, f->m->n_text_ctx);
    const whisper_model *m = f->m;
    const size_t D = (size_t)m->n_text_state, N = (size_t)m->n_text_ctx, L = (size_t)m->n_text_layer;
    const size_t A = (size_t)f->A;
    whisper_fast_decoder *d = calloc(1, sizeof *d);
    if (!d) return steno_fail(STENO_E_NOMEM, "out of memory");
    d->f = f;
    d->step_hook = f->def_hook; /* whisper_fast_set_step_hook (cross-request batching, step_batcher.h) */
    d->step_hook_ctx = f->def_hook_ctx;
    d->ldk_self = vec_attention_ldk((int)N);
    d->ldk_cross = vec_attention_ldk((int)A);
    d->k_slot = L * (size_t)d->ldk_self * D;
    d->v_slot = L * N * D;
    steno_status st = whisper_kv_rows_init(&d->kv, rows);
    if (st != STENO_OK) {
        free(d);
        return st;
    }
    d->self_k = calloc(d->k_slot * (size_t)rows, sizeof(float));
    d->self_v = malloc(sizeof(float) * d->v_slot * (size_t)rows);
    d->cross_k = calloc(L * (size_t)d->ldk_cross * D, sizeof(float));
    d->cross_v = malloc(sizeof(float) * L * A * D);
    const int dh = (int)D / m->n_text_head;
    if (f->dt != VEC_F32 && dh % 16 == 0 && A <= VEC_ATTENTION_F16_MAX_KEYS) {
        d->cross_k16 = malloc(sizeof(uint16_t) * L * (size_t)d->ldk_cross * D);
        d->cross_v16 = malloc(sizeof(uint16_t) * L * A * D);
        if (!d->cross_k16 || !d->cross_v16) {
            whisper_fast_decoder_free(d);
            return steno_fail(STENO_E_NOMEM, "fast decoder: out of memory");
        }
    }
    d->x = malloc(sizeof(float) * N * D);
    d->h = malloc(sizeof(float) * N * D);
    d->qkv = malloc(sizeof(float) * N * 3 * D);
    d->q = malloc(sizeof(float) * N * D);
    d->att = malloc(sizeof(float) * N * D);
    d->mlp = malloc(sizeof(float) * N * 4 * D);
    if (f->emb_q) {
        d->sq = malloc((size_t)FAST_SCREEN_MAX * D);
        d->sa = malloc((size_t)FAST_SCREEN_MAX * D);
        d->sb = malloc(sizeof(float) * FAST_SCREEN_MAX * (D / VEC_SCREEN_BLOCK));
        d->hi = malloc(sizeof(float) * FAST_SCREEN_MAX * m->n_vocab);
        d->need = malloc(sizeof(uint16_t) * m->n_vocab);
        d->rows = malloc(sizeof(int) * m->n_vocab);
        if (!d->sq || !d->sa || !d->sb || !d->hi || !d->need || !d->rows) {
            whisper_fast_decoder_free(d);
            return steno_fail(STENO_E_NOMEM, "fast decoder: out of memory");
        }
    }
    if (!d->self_k || !d->self_v || !d->cross_k || !d->cross_v || !d->x || !d->h || !d->qkv || !d->q || !d->att ||
        !d->mlp) {
        whisper_fast_decoder_free(d);
        return steno_fail(STENO_E_NOMEM, "fast decoder: out of memory");
    }
    *out = d;
    return STENO_OK;
}

void whisper_fast_decoder_free(whisper_fast_decoder *d) {
    if (!d) return;
    whisper_kv_rows_free(&d->kv);
    free(d->self_k);
    free(d->self_v);
    free(d->cross_k);
    free(d->cross_v);
    free(d->cross_k16);
    free(d->cross_v16);
    free(d->x);
    free(d->h);
    free(d->qkv);
    free(d->q);
    free(d->att);
    free(d->mlp);
    free(d->sq);
    free(d->sa);
    free(d->sb);
    free(d->hi);
    free(d->rows);
    free(d->need);
    free(d);
}

/* The cross-attention projection of all layers, tmp [A][L·D], split into heads, one pool task per
 * (layer, head) i: keys transposed into cross_k [i·dh + d][ldk] and packed as halves
 * (vec_pack_keys_f16), or values into cross_v [i][A][dh] and their halves in lane order. */
typedef struct scatter_job {
    whisper_fast_decoder *d;
    const float *tmp;
    int A, LD, dh, keys;
} scatter_job;

static void scatter_task(void *ctx, int i, int n) {
    (void)n;
    const scatter_job *j = ctx;
    whisper_fast_decoder *d = j->d;
    const int A = j->A, LD = j->LD, dh = j->dh, ldk = d->ldk_cross;
    const float *src = j->tmp + (size_t)i * dh;
    if (j->keys) {
        float *kt = d->cross_k + (size_t)i * dh * ldk;
        for (int t0 = 0; t0 < A; t0 += 16) { /* 16 positions at a time: each row of kt gets 64 bytes */
            const int t1 = t0 + 16 < A ? t0 + 16 : A;
            for (int c = 0; c < dh; c++)
                for (int t = t0; t < t1; t++) kt[(size_t)c * ldk + t] = src[(size_t)t * LD + c];
        }
        if (d->cross_k16) vec_pack_keys_f16(kt, ldk, dh, A, d->cross_k16 + (size_t)i * dh * ldk);
    } else {
        float *v = d->cross_v + (size_t)i * A * dh;
        for (int t = 0; t < A; t++) memcpy(v + (size_t)t * dh, src + (size_t)t * LD, sizeof(float) * dh);
        if (d->cross_v16) vec_f32_to_f16_lanes(v, d->cross_v16 + (size_t)i * A * dh, (size_t)A * dh);
    }
}

void whisper_fast_decoder_set_audio(whisper_fast_decoder *d, const float *xa) {
    whisper_fast *f = d->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state, L = m->n_text_layer, H = m->n_text_head, A = f->A;
    float *tmp = f->big; /* the encoder is done with it until the next window */
    scatter_job j = {d, tmp, A, L * D, D / H, 1};
    fast_linear(f, VEC_F32, f->cross_k_w, f->cross_k_b, xa, A, L * D, D, tmp);
    steno_pool_run(f->pool, scatter_task, &j, L * H);
    fast_linear(f, VEC_F32, f->cross_v_w, f->cross_v_b, xa, A, L * D, D, tmp);
    j.keys = 0;
    steno_pool_run(f->pool, scatter_task, &j, L * H);
    d->n_past = 0;
}

void whisper_fast_decoder_reset(whisper_fast_decoder *d) { d->n_past = 0; }

void whisper_fast_decoder_set_capture(whisper_fast_decoder *d, const whisper_xattn_capture *c) { d->capture = c; }

/* Cross-attention of nq queries for layer l over the window's K/V: the float16 copies when the
 * decoder keeps them and halves are wanted (the single-token steps), else the float32 ones (the
 * prompt, whose queries share 6-query tiles, and the f32 gate). */
void fast_cross_attention(whisper_fast_decoder *d, steno_pool *pool, int l, const float *q, int nq, int halves,
                          float *out) {
    whisper_fast *f = d->f;
    const int D = f->m->n_text_state, H = f->m->n_text_head, dh = D / H, A = f->A;
    if (halves && d->cross_k16) {
        fast_attn16_job j = {q, d->cross_k16 + (size_t)l * D * d->ldk_cross, d->cross_v16 + (size_t)l * A * D,
                        d->ldk_cross, A, nq, dh, H, out};
        steno_pool_run(pool, fast_attn16_task, &j, H);
        return;
    }
    fast_attn_job cj = {q, D, d->cross_k + (size_t)l * D * d->ldk_cross, d->ldk_cross,
                   d->cross_v + (size_t)l * H * A * dh, (size_t)A * dh, dh, A, nq, dh, H, 0, 0, 0, out};
    cj.q_blocks = nq >= 64 ? 4 * f->n_threads : 1; /* as fast_attention(), on the given pool */
    steno_pool_run(pool, fast_attn_task, &cj, cj.H * cj.q_blocks);
}

steno_status whisper_fast_decoder_forward(whisper_fast_decoder *d, const int *tokens, int T, float *logits) {
    whisper_fast *f = d->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state, N = m->n_text_ctx, H = m->n_text_head, dh = D / H;
    const int off = d->n_past;
    const vec_dtype dt = f->dt;
    if (T <= 0 || off + T > N)
        return steno_fail(STENO_E_INVALID_ARG, "decoder: %d tokens at position %d exceed n_text_ctx %d", T, off, N);
    if (T == 1 && d->step_hook && !d->capture) return d->step_hook(d->step_hook_ctx, d, tokens, 1, logits);
    for (int t = 0; t < T; t++) {
        if (tokens[t] < 0 || tokens[t] >= m->n_vocab)
            return steno_fail(STENO_E_INVALID_ARG, "decoder: token id %d out of range", tokens[t]);
        float *xr = d->x + (size_t)t * D;
        if (dt == DT_Q) wq_dequant_rows(f->emb, tokens[t], tokens[t] + 1, xr);
        else if (dt == VEC_F16) vec_f16_to_f32((const uint16_t *)f->emb + (size_t)tokens[t] * D, xr, (size_t)D);
        else memcpy(xr, (const float *)f->emb + (size_t)tokens[t] * D, sizeof(float) * D);
        vec_add(xr, m->dec_pos + (size_t)(off + t) * D, (size_t)D);
    }
    const float scale = 1.0f / sqrtf((float)dh);
    for (int l = 0; l < m->n_text_layer; l++) {
        const whisper_layer *L = &m->dec[l];
        const fast_layer *FL = &f->dec[l];
        float *Kc = d->self_k + d->k_slot * d->kv.slot[0] + (size_t)l * D * d->ldk_self;
        float *Vc = d->self_v + d->v_slot * d->kv.slot[0] + (size_t)l * H * N * dh;

        fast_layernorm(f, &L->attn_ln, d->x, T, d->h);
        fast_linear(f, dt, FL->qkv, L->attn_qkv.b, d->h, T, 3 * D, D, d->qkv);
        for (int t = 0; t < T; t++) {
            const float *r = d->qkv + (size_t)t * 3 * D;
            for (int i = 0; i < D; i++) d->q[(size_t)t * D + i] = r[i] * scale;
            for (int i = 0; i < D; i++) Kc[(size_t)i * d->ldk_self + off + t] = r[D + i];
            for (int h = 0; h < H; h++)
                memcpy(Vc + ((size_t)h * N + off + t) * dh, r + 2 * D + h * dh, sizeof(float) * dh);
        }
        fast_attn_job sj = {d->q, D, Kc, d->ldk_self, Vc, (size_t)N * dh, dh, off + T, T, dh, H, 1, off, 0, d->att};
        fast_attention(f, &sj);
        fast_linear(f, dt, FL->out, L->attn_out.b, d->att, T, D, D, d->h);
        vec_add(d->x, d->h, (size_t)T * D);

        fast_layernorm(f, &L->cross_ln, d->x, T, d->h);
        fast_linear(f, dt, FL->cross_q, L->cross_q.b, d->h, T, D, D, d->q);
        for (size_t i = 0; i < (size_t)T * D; i++) d->q[i] *= scale;
        whisper_xattn_capture_layer(d->capture, l, T, d->q, D, 1.0f, d->cross_k + (size_t)l * D * d->ldk_cross,
                                    d->ldk_cross, 1, dh);
        fast_cross_attention(d, f->pool, l, d->q, T, T == 1, d->att);
        fast_linear(f, dt, FL->cross_out, L->cross_out.b, d->att, T, D, D, d->h);
        vec_add(d->x, d->h, (size_t)T * D);

        fast_layernorm(f, &L->mlp_ln, d->x, T, d->h);
        fast_linear(f, dt, FL->fc1, L->fc1.b, d->h, T, 4 * D, D, d->mlp);
        fast_gelu(f, d->mlp, (size_t)T * 4 * D);
        fast_linear(f, dt, FL->fc2, L->fc2.b, d->mlp, T, D, 4 * D, d->h);
        vec_add(d->x, d->h, (size_t)T * D);
    }
    d->n_past = off + T;
    if (T == 1 && d->screen_allow && f->emb_q) fast_logit_screen(d, d->x, logits);
    else whisper_fast_decoder_logits_at(d, T - 1, logits);
    return STENO_OK;
}

void whisper_fast_decoder_logits_at(whisper_fast_decoder *d, int t, float *logits) {
    whisper_fast *f = d->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state;
    vec_layernorm(d->x + (size_t)t * D, m->dec_ln.gamma, m->dec_ln.beta, D, d->h);
    fast_linear(f, f->dt, f->emb, NULL, d->h, 1, m->n_vocab, D, logits);
}

int whisper_fast_decoder_rows(const whisper_fast_decoder *d) { return d->kv.rows; }

/* Self-attention of B rows, one query each, every row against its own slot's cache. */
typedef struct self_rows_job {
    const whisper_fast_decoder *d;
    int l, nk, H, dh, D, N;
    const float *q; /* [B][D] scaled */
    float *out;     /* [B][D] */
} self_rows_job;

static void self_rows_task(void *ctx, int t, int n) {
    (void)n;
    const self_rows_job *j = ctx;
    const whisper_fast_decoder *d = j->d;
    const int h = t % j->H, b = t / j->H, s = d->kv.slot[b];
    const float *Kc = d->self_k + d->k_slot * s + (size_t)j->l * j->D * d->ldk_self;
    const float *Vc = d->self_v + d->v_slot * s + (size_t)j->l * j->H * j->N * j->dh;
    vec_attention(j->q + (size_t)b * j->D + h * j->dh, j->D, Kc + (size_t)h * j->dh * d->ldk_self, d->ldk_self,
                  Vc + (size_t)h * j->N * j->dh, j->dh, j->nk, j->dh, 1, 1, j->nk - 1,
                  j->out + (size_t)b * j->D + h * j->dh, j->D);
}

steno_status whisper_fast_decoder_step_rows(whisper_fast_decoder *d, const int *tokens, int B, float *logits) {
    whisper_fast *f = d->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state, N = m->n_text_ctx, H = m->n_text_head, dh = D / H, V = m->n_vocab;
    const int off = d->n_past;
    const vec_dtype dt = f->dt;
    if (B < 1 || B > d->kv.rows)
        return steno_fail(STENO_E_INVALID_ARG, "decoder: %d rows (the decoder has %d)", B, d->kv.rows);
    if (off < 1 || off + 1 > N)
        return steno_fail(STENO_E_INVALID_ARG, "decoder: a row step at position %d (needs 1..%d)", off, N - 1);
    if (d->step_hook) return d->step_hook(d->step_hook_ctx, d, tokens, B, logits);
    for (int b = 0; b < B; b++) {
        if (tokens[b] < 0 || tokens[b] >= V)
            return steno_fail(STENO_E_INVALID_ARG, "decoder: token id %d out of range", tokens[b]);
        float *xr = d->x + (size_t)b * D;
        if (dt == DT_Q) wq_dequant_rows(f->emb, tokens[b], tokens[b] + 1, xr);
        else if (dt == VEC_F16) vec_f16_to_f32((const uint16_t *)f->emb + (size_t)tokens[b] * D, xr, (size_t)D);
        else memcpy(xr, (const float *)f->emb + (size_t)tokens[b] * D, sizeof(float) * D);
        vec_add(xr, m->dec_pos + (size_t)off * D, (size_t)D);
    }
    const float scale = 1.0f / sqrtf((float)dh);
    for (int l = 0; l < m->n_text_layer; l++) {
        const whisper_layer *L = &m->dec[l];
        const fast_layer *FL = &f->dec[l];

        fast_layernorm(f, &L->attn_ln, d->x, B, d->h);
        fast_linear_rows(f, dt, FL->qkv, L->attn_qkv.b, d->h, B, 3 * D, D, d->qkv);
        for (int b = 0; b < B; b++) {
            const int s = d->kv.slot[b];
            float *Kc = d->self_k + d->k_slot * s + (size_t)l * D * d->ldk_self;
            float *Vc = d->self_v + d->v_slot * s + (size_t)l * H * N * dh;
            const float *r = d->qkv + (size_t)b * 3 * D;
            for (int i = 0; i < D; i++) d->q[(size_t)b * D + i] = r[i] * scale;
            for (int i = 0; i < D; i++) Kc[(size_t)i * d->ldk_self + off] = r[D + i];
            for (int h = 0; h < H; h++) memcpy(Vc + ((size_t)h * N + off) * dh, r + 2 * D + h * dh, sizeof(float) * dh);
        }
        self_rows_job sj = {d, l, off + 1, H, dh, D, N, d->q, d->att};
        steno_pool_run(f->pool, self_rows_task, &sj, H * B);
        fast_linear_rows(f, dt, FL->out, L->attn_out.b, d->att, B, D, D, d->h);
        vec_add(d->x, d->h, (size_t)B * D);

        /* every row's query attends to the one encoder output of the window (broadcast) */
        fast_layernorm(f, &L->cross_ln, d->x, B, d->h);
        fast_linear_rows(f, dt, FL->cross_q, L->cross_q.b, d->h, B, D, D, d->q);
        for (size_t i = 0; i < (size_t)B * D; i++) d->q[i] *= scale;
        fast_cross_attention(d, f->pool, l, d->q, B, 1, d->att);
        fast_linear_rows(f, dt, FL->cross_out, L->cross_out.b, d->att, B, D, D, d->h);
        vec_add(d->x, d->h, (size_t)B * D);

        fast_layernorm(f, &L->mlp_ln, d->x, B, d->h);
        fast_linear_rows(f, dt, FL->fc1, L->fc1.b, d->h, B, 4 * D, D, d->mlp);
        fast_gelu(f, d->mlp, (size_t)B * 4 * D);
        fast_linear_rows(f, dt, FL->fc2, L->fc2.b, d->mlp, B, D, 4 * D, d->h);
        vec_add(d->x, d->h, (size_t)B * D);
    }
    d->n_past = off + 1;
    for (int b = 0; b < B; b++)
        vec_layernorm(d->x + (size_t)b * D, m->dec_ln.gamma, m->dec_ln.beta, D, d->h + (size_t)b * D);
    fast_linear_rows(f, dt, f->emb, NULL, d->h, B, V, D, logits);
    return STENO_OK;
}

static void fast_copy_slot(void *ctx, int from, int to) {
    whisper_fast_decoder *d = ctx;
    const whisper_model *m = d->f->m;
    const int D = m->n_text_state, N = m->n_text_ctx, H = m->n_text_head, dh = D / H, L = m->n_text_layer;
    const size_t np = (size_t)d->n_past;
    const float *ks = d->self_k + d->k_slot * from, *vs = d->self_v + d->v_slot * from;
    float *kd = d->self_k + d->k_slot * to, *vd = d->self_v + d->v_slot * to;
    for (size_t i = 0; i < (size_t)L * D; i++) memcpy(kd + i * d->ldk_self, ks + i * d->ldk_self, sizeof(float) * np);
    for (size_t i = 0; i < (size_t)L * H; i++) memcpy(vd + i * N * dh, vs + i * N * dh, sizeof(float) * np * dh);
}

steno_status whisper_fast_decoder_reorder(whisper_fast_decoder *d, const int *src, int B) {
    return whisper_kv_rows_reorder(&d->kv, src, B, fast_copy_slot, d);
}

