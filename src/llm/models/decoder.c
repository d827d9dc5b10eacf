/* decoder.c — the dense decoder forward pass that Llama and the families built on its layout run
 * (llama.cpp src/models/llama.cpp, qwen2.cpp, qwen3.cpp, granite.cpp, olmo2.cpp, smollm3.cpp, whose
 * CPU numerics it follows; llama2.c run.c forward() for llama2.c checkpoints, whose numerics it
 * reproduces bit for bit: float sums, run.c's RoPE and RMSNorm, f32 KV cache). The options each
 * family adds — projection biases, QK-norm, post-norms in place of pre-norms, embedding, residual
 * and logit scales, RoPE frequency factors, layers without RoPE — are read from the model
 * (llm/arch.h's row and the tensors the file holds). Reads top to bottom in the paper's order; see
 * model.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/attention/attention.h"
#include "kernels/ops/ggml_simd.h"
#include "kernels/ops/ops.h"
#include "llm/arch.h"
#include "llm/model.h"

/* The per-row steps between the products, as steno_xmat_pre prologues (kernels/gemm/matmul_x8.h): run by the
 * fast path's activation conversion on the row it converts, in parallel, or by llm_matmul_n_pre on
 * the caller. Each row's arithmetic is the same either way (element-wise adds, one row's norm). */
typedef struct {
    const llm_hparams *hp;
    float *x, *xb;
    float *res;            /* NULL, or [T][E] added into x first (the previous block's output) */
    const float *res_norm; /* NULL, or the post-norm applied to res (in place) before the add */
    const float *w;        /* the pre-norm of x into xb, or NULL: xb = x (OLMo 2) */
} norm_rows;

static void pre_norm(void *arg, int t) {
    const norm_rows *r = arg;
    const llm_hparams *hp = r->hp;
    const int E = hp->n_embd;
    float *x = r->x + (size_t)t * E, *y = r->xb + (size_t)t * E;
    if (r->res) {
        float *a = r->res + (size_t)t * E;
        if (r->res_norm) steno_rmsnorm_ggml(a, a, r->res_norm, E, hp->norm_eps);
        if (hp->res_scale != 1.0f)
            for (int i = 0; i < E; i++) x[i] += a[i] * hp->res_scale;
        else
            for (int i = 0; i < E; i++) x[i] += a[i];
    }
    if (!r->w) memcpy(y, x, (size_t)E * sizeof *y);
    else if (hp->llama2c) steno_rmsnorm_llama2c(y, x, r->w, E, hp->norm_eps);
    else steno_rmsnorm_ggml(y, x, r->w, E, hp->norm_eps);
}

/* y[t][i] += b[i] for T rows of n (ggml_add of a bias row) */
static void add_bias(float *y, const float *b, int T, int n) {
    if (!b) return;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < n; i++) y[(size_t)t * n + i] += b[i];
}

/* One product whose output rows hold several projections side by side (Phi-3's attn_qkv, its
 * [gate; up]): Y = X·Wᵀ with pre on X's rows first, then each row's columns split into the outputs
 * ([T][w_i] each). The same per-element arithmetic as separate matrices. 0 or -1 (NOMEM). */
static int fused_product(steno_llm_ctx *c, const steno_xmat_pre *pre, const steno_mat *W, const float *X, int T, int n,
                         float *const *out, const int *w) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += w[i];
    float *y = malloc(sizeof(float) * (size_t)T * (size_t)total);
    if (!y) return -1;
    const steno_mat *ws[1] = {W};
    float *ys[1] = {y};
    const int64_t ld[1] = {total};
    if (llm_matmul_n_pre(c, pre, 1, ws, X, T, ys, ld)) {
        free(y);
        return -1;
    }
    for (int t = 0; t < T; t++) {
        const float *row = y + (size_t)t * (size_t)total;
        for (int i = 0; i < n; i++) {
            memcpy(out[i] + (size_t)t * w[i], row, sizeof(float) * (size_t)w[i]);
            row += w[i];
        }
    }
    free(y);
    return 0;
}

steno_status llm_forward_decoder(steno_llm_ctx *c, const int *tokens, int T, const llm_group *g, int ng) {
    const steno_llm *m = c->m;
    const llm_hparams *hp = &m->hp;
    const int E = hp->n_embd, nq = hp->n_head * hp->head_dim_k, nk = hp->n_head_kv * hp->head_dim_k,
              nv = hp->n_head_kv * hp->head_dim_v, no = hp->n_head * hp->head_dim_v, F = hp->n_ff;
    const int *pos = c->pos;
    llm_group_positions(c, g, ng);
    float *x = c->x, *xb = c->xb, *xb2 = c->xb2, *q = c->q, *k = c->k, *v = c->v, *att = c->att, *hb = c->hb,
          *hb2 = c->hb2;
    steno_attn_params ap = {hp->n_head, hp->n_head_kv, hp->head_dim_k, hp->head_dim_v, hp->kq_scale,
                            sqrtf((float)hp->head_dim_k), hp->llama2c, c->p.compute == STENO_LLM_COMPUTE_FAST, 0.0f};

    /* token embedding (Granite scales it) */
    for (int t = 0; t < T; t++) {
        float *xt = x + (size_t)t * E;
        steno_mat_row_f32(&m->tok_embd, tokens[t], xt);
        if (hp->embd_scale != 1.0f)
            for (int i = 0; i < E; i++) xt[i] *= hp->embd_scale;
    }

    /* Without a dump hook the residual adds and norms run inside the next product's conversion
     * (the add after the MLP in the next layer's, the last one after the loop); with one, each step
     * runs whole where the dumps expect its result. */
    const int fuse = !c->dump;
    const float *ff = llm_rope_factors(c);
    const int ggml_swiglu = !hp->llama2c && c->p.compute != STENO_LLM_COMPUTE_F32 && steno_ggml_exact_available();
    const llm_glu_rows sw = {hb, hb2, F, ggml_swiglu ? steno_ggml_swiglu : steno_swiglu};
    for (int l = 0; l < hp->n_layer; l++) {
        const llm_layer *L = &m->layers[l];

        /* attention: RMSNorm, QKV projections (+ biases), QK-norm, RoPE, cache, attention, output
         * projection (+ bias) */
        norm_rows nr = {hp, x, xb, fuse && l > 0 ? xb2 : NULL, l > 0 ? m->layers[l - 1].post_ffn_norm : NULL,
                        L->attn_norm};
        steno_xmat_pre pre = {pre_norm, &nr};
        if (!fuse) {
            for (int t = 0; t < T; t++) pre_norm(&nr, t);
            llm_dump(c, "attn_norm", l, xb, T, E);
        }
        const steno_mat *wqkv[3] = {&L->wq, &L->wk, &L->wv};
        float *yqkv[3] = {q, k, v};
        const int64_t lqkv[3] = {nq, nk, nv};
        const int wqkv_n[3] = {nq, nk, nv};
        if (L->wqkv.data ? fused_product(c, fuse ? &pre : NULL, &L->wqkv, xb, T, 3, yqkv, wqkv_n)
                         : llm_matmul_n_pre(c, fuse ? &pre : NULL, 3, wqkv, xb, T, yqkv, lqkv))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        add_bias(q, L->bq, T, nq);
        add_bias(k, L->bk, T, nk);
        add_bias(v, L->bv, T, nv);
        llm_dump(c, "Vcur", l, v, T, nv);
        llm_dump(c, "Qpre", l, q, T, nq);
        if (hp->qk_norm == LLM_QK_NORM_HEAD) {
            steno_rmsnorm_ggml_rows(q, q, L->q_norm, T * hp->n_head, hp->head_dim_k, hp->norm_eps);
            steno_rmsnorm_ggml_rows(k, k, L->k_norm, T * hp->n_head_kv, hp->head_dim_k, hp->norm_eps);
        } else if (hp->qk_norm == LLM_QK_NORM_FULL) {
            steno_rmsnorm_ggml_rows(q, q, L->q_norm, T, nq, hp->norm_eps);
            steno_rmsnorm_ggml_rows(k, k, L->k_norm, T, nk, hp->norm_eps);
        }
        const int rope = hp->no_rope == NULL || !hp->no_rope[l];
        for (int t = 0; rope && t < T; t++) {
            if (hp->llama2c) {
                steno_rope_llama2c(q + (size_t)t * nq, nq, hp->head_dim_k, pos[t]);
                steno_rope_llama2c(k + (size_t)t * nk, nk, hp->head_dim_k, pos[t]);
            } else {
                steno_rope_ggml_qk_ff(q + (size_t)t * nq, hp->n_head, k + (size_t)t * nk, hp->n_head_kv,
                                      hp->head_dim_k, hp->n_rot, pos[t], hp->rope_base, hp->rope_freq_scale, ff,
                                      hp->rope_mscale, hp->rope_neox);
            }
        }
        if (hp->q_scale != 1.0f) /* Phi-3 scales q after RoPE, then attends with scale 1 */
            for (size_t i = 0; i < (size_t)T * nq; i++) q[i] *= hp->q_scale;
        llm_dump(c, "Qcur", l, q, T, nq);
        llm_dump(c, "Kcur", l, k, T, nk);
        steno_status st = llm_attend_groups(c, g, ng, l, &ap, q, k, v, att);
        if (st != STENO_OK) return st;
        llm_dump(c, "kqv_out", l, att, T, no);
        if (llm_matmul(c, &L->wo, att, T, xb2, E))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        add_bias(xb2, L->bo, T, E);
        llm_dump(c, "attn_out", l, xb2, T, E);

        /* feed-forward: (post-norm,) residual, RMSNorm, SwiGLU */
        nr = (norm_rows){hp, x, xb, xb2, L->post_attn_norm, L->ffn_norm};
        if (!fuse) {
            for (int t = 0; t < T; t++) pre_norm(&nr, t);
            llm_dump(c, "ffn_inp", l, x, T, E);
        }
        if (L->ffn_gate_inp.data) { /* a mixture of experts (llm/moe.c) */
            if (fuse)
                for (int t = 0; t < T; t++) pre_norm(&nr, t);
            st = llm_moe_ffn(c, L, xb, T, xb2);
            if (st != STENO_OK) return st;
        } else {
            const steno_mat *wgu[2] = {&L->ffn_gate, &L->ffn_up};
            float *ygu[2] = {hb, hb2};
            const int64_t lgu[2] = {F, F};
            const int wgu_n[2] = {F, F};
            if (hp->fused_gate_up ? fused_product(c, fuse ? &pre : NULL, &L->ffn_up, xb, T, 2, ygu, wgu_n)
                                  : llm_matmul_n_pre(c, fuse ? &pre : NULL, 2, wgu, xb, T, ygu, lgu))
                return steno_fail(STENO_E_NOMEM, "forward: out of memory");
            if (llm_glu_down(c, &sw, fuse, "ffn_swiglu", l, &L->ffn_down, T, xb2, E))
                return steno_fail(STENO_E_NOMEM, "forward: out of memory");
        }
        llm_dump(c, "ffn_out", l, xb2, T, E);
        if (!fuse) {
            norm_rows out = {hp, x, xb, xb2, L->post_ffn_norm, NULL};
            for (int t = 0; t < T; t++) pre_norm(&out, t);
            llm_dump(c, "l_out", l, x, T, E);
        }
    }
    if (fuse) { /* the last layer's residual (its post-norm first, where the layout has one) */
        norm_rows out = {hp, x, xb, xb2, m->layers[hp->n_layer - 1].post_ffn_norm, NULL};
        for (int t = 0; t < T; t++) pre_norm(&out, t);
    }
    for (int i = 0; i < ng; i++) g[i].ctx->n_past += g[i].T;
    return STENO_OK;
}
