/* context.c — steno_llm_ctx: per-layer KV caches (plain, or rotating for sliding-window layers and
 * --max-kv-size), scratch buffers, the thread pool; evaluation in chunks of n_batch tokens (the
 * forward pass chosen by architecture) and rollback. The per-layer steps the forward passes share
 * are in layers.c, the generation loop in generate.c, chat formatting in chat.c. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/ops/ops.h"
#include "kernels/quant/quant.h"
#include "llm/arch.h"
#include "llm/model.h"

steno_llm_ctx_params steno_llm_ctx_default_params(void) {
    steno_llm_ctx_params p;
    memset(&p, 0, sizeof p);
    p.n_threads = 0;
    p.n_ctx = 0;
    p.n_batch = 256;
    p.kv_type = STENO_KV_AUTO;
    p.max_kv_size = 0;
    p.keep = 0;
    p.kv_reserve = 32;
    p.kv_quant = STENO_KV_QUANT_PLAIN;
    p.kv_group = 32;
    p.kv_quant_start = 0;
    p.kv_key_bits = 8;
    p.kv_sink = 4;
    p.kv_rotate = -1;
    p.kv_center = 1;
    return p;
}

void steno_llm_ctx_free(steno_llm_ctx *c) {
    if (!c) return;
    if (c->kv)
        for (int l = 0; l < c->m->hp.n_layer; l++) steno_kv_free(c->kv[l]);
    free(c->kv);
    if (!c->pool_borrowed) steno_pool_free(c->pool);
    steno_work_free(&c->work);
    steno_work_free(&c->attn_work);
    for (int i = 0; i < c->n_row_work; i++) steno_work_free(&c->row_work[i]);
    free(c->row_work);
    free(c->row_view);
    free(c->row_small);
    steno_work_free(&c->batch_work);
    free(c->x);
    free(c->xb);
    free(c->xb2);
    free(c->q);
    free(c->k);
    free(c->v);
    free(c->att);
    free(c->hb);
    free(c->hb2);
    free(c->pos);
    free(c);
}

steno_status steno_llm_ctx_new(const steno_llm *m, const steno_llm_ctx_params *params, steno_llm_ctx **out) {
    *out = NULL;
    steno_llm_ctx_params p = params ? *params : steno_llm_ctx_default_params();
    const llm_hparams *hp = &m->hp;
    if (p.n_batch <= 0) p.n_batch = 256;
    if (p.n_batch > 4096) p.n_batch = 4096;
    if (p.kv_reserve < 0) p.kv_reserve = 0;
    if (p.max_kv_size < 0 || p.keep < 0 || (p.max_kv_size > 0 && p.keep >= p.max_kv_size))
        return steno_fail(STENO_E_INVALID_ARG, "--max-kv-size %d / --keep %d: need 0 <= keep < max-kv-size",
                          p.max_kv_size, p.keep);
    if (p.kv_group <= 0) p.kv_group = 32;
    if (p.kv_key_bits <= 0) p.kv_key_bits = 8;
    if (p.compute != STENO_LLM_COMPUTE_GGML && p.compute != STENO_LLM_COMPUTE_F32 && p.compute != STENO_LLM_COMPUTE_FAST)
        return steno_fail(STENO_E_INVALID_ARG, "unknown compute mode %d", (int)p.compute);
    if (p.compute == STENO_LLM_COMPUTE_FAST && llm_fast_prepare(m) != 0)
        return steno_fail(STENO_E_NOMEM, "--compute fast: out of memory repacking the weights");
    if (p.kv_quant < STENO_KV_QUANT_PLAIN || p.kv_quant > STENO_KV_QUANT_TQ2)
        return steno_fail(STENO_E_INVALID_ARG, "unknown KV quantization %d", (int)p.kv_quant);
    if (p.kv_quant != STENO_KV_QUANT_PLAIN && hp->attn_softcap > 0)
        return steno_fail(STENO_E_UNSUPPORTED, "%s: quantized KV caches do not support its attention soft-capping "
                          "(use the plain cache)", m->name ? m->name : "model");
    if (p.kv_sink < 0 || p.kv_sink > 4096)
        return steno_fail(STENO_E_INVALID_ARG, "--kv-sink %d: need 0..4096", p.kv_sink);
    if (p.kv_quant_start < 0)
        return steno_fail(STENO_E_INVALID_ARG, "--kv-quant-start %d: need >= 0", p.kv_quant_start);
    if (p.n_ctx <= 0) p.n_ctx = p.max_kv_size > 0 ? INT_MAX / 2 : hp->n_ctx_train;
    int dtype = p.kv_type == STENO_KV_F32 ? STENO_T_F32
                : p.kv_type == STENO_KV_F16 ? STENO_T_F16
                : (hp->llama2c ? STENO_T_F32 : STENO_T_F16);
    steno_llm_ctx *c = calloc(1, sizeof *c);
    if (!c) return steno_fail(STENO_E_NOMEM, "context: out of memory");
    c->m = m;
    if (p.kv_rotate < 0) { /* auto: the Walsh–Hadamard rotation needs power-of-two head dims */
        const int dk = m->hp.head_dim_k, dv = m->hp.head_dim_v;
        p.kv_rotate = dk > 0 && dv > 0 && (dk & (dk - 1)) == 0 && (dv & (dv - 1)) == 0;
    }
    c->p = p;
    c->n_batch = p.n_batch;
    if (steno_pool_create(p.n_threads, &c->pool) != STENO_OK) c->pool = NULL;
    c->kv = calloc((size_t)hp->n_layer, sizeof *c->kv);
    const size_t B = (size_t)p.n_batch;
    const size_t E = (size_t)hp->n_embd, nq = (size_t)hp->n_head * hp->head_dim_k,
                 nk = (size_t)hp->n_head_kv * hp->head_dim_k, nv = (size_t)hp->n_head_kv * hp->head_dim_v,
                 no = (size_t)hp->n_head * hp->head_dim_v, F = (size_t)hp->n_ff;
    size_t xbw = E > no ? E : no;
    c->x = malloc(B * E * sizeof(float));
    c->xb = malloc(B * xbw * sizeof(float));
    c->xb2 = malloc(B * E * sizeof(float));
    c->q = malloc(B * nq * sizeof(float));
    c->k = malloc(B * nk * sizeof(float));
    c->v = malloc(B * nv * sizeof(float));
    c->att = malloc(B * no * sizeof(float));
    c->hb = malloc(B * F * sizeof(float));
    c->hb2 = malloc(B * F * sizeof(float));
    c->pos = malloc(B * sizeof(int));
    if (!c->pos || !c->pool || !c->kv || !c->x || !c->xb || !c->xb2 || !c->q || !c->k || !c->v || !c->att || !c->hb || !c->hb2) {
        steno_llm_ctx_free(c);
        return steno_fail(STENO_E_NOMEM, "context: out of memory");
    }
    for (int l = 0; l < hp->n_layer; l++) {
        steno_kv_params kp;
        memset(&kp, 0, sizeof kp);
        kp.dtype = dtype;
        kp.n_kv_heads = hp->n_head_kv;
        kp.head_dim_k = hp->head_dim_k;
        kp.head_dim_v = hp->head_dim_v;
        kp.reserve = p.kv_reserve;
        llm_kv_quant_params(&p, &kp);
        if (hp->n_swa > 0 && hp->is_swa[l]) {
            kp.kind = STENO_KV_ROTATING;
            kp.max_size = hp->n_swa;
            kp.keep = 0;
        } else if (p.max_kv_size > 0) {
            kp.kind = STENO_KV_ROTATING;
            kp.max_size = p.max_kv_size;
            kp.keep = p.keep;
        } else {
            kp.kind = STENO_KV_PLAIN;
            kp.step = 256;
            kp.max_tokens = p.n_ctx;
        }
        steno_status st = steno_kv_new(&kp, &c->kv[l]);
        if (st != STENO_OK) {
            steno_llm_ctx_free(c);
            return st;
        }
    }
    *out = c;
    return STENO_OK;
}

void llm_kv_quant_params(const steno_llm_ctx_params *p, steno_kv_params *kp) {
    static const int vbits[] = {0, 8, 4, 4, 3, 2};
    kp->quant = p->kv_quant == STENO_KV_QUANT_PLAIN ? STENO_KV_Q_NONE
                : p->kv_quant <= STENO_KV_QUANT_Q4  ? STENO_KV_Q_AFFINE
                                                    : STENO_KV_Q_TURBO;
    kp->v_bits = vbits[p->kv_quant];
    kp->k_bits = kp->quant == STENO_KV_Q_TURBO ? p->kv_key_bits : kp->v_bits;
    kp->group = p->kv_group;
    kp->quant_start = p->kv_quant_start;
    kp->sink = p->kv_sink;
    kp->rotate = p->kv_rotate > 0;
    kp->center = p->kv_center != 0;
}

steno_llm_ctx_params steno_llm_ctx_get_params(const steno_llm_ctx *c) { return c->p; }

void steno_llm_kv_quant_usage(const steno_llm_ctx *c, size_t *quantized_bpt, size_t *plain_bpt) {
    size_t a = 0, b = 0;
    for (int l = 0; l < c->m->hp.n_layer; l++) {
        steno_kv_params kp = c->kv[l]->p;
        a += steno_kv_quant_bytes_per_token(&kp);
        kp.quant = STENO_KV_Q_NONE;
        b += steno_kv_quant_bytes_per_token(&kp);
    }
    if (quantized_bpt) *quantized_bpt = a;
    if (plain_bpt) *plain_bpt = b;
}

int steno_llm_n_past(const steno_llm_ctx *c) { return c->n_past; }

void steno_llm_reset(steno_llm_ctx *c) {
    for (int l = 0; l < c->m->hp.n_layer; l++) c->kv[l]->ops->reset(c->kv[l]);
    c->n_past = 0;
}

void steno_llm_kv_usage(const steno_llm_ctx *c, size_t *bpt, size_t *bytes) {
    size_t a = 0, b = 0;
    for (int l = 0; l < c->m->hp.n_layer; l++) {
        a += c->kv[l]->ops->bytes_per_token(c->kv[l]);
        b += c->kv[l]->ops->nbytes(c->kv[l]);
    }
    if (bpt) *bpt = a;
    if (bytes) *bytes = b;
}

/* Brings every layer's cache back to n tokens after a failed evaluation (best effort). */
static void restore(steno_llm_ctx *c, int n) {
    for (int l = 0; l < c->m->hp.n_layer; l++) {
        int off = steno_kv_offset(c->kv[l]);
        if (off > n) steno_kv_trim(c->kv[l], off - n);
    }
    c->n_past = n;
}

steno_status steno_llm_rollback(steno_llm_ctx *c, int n) {
    if (n < 0 || n > c->n_past)
        return steno_fail(STENO_E_INVALID_ARG, "rollback of %d tokens: the context holds %d", n, c->n_past);
    for (int l = 0; l < c->m->hp.n_layer; l++)
        if (!steno_kv_can_trim(c->kv[l], n)) return steno_kv_trim(c->kv[l], n); /* sets the message */
    for (int l = 0; l < c->m->hp.n_layer; l++) {
        steno_status st = steno_kv_trim(c->kv[l], n);
        if (st != STENO_OK) return st;
    }
    c->n_past -= n;
    return STENO_OK;
}

static steno_status forward(steno_llm_ctx *c, const int *tokens, int T, const llm_group *g, int ng) {
    return c->m->hp.arch->forward(c, tokens, T, g, ng);
}

static steno_status check_tokens(const llm_hparams *hp, const int *tokens, int n) {
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= hp->n_vocab)
            return steno_fail(STENO_E_INVALID_ARG, "eval: token %d is not in the vocabulary (0..%d)", tokens[i],
                              hp->n_vocab - 1);
    return STENO_OK;
}

steno_status steno_llm_eval(steno_llm_ctx *c, const int *tokens, int n, float *logits, int logits_all) {
    const llm_hparams *hp = &c->m->hp;
    if (n <= 0) return steno_fail(STENO_E_INVALID_ARG, "eval: no tokens");
    if (check_tokens(hp, tokens, n) != STENO_OK) return STENO_E_INVALID_ARG;
    if ((long)c->n_past + n > (long)c->p.n_ctx)
        return steno_fail(STENO_E_INVALID_ARG, "context full: %d + %d tokens exceed n_ctx %d (raise -c/--ctx-size)",
                          c->n_past, n, c->p.n_ctx);
    const int start = c->n_past;
    for (int i = 0; i < n; i += c->n_batch) {
        int T = n - i < c->n_batch ? n - i : c->n_batch;
        int last = i + T == n;
        const llm_group g = {c, 0, T};
        steno_status st = forward(c, tokens + i, T, &g, 1);
        if (st == STENO_OK && logits && logits_all) st = llm_output(c, 0, NULL, T, logits + (size_t)i * hp->n_vocab);
        else if (st == STENO_OK && logits && last) st = llm_output(c, T - 1, NULL, 1, logits);
        if (st != STENO_OK) {
            restore(c, start);
            return st;
        }
    }
    return STENO_OK;
}

steno_status steno_llm_eval_batch(steno_llm_ctx *exec, const steno_llm_seq *seqs, int n_seqs) {
    const llm_hparams *hp = &exec->m->hp;
    if (n_seqs <= 0) return steno_fail(STENO_E_INVALID_ARG, "eval_batch: no sequences");
    int T = 0, n_out = 0;
    for (int i = 0; i < n_seqs; i++) {
        const steno_llm_seq *s = &seqs[i];
        if (!s->ctx || s->n_tokens <= 0 || !s->tokens)
            return steno_fail(STENO_E_INVALID_ARG, "eval_batch: sequence %d has no tokens", i);
        if (s->ctx->m != exec->m || s->ctx->p.compute != exec->p.compute)
            return steno_fail(STENO_E_INVALID_ARG, "eval_batch: sequence %d's context is over another model or mode", i);
        for (int k = 0; k < i; k++)
            if (seqs[k].ctx == s->ctx)
                return steno_fail(STENO_E_INVALID_ARG, "eval_batch: sequences %d and %d share a context", k, i);
        if (check_tokens(hp, s->tokens, s->n_tokens) != STENO_OK) return STENO_E_INVALID_ARG;
        if ((long)s->ctx->n_past + s->n_tokens > (long)s->ctx->p.n_ctx)
            return steno_fail(STENO_E_INVALID_ARG, "context full: %d + %d tokens exceed n_ctx %d", s->ctx->n_past,
                              s->n_tokens, s->ctx->p.n_ctx);
        if (s->n_tokens > exec->n_batch - T)
            return steno_fail(STENO_E_INVALID_ARG, "eval_batch: more than the executor's n_batch %d tokens",
                              exec->n_batch);
        T += s->n_tokens;
        n_out += s->logits ? (s->logits_all ? s->n_tokens : 1) : 0;
    }
    /* one buffer kept on the executor: the decode step allocates nothing once it has grown */
    const size_t lg_bytes = (sizeof(float) * (size_t)n_out * hp->n_vocab + 15) / 16 * 16,
                 g_bytes = sizeof(llm_group) * (size_t)n_seqs,
                 i_bytes = sizeof(int) * ((size_t)T + (size_t)n_seqs + (size_t)n_out + 1);
    uint8_t *buf = steno_work_get(&exec->batch_work, lg_bytes + g_bytes + i_bytes);
    if (!buf) return steno_fail(STENO_E_NOMEM, "eval_batch: out of memory");
    float *lg = (float *)buf;
    llm_group *g = (llm_group *)(buf + lg_bytes);
    int *tokens = (int *)(buf + lg_bytes + g_bytes), *start = tokens + T, *rows = start + n_seqs;
    steno_status st = STENO_OK;
    for (int i = 0, t0 = 0, o = 0; i < n_seqs; i++) {
        g[i] = (llm_group){seqs[i].ctx, t0, seqs[i].n_tokens};
        start[i] = seqs[i].ctx->n_past;
        memcpy(tokens + t0, seqs[i].tokens, sizeof(int) * (size_t)seqs[i].n_tokens);
        t0 += seqs[i].n_tokens;
        if (seqs[i].logits)
            for (int t = seqs[i].logits_all ? t0 - seqs[i].n_tokens : t0 - 1; t < t0; t++) rows[o++] = t;
    }
    st = forward(exec, tokens, T, g, n_seqs);
    if (st == STENO_OK && n_out) st = llm_output(exec, 0, rows, n_out, lg);
    if (st != STENO_OK) {
        for (int i = 0; i < n_seqs; i++) restore(seqs[i].ctx, start[i]);
        return st;
    }
    for (int i = 0, o = 0; i < n_seqs; i++) {
        if (!seqs[i].logits) continue;
        const int nr = seqs[i].logits_all ? seqs[i].n_tokens : 1;
        memcpy(seqs[i].logits, lg + (size_t)o * hp->n_vocab, sizeof(float) * (size_t)nr * hp->n_vocab);
        o += nr;
    }
    return STENO_OK;
}
