/* fast_group_step.c — rows of several fast-path decoders in one single-token step (batched long-form
 * mode, whisper/longform/window_group.c): each decoder keeps its own window's cross-attention K/V, caches and
 * position; the weight GEMVs and the vocabulary projection are one pass over all rows. Every
 * row's logits are bit-identical to its own decoder's single-row step (test_fast_group). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/quant/wq.h"
#include "whisper/fast_internal.h"

/* ---------------------------------------------------------------- rows of several decoders */

void whisper_fast_decoder_set_step_hook(whisper_fast_decoder *d, whisper_fast_step_hook hook, void *ctx) {
    d->step_hook = hook;
    d->step_hook_ctx = ctx;
}

void whisper_fast_set_step_hook(whisper_fast *f, whisper_fast_step_hook hook, void *ctx) {
    f->def_hook = hook;
    f->def_hook_ctx = ctx;
}

void whisper_fast_set_encode_hook(whisper_fast *f, whisper_fast_encode_hook hook, void *ctx) {
    f->enc_hook = hook;
    f->enc_hook_ctx = ctx;
}

struct whisper_fast_group {
    whisper_fast *f;
    int max_rows;
    float *x, *h, *qkv, *q, *att, *mlp; /* [max_rows][D] ([3D], [4D]) */
    const whisper_fast_decoder **row_dec; /* [max_rows] the decoder of each row */
    int *row_slot, *row_nk;               /* its self-attention slot, keys attended (n_past + 1) */
    float *logits;                        /* [max_rows][n_vocab] (quantized weights) */
    float **row_out;                      /* [max_rows] where each row's logits go */
    void *qact; /* quantized weights: [max_rows] activation rows (f->qact holds n_text_ctx only) */
};

steno_status whisper_fast_group_create(whisper_fast *f, int max_rows, whisper_fast_group **out) {
    *out = NULL;
    if (max_rows < 1) return steno_fail(STENO_E_INVALID_ARG, "fast group: %d rows (must be >= 1)", max_rows);
    const size_t D = (size_t)f->m->n_text_state, R = (size_t)max_rows;
    whisper_fast_group *g = calloc(1, sizeof *g);
    if (!g) return steno_fail(STENO_E_NOMEM, "out of memory");
    g->f = f;
    g->max_rows = max_rows;
    g->x = malloc(sizeof(float) * R * D);
    g->h = malloc(sizeof(float) * R * D);
    g->qkv = malloc(sizeof(float) * R * 3 * D);
    g->q = malloc(sizeof(float) * R * D);
    g->att = malloc(sizeof(float) * R * D);
    g->mlp = malloc(sizeof(float) * R * 4 * D);
    g->row_dec = malloc(sizeof *g->row_dec * R);
    g->row_slot = malloc(sizeof(int) * R);
    g->row_nk = malloc(sizeof(int) * R);
    g->row_out = malloc(sizeof *g->row_out * R);
    g->logits = f->dt == DT_Q ? malloc(sizeof(float) * R * (size_t)f->m->n_vocab) : NULL;
    if (f->m->wq_type) {
        const size_t bytes = R * wq_act_bytes(f->m->wq_type, 4 * (int)D);
        if (!(g->qact = aligned_alloc(64, (bytes + 63) & ~(size_t)63))) {
            whisper_fast_group_free(g);
            return steno_fail(STENO_E_NOMEM, "fast group: out of memory");
        }
    }
    if ((f->dt == DT_Q && !g->logits) || !g->row_out || !g->x || !g->h || !g->qkv || !g->q || !g->att || !g->mlp ||
        !g->row_dec || !g->row_slot || !g->row_nk) {
        whisper_fast_group_free(g);
        return steno_fail(STENO_E_NOMEM, "fast group: out of memory");
    }
    *out = g;
    return STENO_OK;
}

void whisper_fast_group_free(whisper_fast_group *g) {
    if (!g) return;
    free(g->x);
    free(g->h);
    free(g->qkv);
    free(g->q);
    free(g->att);
    free(g->mlp);
    free(g->row_dec);
    free(g->row_slot);
    free(g->row_nk);
    free(g->logits);
    free(g->row_out);
    free(g->qact);
    free(g);
}

/* Self-attention of the group's rows: row b against its own decoder's slot, n_past + 1 keys. */
typedef struct group_self_job {
    const whisper_fast_group *g;
    int l, H, dh, D, N;
} group_self_job;

static void group_self_task(void *ctx, int t, int n) {
    (void)n;
    const group_self_job *j = ctx;
    const whisper_fast_group *g = j->g;
    const int h = t % j->H, b = t / j->H, s = g->row_slot[b], nk = g->row_nk[b];
    const whisper_fast_decoder *d = g->row_dec[b];
    const float *Kc = d->self_k + d->k_slot * s + (size_t)j->l * j->D * d->ldk_self;
    const float *Vc = d->self_v + d->v_slot * s + (size_t)j->l * j->H * j->N * j->dh;
    vec_attention(g->q + (size_t)b * j->D + h * j->dh, j->D, Kc + (size_t)h * j->dh * d->ldk_self, d->ldk_self,
                  Vc + (size_t)h * j->N * j->dh, j->dh, nk, j->dh, 1, 1, nk - 1, g->att + (size_t)b * j->D + h * j->dh,
                  j->D);
}

/* The same operations, in the same order, as whisper_fast_decoder_step_rows (and so as
 * whisper_fast_decoder_forward with T = 1 and no screen), over the rows of several decoders: the
 * weight GEMVs see all rows at once (vec_gemv_rows: each output element one dot product whatever
 * the row count), while self-attention reads each row's own cache at its own position and
 * cross-attention runs per decoder over that decoder's window, on the group's pool (the members of
 * a cross-request batch each have a pool of their own, idle while they wait on the step). */
steno_status whisper_fast_group_check(const whisper_fast_group *g, const whisper_fast_decoder *d, int i, int B,
                                      const int *tokens) {
    const whisper_fast *f = g->f;
    const whisper_model *m = f->m;
    if (d->f->m != m || d->f->dt != f->dt || d->f->A != f->A)
        return steno_fail(STENO_E_INVALID_ARG, "fast group: decoder %d belongs to another model", i);
    if (B < 1 || B > d->kv.rows)
        return steno_fail(STENO_E_INVALID_ARG, "fast group: %d rows for decoder %d (it has %d)", B, i, d->kv.rows);
    if (d->n_past + 1 > m->n_text_ctx)
        return steno_fail(STENO_E_INVALID_ARG, "fast group: decoder %d at position %d (needs < %d)", i, d->n_past,
                          m->n_text_ctx);
    for (int b = 0; b < B; b++)
        if (tokens[b] < 0 || tokens[b] >= m->n_vocab)
            return steno_fail(STENO_E_INVALID_ARG, "decoder: token id %d out of range", tokens[b]);
    return STENO_OK;
}

steno_status whisper_fast_group_step(whisper_fast_group *g, whisper_fast_decoder *const *ds, const int *n_rows, int n,
                                     const int *const *tokens, float *const *logits) {
    whisper_fast *f = g->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state, N = m->n_text_ctx, H = m->n_text_head, dh = D / H, V = m->n_vocab;
    const vec_dtype dt = f->dt;
    int R = 0;
    for (int i = 0; i < n; i++) {
        const whisper_fast_decoder *d = ds[i];
        const steno_status st = whisper_fast_group_check(g, d, i, n_rows[i], tokens[i]);
        if (st != STENO_OK) return st;
        if (R + n_rows[i] > g->max_rows)
            return steno_fail(STENO_E_INVALID_ARG, "fast group: more than %d rows", g->max_rows);
        for (int b = 0; b < n_rows[i]; b++, R++) {
            const int tok = tokens[i][b];
            g->row_dec[R] = d;
            g->row_slot[R] = d->kv.slot[b];
            g->row_nk[R] = d->n_past + 1;
            float *xr = g->x + (size_t)R * D;
            if (dt == DT_Q) wq_dequant_rows(f->emb, tok, tok + 1, xr);
            else if (dt == VEC_F16) vec_f16_to_f32((const uint16_t *)f->emb + (size_t)tok * D, xr, (size_t)D);
            else memcpy(xr, (const float *)f->emb + (size_t)tok * D, sizeof(float) * D);
            vec_add(xr, m->dec_pos + (size_t)d->n_past * D, (size_t)D);
        }
    }
    const float scale = 1.0f / sqrtf((float)dh);
    for (int l = 0; l < m->n_text_layer; l++) {
        const whisper_layer *L = &m->dec[l];
        const fast_layer *FL = &f->dec[l];

        fast_layernorm(f, &L->attn_ln, g->x, R, g->h);
        fast_linear_rows_act(f, dt, FL->qkv, L->attn_qkv.b, g->h, R, 3 * D, D, g->qkv, g->qact);
        for (int b = 0; b < R; b++) {
            const whisper_fast_decoder *d = g->row_dec[b];
            const int s = g->row_slot[b], off = g->row_nk[b] - 1;
            float *Kc = d->self_k + d->k_slot * s + (size_t)l * D * d->ldk_self;
            float *Vc = d->self_v + d->v_slot * s + (size_t)l * H * N * dh;
            const float *r = g->qkv + (size_t)b * 3 * D;
            for (int i = 0; i < D; i++) g->q[(size_t)b * D + i] = r[i] * scale;
            for (int i = 0; i < D; i++) Kc[(size_t)i * d->ldk_self + off] = r[D + i];
            for (int h = 0; h < H; h++) memcpy(Vc + ((size_t)h * N + off) * dh, r + 2 * D + h * dh, sizeof(float) * dh);
        }
        group_self_job sj = {g, l, H, dh, D, N};
        steno_pool_run(f->pool, group_self_task, &sj, H * R);
        fast_linear_rows_act(f, dt, FL->out, L->attn_out.b, g->att, R, D, D, g->h, g->qact);
        vec_add(g->x, g->h, (size_t)R * D);

        fast_layernorm(f, &L->cross_ln, g->x, R, g->h);
        fast_linear_rows_act(f, dt, FL->cross_q, L->cross_q.b, g->h, R, D, D, g->q, g->qact);
        for (size_t i = 0; i < (size_t)R * D; i++) g->q[i] *= scale;
        for (int i = 0, r0 = 0; i < n; r0 += n_rows[i], i++) /* each decoder's rows over its own window */
            fast_cross_attention(ds[i], f->pool, l, g->q + (size_t)r0 * D, n_rows[i], 1, g->att + (size_t)r0 * D);
        fast_linear_rows_act(f, dt, FL->cross_out, L->cross_out.b, g->att, R, D, D, g->h, g->qact);
        vec_add(g->x, g->h, (size_t)R * D);

        fast_layernorm(f, &L->mlp_ln, g->x, R, g->h);
        fast_linear_rows_act(f, dt, FL->fc1, L->fc1.b, g->h, R, 4 * D, D, g->mlp, g->qact);
        fast_gelu(f, g->mlp, (size_t)R * 4 * D);
        fast_linear_rows_act(f, dt, FL->fc2, L->fc2.b, g->mlp, R, D, 4 * D, g->h, g->qact);
        vec_add(g->x, g->h, (size_t)R * D);
    }
    for (int i = 0, r0 = 0; i < n; r0 += n_rows[i], i++) {
        ds[i]->n_past++;
        /* each row's final state where its own step leaves it (logits_at reads it: the SOT row's
         * no-speech probability after a one-token prompt) */
        memcpy(ds[i]->x, g->x + (size_t)r0 * D, sizeof(float) * (size_t)n_rows[i] * D);
    }
    for (int b = 0; b < R; b++)
        vec_layernorm(g->x + (size_t)b * D, m->dec_ln.gamma, m->dec_ln.beta, D, g->h + (size_t)b * D);
    /* one pass over the embedding for every row, each row's logits straight to its decoder's
     * buffer (quantized weights: through the group's, then copied) */
    for (int i = 0, r = 0; i < n; i++)
        for (int b = 0; b < n_rows[i]; b++) g->row_out[r++] = logits[i] + (size_t)b * V;
    if (!fast_linear_rows_to(f, dt, f->emb, NULL, g->h, R, V, D, g->row_out)) {
        fast_linear_rows_act(f, dt, f->emb, NULL, g->h, R, V, D, g->logits, g->qact);
        for (int i = 0, r0 = 0; i < n; r0 += n_rows[i], i++)
            memcpy(logits[i], g->logits + (size_t)r0 * V, sizeof(float) * (size_t)n_rows[i] * V);
    }
    return STENO_OK;
}
