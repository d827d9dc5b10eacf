/* llama.c — the Llama-family forward pass (llama.cpp src/models/llama.cpp for GGUF files; llama2.c
 * run.c forward() for llama2.c checkpoints, whose numerics it reproduces bit for bit: float sums,
 * run.c's RoPE and RMSNorm, f32 KV cache). Reads top to bottom in the paper's order; see model.h. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "kernels/attention/attention.h"
#include "kernels/ops/ggml_simd.h"
#include "kernels/ops/ops.h"
#include "llm/model.h"

/* The per-row steps between the products, as steno_xmat_pre prologues (kernels/gemm/matmul_x8.h): run by the
 * fast path's activation conversion on the row it converts, in parallel, or by llm_matmul_n_pre on
 * the caller. Each row's arithmetic is the same either way (element-wise adds, one row's norm). */
typedef struct {
    const llm_hparams *hp;
    float *x, *xb;
    const float *res; /* NULL, or [T][E] added into x first (the previous block's residual) */
    const float *w;
} norm_rows;

static void pre_norm(void *arg, int t) {
    const norm_rows *r = arg;
    const int E = r->hp->n_embd;
    float *x = r->x + (size_t)t * E, *y = r->xb + (size_t)t * E;
    if (r->res)
        for (int i = 0; i < E; i++) x[i] += r->res[(size_t)t * E + i];
    if (r->hp->llama2c) steno_rmsnorm_llama2c(y, x, r->w, E, r->hp->norm_eps);
    else steno_rmsnorm_ggml(y, x, r->w, E, r->hp->norm_eps);
}

steno_status llm_forward_llama(steno_llm_ctx *c, const int *tokens, int T, const llm_group *g, int ng) {
    const steno_llm *m = c->m;
    const llm_hparams *hp = &m->hp;
    const int E = hp->n_embd, nq = hp->n_head * hp->head_dim_k, nk = hp->n_head_kv * hp->head_dim_k,
              nv = hp->n_head_kv * hp->head_dim_v, no = hp->n_head * hp->head_dim_v, F = hp->n_ff;
    const int *pos = c->pos;
    llm_group_positions(c, g, ng);
    float *x = c->x, *xb = c->xb, *xb2 = c->xb2, *q = c->q, *k = c->k, *v = c->v, *att = c->att, *hb = c->hb,
          *hb2 = c->hb2;
    steno_attn_params ap = {hp->n_head, hp->n_head_kv, hp->head_dim_k, hp->head_dim_v, hp->kq_scale,
                            sqrtf((float)hp->head_dim_k), hp->llama2c, c->p.compute == STENO_LLM_COMPUTE_FAST};

    /* token embedding */
    for (int t = 0; t < T; t++) steno_mat_row_f32(&m->tok_embd, tokens[t], x + (size_t)t * E);

    /* Without a dump hook the residual adds and norms run inside the next product's conversion
     * (the add after the MLP in the next layer's, the last one after the loop); with one, each step
     * runs whole where the dumps expect its result. */
    const int fuse = !c->dump;
    const int ggml_swiglu = !hp->llama2c && c->p.compute != STENO_LLM_COMPUTE_F32 && steno_ggml_exact_available();
    const llm_glu_rows sw = {hb, hb2, F, ggml_swiglu ? steno_ggml_swiglu : steno_swiglu};
    for (int l = 0; l < hp->n_layer; l++) {
        const llm_layer *L = &m->layers[l];

        /* attention: RMSNorm, QKV projections, RoPE, cache, attention, output projection */
        norm_rows nr = {hp, x, xb, fuse && l > 0 ? xb2 : NULL, L->attn_norm};
        steno_xmat_pre pre = {pre_norm, &nr};
        if (!fuse) {
            for (int t = 0; t < T; t++) pre_norm(&nr, t);
            llm_dump(c, "attn_norm", l, xb, T, E);
        }
        const steno_mat *wqkv[3] = {&L->wq, &L->wk, &L->wv};
        float *yqkv[3] = {q, k, v};
        const int64_t lqkv[3] = {nq, nk, nv};
        if (llm_matmul_n_pre(c, fuse ? &pre : NULL, 3, wqkv, xb, T, yqkv, lqkv))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        llm_dump(c, "Vcur", l, v, T, nv);
        llm_dump(c, "Qpre", l, q, T, nq);
        for (int t = 0; t < T; t++) {
            if (hp->llama2c) {
                steno_rope_llama2c(q + (size_t)t * nq, nq, hp->head_dim_k, pos[t]);
                steno_rope_llama2c(k + (size_t)t * nk, nk, hp->head_dim_k, pos[t]);
            } else {
                steno_rope_ggml_qk(q + (size_t)t * nq, hp->n_head, k + (size_t)t * nk, hp->n_head_kv, hp->head_dim_k,
                                   hp->n_rot, pos[t], hp->rope_base, hp->rope_freq_scale, 0);
            }
        }
        llm_dump(c, "Qcur", l, q, T, nq);
        llm_dump(c, "Kcur", l, k, T, nk);
        steno_status st = llm_attend_groups(c, g, ng, l, &ap, q, k, v, att);
        if (st != STENO_OK) return st;
        llm_dump(c, "kqv_out", l, att, T, no);
        if (llm_matmul(c, &L->wo, att, T, xb2, E))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        llm_dump(c, "attn_out", l, xb2, T, E);

        /* feed-forward: residual, RMSNorm, SwiGLU */
        nr = (norm_rows){hp, x, xb, xb2, L->ffn_norm};
        if (!fuse) {
            for (int t = 0; t < T; t++) pre_norm(&nr, t);
            llm_dump(c, "ffn_inp", l, x, T, E);
        }
        const steno_mat *wgu[2] = {&L->ffn_gate, &L->ffn_up};
        float *ygu[2] = {hb, hb2};
        const int64_t lgu[2] = {F, F};
        if (llm_matmul_n_pre(c, fuse ? &pre : NULL, 2, wgu, xb, T, ygu, lgu))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        if (llm_glu_down(c, &sw, fuse, "ffn_swiglu", l, &L->ffn_down, T, xb2, E))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        llm_dump(c, "ffn_out", l, xb2, T, E);
        if (!fuse) {
            for (size_t i = 0; i < (size_t)T * E; i++) x[i] += xb2[i];
            llm_dump(c, "l_out", l, x, T, E);
        }
    }
    if (fuse)
        for (size_t i = 0; i < (size_t)T * E; i++) x[i] += xb2[i];
    for (int i = 0; i < ng; i++) g[i].ctx->n_past += g[i].T;
    return STENO_OK;
}
