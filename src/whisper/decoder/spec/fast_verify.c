/* fast_verify.c — the target's verify pass and the drafters' decoder (fast_verify.h). */
#include "whisper/decoder/spec/fast_verify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/quant/wq.h"
#include "whisper/model/draft_weights.h"
#include "whisper/fast_internal.h"

/* Activations of up to n_text_ctx rows. */
typedef struct spec_bufs {
    float *x, *h, *qkv, *q, *att, *mlp;
} spec_bufs;

/* One self-attention cache: keys [L][D][ldk] (transposed), values [L][H][N][dh]. */
typedef struct spec_cache {
    float *k, *v;
    int ldk;
} spec_cache;

typedef struct self_job {
    const float *Kc, *Vc; /* layer l of the cache */
    int ldk, off, H, dh, D, N;
    const float *q; /* [B][D] scaled */
    float *out;     /* [B][D] */
} self_job;

/* Row b, head h: the causal attention of position off + b over keys 0..off+b — the very call a
 * single-token step at that position makes (nn/fast_attention.c fast_attn_task with nq = 1). */
static void self_task(void *ctx, int t, int n) {
    (void)n;
    const self_job *j = ctx;
    const int h = t % j->H, b = t / j->H;
    vec_attention(j->q + (size_t)b * j->D + h * j->dh, j->D, j->Kc + (size_t)h * j->dh * j->ldk, j->ldk,
                  j->Vc + (size_t)h * j->N * j->dh, j->dh, j->off + b + 1, j->dh, 1, 1, j->off + b,
                  j->out + (size_t)b * j->D + h * j->dh, j->D);
}

/* The decoder layers 0..nl−1 on rows x [T][D] (embeddings already added) at positions off.., with
 * f's weights, cache c and the cross-attention K/V of xd. exact: every linear by the rows GEMV
 * (each row bit-identical to a single-token step); else the prompt's GEMM for T > 1. */
static void run_layers(whisper_fast *f, const fast_layer *W, vec_dtype dt, whisper_fast_decoder *xd, int nl,
                       const spec_cache *c, int off, int T, int exact, const spec_bufs *b) {
    const whisper_model *m = f->m;
    const int D = m->n_text_state, N = m->n_text_ctx, H = m->n_text_head, dh = D / H;
    const float scale = 1.0f / sqrtf((float)dh);
#define LIN(Wm, bias, in, n_out, n_in, y)                                                     \
    (exact ? fast_linear_rows(f, dt, (Wm), (bias), (in), T, (n_out), (n_in), (y))             \
           : fast_linear(f, dt, (Wm), (bias), (in), T, (n_out), (n_in), (y)))
    for (int l = 0; l < nl; l++) {
        const whisper_layer *L = &m->dec[l];
        const fast_layer *FL = &W[l];
        float *Kc = c->k + (size_t)l * D * c->ldk;
        float *Vc = c->v + (size_t)l * H * N * dh;
        fast_layernorm(f, &L->attn_ln, b->x, T, b->h);
        LIN(FL->qkv, L->attn_qkv.b, b->h, 3 * D, D, b->qkv);
        for (int t = 0; t < T; t++) {
            const float *r = b->qkv + (size_t)t * 3 * D;
            for (int i = 0; i < D; i++) b->q[(size_t)t * D + i] = r[i] * scale;
            for (int i = 0; i < D; i++) Kc[(size_t)i * c->ldk + off + t] = r[D + i];
            for (int h = 0; h < H; h++)
                memcpy(Vc + ((size_t)h * N + off + t) * dh, r + 2 * D + h * dh, sizeof(float) * dh);
        }
        self_job sj = {Kc, Vc, c->ldk, off, H, dh, D, N, b->q, b->att};
        steno_pool_run(f->pool, self_task, &sj, H * T);
        LIN(FL->out, L->attn_out.b, b->att, D, D, b->h);
        vec_add(b->x, b->h, (size_t)T * D);

        fast_layernorm(f, &L->cross_ln, b->x, T, b->h);
        LIN(FL->cross_q, L->cross_q.b, b->h, D, D, b->q);
        for (size_t i = 0; i < (size_t)T * D; i++) b->q[i] *= scale;
        /* the float16 K/V copies for one query per row, as the single-token steps read them */
        fast_cross_attention(xd, f->pool, l, b->q, T, exact || T == 1, b->att);
        LIN(FL->cross_out, L->cross_out.b, b->att, D, D, b->h);
        vec_add(b->x, b->h, (size_t)T * D);

        fast_layernorm(f, &L->mlp_ln, b->x, T, b->h);
        LIN(FL->fc1, L->fc1.b, b->h, 4 * D, D, b->mlp);
        fast_gelu(f, b->mlp, (size_t)T * 4 * D);
        LIN(FL->fc2, L->fc2.b, b->mlp, D, 4 * D, b->h);
        vec_add(b->x, b->h, (size_t)T * D);
    }
#undef LIN
}

/* x[t] = embedding(tokens[t]) + positional(off + t), as fast_decoder.c's forward. */
static steno_status embed(const whisper_fast *f, const int *tokens, int T, int off, float *x) {
    const whisper_model *m = f->m;
    const int D = m->n_text_state;
    for (int t = 0; t < T; t++) {
        if (tokens[t] < 0 || tokens[t] >= m->n_vocab)
            return steno_fail(STENO_E_INVALID_ARG, "decoder: token id %d out of range", tokens[t]);
        float *xr = x + (size_t)t * D;
        if (f->dt == DT_Q) wq_dequant_rows(f->emb, tokens[t], tokens[t] + 1, xr);
        else if (f->dt == VEC_F16) vec_f16_to_f32((const uint16_t *)f->emb + (size_t)tokens[t] * D, xr, (size_t)D);
        else memcpy(xr, (const float *)f->emb + (size_t)tokens[t] * D, sizeof(float) * D);
        vec_add(xr, m->dec_pos + (size_t)(off + t) * D, (size_t)D);
    }
    return STENO_OK;
}

/* ---------------------------------------------------------------- the target's verify pass */

steno_status whisper_fast_decoder_verify(whisper_fast_decoder *d, const int *tokens, int B, float *logits) {
    whisper_fast *f = d->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state, V = m->n_vocab, off = d->n_past;
    if (B < 1 || off + B > m->n_text_ctx)
        return steno_fail(STENO_E_INVALID_ARG, "decoder: verifying %d tokens at position %d exceeds n_text_ctx %d", B,
                          off, m->n_text_ctx);
    steno_status st = embed(f, tokens, B, off, d->x);
    if (st != STENO_OK) return st;
    const spec_cache c = {d->self_k + d->k_slot * d->kv.slot[0], d->self_v + d->v_slot * d->kv.slot[0], d->ldk_self};
    const spec_bufs b = {d->x, d->h, d->qkv, d->q, d->att, d->mlp};
    run_layers(f, f->dec, f->dt, d, m->n_text_layer, &c, off, B, 1, &b);
    d->n_past = off + B;
    if (d->screen_allow && f->emb_q) { /* each position screened as its single-token step would be */
        fast_logit_screen_rows(d, d->x, B, logits);
        return STENO_OK;
    }
    for (int r = 0; r < B; r++)
        vec_layernorm(d->x + (size_t)r * D, m->dec_ln.gamma, m->dec_ln.beta, D, d->h + (size_t)r * D);
    fast_linear_rows(f, f->dt, f->emb, NULL, d->h, B, V, D, logits);
    return STENO_OK;
}

int whisper_fast_decoder_n_past(const whisper_fast_decoder *d) { return d->n_past; }

void whisper_fast_decoder_rollback(whisper_fast_decoder *d, int n_past) {
    if (n_past >= 0 && n_past < d->n_past) d->n_past = n_past;
}

/* ---------------------------------------------------------------- the drafters' decoder */

struct whisper_fast_draft {
    whisper_fast *f;       /* the weights read: the caller's, or qf */
    whisper_fast *qf;      /* quantized copy: a share of the caller's state with DT_Q weights, owned */
    size_t qbytes;         /* of the shared quantized weights (draft_weights.h) */
    int n_layers, n_past;
    whisper_fast_decoder *xsrc;
    spec_cache c;
    spec_bufs b;
    /* the int8 screen of the head (float16 weights) */
    int8_t *sq;
    uint8_t *sa;
    float *sb, *hi;
};

/* The shared quantized weights of type (draft_weights.h), read through a share of f's state. */
static steno_status requantize(whisper_fast_draft *r, whisper_fast *f, int type) {
    const whisper_model *m = f->m;
    const int D = m->n_text_state, L = m->n_text_layer;
    const whisper_draft_weights *w;
    steno_status st = whisper_draft_weights_get(f, type, &w);
    if (st != STENO_OK) return st;
    r->qbytes = w->bytes;
    st = whisper_fast_share(f, f->pool, &r->qf);
    if (st != STENO_OK) return st;
    whisper_fast *qf = r->qf;
    qf->dt = DT_Q;
    qf->dec = w->qdec;
    qf->emb = &w->mats[(size_t)6 * L];
    qf->emb_q = NULL; /* the head reads the quantized embedding */
    const size_t act = (size_t)m->n_text_ctx * wq_act_bytes(type, 4 * D);
    qf->qact = aligned_alloc(64, (act + 63) & ~(size_t)63);
    if (!qf->qact) return steno_fail(STENO_E_NOMEM, "draft: out of memory");
    /* the prompt's GEMM tiles: fast_model.c sizes conv_scratch for them already (FASTQ_COL_CHUNK rows of 4D) */
    r->f = qf;
    return STENO_OK;
}

steno_status whisper_fast_draft_create(whisper_fast *f, int n_layers, int quant_type, whisper_fast_draft **out) {
    *out = NULL;
    const whisper_model *m = f->m;
    const size_t D = (size_t)m->n_text_state, N = (size_t)m->n_text_ctx, L = (size_t)m->n_text_layer;
    if (n_layers < 1 || n_layers > (int)L)
        return steno_fail(STENO_E_INVALID_ARG, "draft: %d layers (the decoder has %d)", n_layers, (int)L);
    if (quant_type && f->dt != VEC_F16 && f->dt != VEC_F32)
        return steno_fail(STENO_E_INVALID_ARG, "draft: the quantized drafter needs float16 or float32 weights");
    whisper_fast_draft *r = calloc(1, sizeof *r);
    if (!r) return steno_fail(STENO_E_NOMEM, "draft: out of memory");
    r->f = f;
    r->n_layers = n_layers;
    steno_status st = quant_type ? requantize(r, f, quant_type) : STENO_OK;
    if (st != STENO_OK) {
        whisper_fast_draft_free(r);
        return st;
    }
    r->c.ldk = vec_attention_ldk((int)N);
    r->c.k = calloc((size_t)n_layers * D * (size_t)r->c.ldk, sizeof(float));
    r->c.v = malloc(sizeof(float) * (size_t)n_layers * N * D);
    r->b.x = malloc(sizeof(float) * N * D);
    r->b.h = malloc(sizeof(float) * N * D);
    r->b.qkv = malloc(sizeof(float) * N * 3 * D);
    r->b.q = malloc(sizeof(float) * N * D);
    r->b.att = malloc(sizeof(float) * N * D);
    r->b.mlp = malloc(sizeof(float) * N * 4 * D);
    r->sq = malloc(D);
    r->sa = malloc(D);
    r->sb = malloc(sizeof(float) * (D / 32 + 1));
    r->hi = malloc(sizeof(float) * (size_t)m->n_vocab);
    if (!r->c.k || !r->c.v || !r->b.x || !r->b.h || !r->b.qkv || !r->b.q || !r->b.att || !r->b.mlp || !r->sq ||
        !r->sa || !r->sb || !r->hi) {
        whisper_fast_draft_free(r);
        return steno_fail(STENO_E_NOMEM, "draft: out of memory");
    }
    *out = r;
    return STENO_OK;
}

void whisper_fast_draft_free(whisper_fast_draft *r) {
    if (!r) return;
    whisper_fast_free(r->qf); /* a share: its own scratch and qact only */
    free(r->c.k);
    free(r->c.v);
    free(r->b.x);
    free(r->b.h);
    free(r->b.qkv);
    free(r->b.q);
    free(r->b.att);
    free(r->b.mlp);
    free(r->sq);
    free(r->sa);
    free(r->sb);
    free(r->hi);
    free(r);
}

void whisper_fast_draft_set_cross(whisper_fast_draft *r, whisper_fast_decoder *xsrc) {
    r->xsrc = xsrc;
    r->n_past = 0;
}

int whisper_fast_draft_n_past(const whisper_fast_draft *r) { return r->n_past; }

void whisper_fast_draft_rollback(whisper_fast_draft *r, int n_past) {
    if (n_past >= 0 && n_past < r->n_past) r->n_past = n_past;
}

size_t whisper_fast_draft_bytes(const whisper_fast_draft *r) { return r->qbytes; }

int whisper_fast_draft_sync(whisper_fast_draft *r, const whisper_fast_decoder *d, int n) {
    const whisper_model *m = r->f->m, *dm = d->f->m;
    if (m->n_text_state != dm->n_text_state || m->n_text_head != dm->n_text_head || m->n_text_ctx != dm->n_text_ctx ||
        n > d->n_past || n < 0)
        return -1;
    const int D = m->n_text_state, H = m->n_text_head, dh = D / H, N = m->n_text_ctx, p0 = r->n_past;
    if (n <= p0) {
        r->n_past = n;
        return 0;
    }
    const float *tk = d->self_k + d->k_slot * d->kv.slot[0], *tv = d->self_v + d->v_slot * d->kv.slot[0];
    for (int l = 0; l < r->n_layers; l++) {
        for (int i = 0; i < D; i++)
            memcpy(r->c.k + ((size_t)l * D + i) * r->c.ldk + p0, tk + ((size_t)l * D + i) * d->ldk_self + p0,
                   sizeof(float) * (size_t)(n - p0));
        for (int h = 0; h < H; h++)
            memcpy(r->c.v + (((size_t)l * H + h) * N + p0) * dh, tv + (((size_t)l * H + h) * N + p0) * dh,
                   sizeof(float) * (size_t)(n - p0) * dh);
    }
    r->n_past = n;
    return 0;
}

typedef struct head_job {
    whisper_fast_draft *r;
    vec_screen_x x;
    float *logits;
} head_job;

/* Text rows by the int8 screen (their value z), special and timestamp rows exactly. */
static void head_task(void *ctx, int t, int n) {
    head_job *j = ctx;
    const whisper_fast *f = j->r->f;
    const int eot = f->m->special.eot, V = f->m->n_vocab, D = f->m->n_text_state;
    const int per = (eot + n - 1) / n, r0 = t * per, r1 = r0 + per < eot ? r0 + per : eot;
    const vec_screen_rows w = {f->emb_q, f->emb_s, f->emb_g, f->emb_c};
    if (r0 < r1) (void)vec_screen_i8(&w, &j->x, D, r0, r1, NULL, j->logits, j->r->hi);
    const int nsp = V - eot, per2 = (nsp + n - 1) / n, s0 = eot + t * per2;
    const int s1 = s0 + per2 < V ? s0 + per2 : V;
    for (int r = s0; r < s1; r++) vec_gemv_f16_rows((const uint16_t *)f->emb, j->r->b.h, D, &r, 1, j->logits);
}

steno_status whisper_fast_draft_forward(whisper_fast_draft *r, const int *tokens, int T, float *logits) {
    whisper_fast *f = r->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state, off = r->n_past;
    if (!r->xsrc) return steno_fail(STENO_E_INVALID_ARG, "draft: no window (whisper_fast_draft_set_cross)");
    if (T < 1 || off + T > m->n_text_ctx)
        return steno_fail(STENO_E_INVALID_ARG, "draft: %d tokens at position %d exceed n_text_ctx %d", T, off,
                          m->n_text_ctx);
    steno_status st = embed(f, tokens, T, off, r->b.x);
    if (st != STENO_OK) return st;
    run_layers(f, f->dec, f->dt, r->xsrc, r->n_layers, &r->c, off, T, 0, &r->b);
    r->n_past = off + T;
    vec_layernorm(r->b.x + (size_t)(T - 1) * D, m->dec_ln.gamma, m->dec_ln.beta, D, r->b.h);
    if (f->dt == VEC_F16 && f->emb_q) {
        head_job j = {r, {r->sq, r->sa, r->sb, 0, 0}, logits};
        vec_screen_prepare(r->b.h, D, &j.x);
        steno_pool_run(f->pool, head_task, &j, f->n_threads);
    } else { /* the quant drafter: its x8 copies (linear_quant.h) */
        fast_linear(f, f->dt, f->emb, NULL, r->b.h, 1, m->n_vocab, D, logits);
    }
    return STENO_OK;
}
