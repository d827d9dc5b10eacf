/* gemma3.c — the Gemma 3 forward pass, which Gemma 2 shares (models/gemma2.c: no QK-norm, attention
 * soft-capping, every other layer sliding) (llama.cpp src/models/gemma3.cpp, whose CPU numerics it
 * follows: embedding scaled by sqrt(n_embd), QK-norm, NEOX RoPE with per-layer bases, q scaled by
 * 1/sqrt(head_dim), sliding-window layers over rotating caches, post-attention and post-FFN norms,
 * GeGLU with ggml's fp16 GELU table). See model.h. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "kernels/attention/attention.h"
#include "kernels/ops/ops.h"
#include "llm/arch.h"
#include "llm/loader.h"
#include "llm/model.h"
#include "formats/gguf.h"

/* The per-row steps between the products, as steno_xmat_pre prologues (kernels/gemm/matmul_x8.h; llama.c
 * has the Llama ones): run by the fast path's activation conversion on the row it converts, in
 * parallel, or on the caller. The same arithmetic per row either way. */
typedef struct {
    const llm_hparams *hp;
    float *x, *xb;
    float *res;           /* NULL, or [T][E]: normed in place by res_norm, then added into x */
    const float *res_norm;
    const float *w;       /* the norm of x into xb */
} g3_norm_rows;

static void g3_pre_norm(void *arg, int t) {
    const g3_norm_rows *r = arg;
    const int E = r->hp->n_embd;
    float *x = r->x + (size_t)t * E;
    if (r->res) {
        float *y = r->res + (size_t)t * E;
        steno_rmsnorm_ggml(y, y, r->res_norm, E, r->hp->norm_eps);
        for (int i = 0; i < E; i++) x[i] = y[i] + x[i];
    }
    steno_rmsnorm_ggml(r->xb + (size_t)t * E, x, r->w, E, r->hp->norm_eps);
}

steno_status llm_forward_gemma3(steno_llm_ctx *c, const int *tokens, int T, const llm_group *g, int ng) {
    const steno_llm *m = c->m;
    const llm_hparams *hp = &m->hp;
    const int E = hp->n_embd, hk = hp->head_dim_k, nq = hp->n_head * hk, nk = hp->n_head_kv * hk,
              nv = hp->n_head_kv * hp->head_dim_v, F = hp->n_ff;
    const int *pos = c->pos;
    llm_group_positions(c, g, ng);
    float *x = c->x, *xb = c->xb, *xb2 = c->xb2, *q = c->q, *k = c->k, *v = c->v, *att = c->att, *hb = c->hb,
          *hb2 = c->hb2;
    steno_attn_params ap = {hp->n_head, hp->n_head_kv, hk, hp->head_dim_v, 1.0f, 1.0f, 0,
                            c->p.compute == STENO_LLM_COMPUTE_FAST, hp->attn_softcap};

    /* token embedding, scaled by sqrt(n_embd) */
    for (int t = 0; t < T; t++) {
        float *xt = x + (size_t)t * E;
        steno_mat_row_f32(&m->tok_embd, tokens[t], xt);
        for (int i = 0; i < E; i++) xt[i] *= hp->embd_scale;
    }

    /* Without a dump hook the post-norms, residual adds and pre-norms run inside the next product's
     * conversion (the MLP's in the next layer's, the last one after the loop); with one, each step
     * runs whole where the dumps expect its result. */
    const int fuse = !c->dump;
    const llm_glu_rows gg = {hb, hb2, F, c->p.compute == STENO_LLM_COMPUTE_F32 ? steno_geglu : steno_geglu_ggml};
    for (int l = 0; l < hp->n_layer; l++) {
        const llm_layer *L = &m->layers[l];
        const float base = hp->is_swa[l] ? hp->rope_base_swa : hp->rope_base;
        const float fscale = hp->is_swa[l] ? 1.0f : hp->rope_freq_scale;

        /* attention block */
        g3_norm_rows nr = {hp, x, xb, fuse && l > 0 ? xb2 : NULL, l > 0 ? m->layers[l - 1].post_ffn_norm : NULL,
                           L->attn_norm};
        steno_xmat_pre pre = {g3_pre_norm, &nr};
        if (!fuse) {
            for (int t = 0; t < T; t++) g3_pre_norm(&nr, t);
            llm_dump(c, "attn_norm", l, xb, T, E);
        }
        const steno_mat *wqkv[3] = {&L->wq, &L->wk, &L->wv};
        float *yqkv[3] = {q, k, v};
        const int64_t lqkv[3] = {nq, nk, nv};
        if (llm_matmul_n_pre(c, fuse ? &pre : NULL, 3, wqkv, xb, T, yqkv, lqkv))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        llm_dump(c, "Qpre", l, q, T, nq);
        llm_dump(c, "Vcur", l, v, T, nv);
        /* every token's heads are consecutive rows of hk values (nq = n_head·hk, nk = n_head_kv·hk) */
        if (L->q_norm) { /* Gemma 3's QK-norm (Gemma 2 has none) */
            steno_rmsnorm_ggml_rows(q, q, L->q_norm, T * hp->n_head, hk, hp->norm_eps);
            steno_rmsnorm_ggml_rows(k, k, L->k_norm, T * hp->n_head_kv, hk, hp->norm_eps);
        }
        for (int t = 0; t < T; t++) {
            float *qt = q + (size_t)t * nq, *kt = k + (size_t)t * nk;
            steno_rope_ggml_qk(qt, hp->n_head, kt, hp->n_head_kv, hk, hp->n_rot, pos[t], base, fscale, 1);
            for (int i = 0; i < nq; i++) qt[i] *= hp->q_scale;
        }
        llm_dump(c, "Qcur", l, q, T, nq);
        llm_dump(c, "Kcur", l, k, T, nk);
        steno_status st = llm_attend_groups(c, g, ng, l, &ap, q, k, v, att);
        if (st != STENO_OK) return st;
        llm_dump(c, "kqv_out", l, att, T, hp->n_head * hp->head_dim_v);
        if (llm_matmul(c, &L->wo, att, T, xb2, E))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        llm_dump(c, "attn_out", l, xb2, T, E);

        /* feed-forward block: post-attention norm and residual, GeGLU between two norms */
        nr = (g3_norm_rows){hp, x, xb, xb2, L->post_attn_norm, L->ffn_norm};
        if (!fuse) {
            for (int t = 0; t < T; t++) g3_pre_norm(&nr, t);
            llm_dump(c, "sa_out", l, x, T, E);
        }
        const steno_mat *wgu[2] = {&L->ffn_gate, &L->ffn_up};
        float *ygu[2] = {hb, hb2};
        const int64_t lgu[2] = {F, F};
        if (llm_matmul_n_pre(c, fuse ? &pre : NULL, 2, wgu, xb, T, ygu, lgu))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        llm_dump(c, "ffn_gate", l, hb, T, F);
        llm_dump(c, "ffn_up", l, hb2, T, F);
        if (llm_glu_down(c, &gg, fuse, "ffn_geglu", l, &L->ffn_down, T, xb2, E))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        llm_dump(c, "ffn_out", l, xb2, T, E);
        if (!fuse) {
            steno_rmsnorm_ggml_rows(xb2, xb2, L->post_ffn_norm, T, E, hp->norm_eps);
            for (size_t i = 0; i < (size_t)T * E; i++) x[i] = xb2[i] + x[i];
            llm_dump(c, "l_out", l, x, T, E);
        }
    }
    if (fuse) { /* the last layer's post-FFN norm and residual */
        steno_rmsnorm_ggml_rows(xb2, xb2, m->layers[hp->n_layer - 1].post_ffn_norm, T, E, hp->norm_eps);
        for (size_t i = 0; i < (size_t)T * E; i++) x[i] = xb2[i] + x[i];
    }
    for (int i = 0; i < ng; i++) g[i].ctx->n_past += g[i].T;
    return STENO_OK;
}

/* llama.cpp models/gemma3.cpp load_arch_hparams */
static steno_status gemma3_hparams(llm_loader *g, llm_hparams *hp) {
    steno_status st;
    if ((st = llm_get_int(g, "attention.sliding_window", 0, 0, 1 << 24, &hp->n_swa)) != STENO_OK) return st;
    hp->rope_base_swa = hp->rope_base;
    if (hp->n_swa > 0) {
        int pattern = 6;
        const gguf_kv *pk = gguf_find(g->m->gguf, llm_key(g, "attention.sliding_window_pattern"));
        if (pk && pk->type == GGUF_TYPE_ARRAY) {
            if (pk->n != (uint64_t)hp->n_layer || pk->arr_type == GGUF_TYPE_STRING)
                return steno_fail(STENO_E_FORMAT, "%s: %s does not have one entry per layer", g->fn, g->key);
            for (int l = 0; l < hp->n_layer; l++) hp->is_swa[l] = gguf_arr_int(pk, (uint64_t)l) != 0;
        } else {
            if ((st = llm_get_int(g, "attention.sliding_window_pattern", 6, 0, 1 << 16, &pattern)) != STENO_OK)
                return st;
            for (int l = 0; l < hp->n_layer; l++) hp->is_swa[l] = pattern == 0 || (l % pattern < pattern - 1);
        }
        if ((st = llm_get_float(g, "rope.freq_base_swa", 10000.0, 0, &hp->rope_base_swa)) != STENO_OK) return st;
    }
    hp->embd_scale = sqrtf((float)hp->n_embd);
    /* gemma_pytorch config: query_pre_attn_scalar; the 27B model (62 layers) uses n_embd/n_head */
    hp->q_scale = hp->n_layer == 62 ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head)) : 1.0f / sqrtf((float)hp->head_dim_k);
    hp->kq_scale = 1.0f;
    return llm_get_float(g, "final_logit_softcapping", 0.0, 0, &hp->logit_softcap);
}

const llm_arch llm_arch_gemma3 = {
    .name = "gemma3",
    .required = LT_DENSE | LT_BIT(LT_Q_NORM) | LT_BIT(LT_K_NORM) | LT_BIT(LT_POST_ATTN_NORM) |
                LT_BIT(LT_POST_FFN_NORM),
    .rope_neox = 1,
    .qk_norm = LLM_QK_NORM_HEAD,
    .hparams = gemma3_hparams,
    .forward = llm_forward_gemma3,
};
