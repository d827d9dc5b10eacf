/* llama.c — the Llama-family forward pass (llama.cpp src/models/llama.cpp for GGUF files; llama2.c
 * run.c forward() for llama2.c checkpoints, whose numerics it reproduces bit for bit: float sums,
 * run.c's RoPE and RMSNorm, f32 KV cache). Reads top to bottom in the paper's order; see model.h. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/ggml_simd.h"
#include "kernels/ops.h"
#include "llm/model.h"

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

    for (int l = 0; l < hp->n_layer; l++) {
        const llm_layer *L = &m->layers[l];

        /* attention: RMSNorm, QKV projections, RoPE, cache, attention, output projection */
        if (hp->llama2c)
            for (int t = 0; t < T; t++) steno_rmsnorm_llama2c(xb + (size_t)t * E, x + (size_t)t * E, L->attn_norm, E, hp->norm_eps);
        else steno_rmsnorm_ggml_rows(xb, x, L->attn_norm, T, E, hp->norm_eps);
        llm_dump(c, "attn_norm", l, xb, T, E);
        const steno_mat *wqkv[3] = {&L->wq, &L->wk, &L->wv};
        float *yqkv[3] = {q, k, v};
        const int64_t lqkv[3] = {nq, nk, nv};
        if (llm_matmul_n(c, 3, wqkv, xb, T, yqkv, lqkv))
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
        for (size_t i = 0; i < (size_t)T * E; i++) x[i] += xb2[i];
        llm_dump(c, "ffn_inp", l, x, T, E);

        /* feed-forward: RMSNorm, SwiGLU */
        if (hp->llama2c)
            for (int t = 0; t < T; t++) steno_rmsnorm_llama2c(xb + (size_t)t * E, x + (size_t)t * E, L->ffn_norm, E, hp->norm_eps);
        else steno_rmsnorm_ggml_rows(xb, x, L->ffn_norm, T, E, hp->norm_eps);
        const steno_mat *wgu[2] = {&L->ffn_gate, &L->ffn_up};
        float *ygu[2] = {hb, hb2};
        const int64_t lgu[2] = {F, F};
        if (llm_matmul_n(c, 2, wgu, xb, T, ygu, lgu))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        if (!hp->llama2c && c->p.compute != STENO_LLM_COMPUTE_F32 && steno_ggml_exact_available())
            steno_ggml_swiglu(hb, hb, hb2, T * F);
        else steno_swiglu(hb, hb, hb2, T * F);
        llm_dump(c, "ffn_swiglu", l, hb, T, F);
        if (llm_matmul(c, &L->ffn_down, hb, T, xb2, E))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        llm_dump(c, "ffn_out", l, xb2, T, E);
        for (size_t i = 0; i < (size_t)T * E; i++) x[i] += xb2[i];
        llm_dump(c, "l_out", l, x, T, E);
    }
    for (int i = 0; i < ng; i++) g[i].ctx->n_past += g[i].T;
    return STENO_OK;
}
