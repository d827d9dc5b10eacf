/* moe.c — the mixture-of-experts MLP (llm/model.h llm_moe_ffn), as llama.cpp's build_moe_ffn with
 * softmax gating (src/llama-graph.cpp) and the families' shared experts (src/models/qwen2moe.cpp):
 *
 *   p = softmax(x · Wrouterᵀ)                       per row, over n_expert
 *   S = the n_expert_used largest p (argsort top-k; equal values: the lower index first)
 *   w_j = p_j for j in S (÷ Σ w when moe_norm_w, clamped below at 2^-14; × expert_weights_scale)
 *   y = Σ_{j in S, in selection order} w_j · down_j(silu(gate_j(x)) ⊙ up_j(x))
 *   y += shared(x) · sigmoid(x · w_gate_shexp)      (Qwen2-MoE; Granite-MoE's shared expert ungated)
 *
 * The experts run as grouped products: the rows routed to expert j are gathered into one block and
 * multiplied by its matrices in one call each (a batch of sequences routes its tokens together), and
 * every row's products are the kernels' per-row arithmetic, so a row's result does not depend on its
 * company. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/ops/ggml_simd.h"
#include "kernels/ops/ops.h"
#include "kernels/quant/quant.h"
#include "llm/model.h"

/* expert e's matrix within a 3-D weight */
static steno_mat expert(const steno_mat *W, int e) {
    steno_mat m = *W;
    m.data = (const char *)W->data + (size_t)e * (size_t)W->n_out * W->row_bytes;
    m.x8 = NULL;
    return m;
}

/* softmax as ggml_soft_max (max subtracted, ggml's exp and double sum, one scale) */
static void softmax_row(float *p, const float *x, int n, int exact) {
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    double sum;
    if (exact) {
        sum = steno_ggml_soft_max(n, p, x, mx);
    } else {
        sum = 0;
        for (int i = 0; i < n; i++) sum += (double)(p[i] = expf(x[i] - mx));
    }
    const float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) p[i] *= inv;
}

/* the k largest of p[0..n) in descending order; ties keep the lower index first */
static void top_k(const float *p, int n, int k, int *sel) {
    for (int j = 0; j < k; j++) {
        int b = -1;
        for (int i = 0; i < n; i++) {
            int taken = 0;
            for (int q = 0; q < j && !taken; q++) taken = sel[q] == i;
            if (!taken && (b < 0 || p[i] > p[b])) b = i;
        }
        sel[j] = b;
    }
}

static steno_status nomem(void) { return steno_fail(STENO_E_NOMEM, "forward: out of memory"); }

/* out = (silu(X·Gᵀ) ⊙ X·Uᵀ)·Dᵀ for n rows of X; gate/up [n][F] and out [n][E] */
static int swiglu_mlp(steno_llm_ctx *c, const steno_mat *G, const steno_mat *U, const steno_mat *D, const float *X,
                      int n, int F, int E, float *gate, float *up, float *out) {
    const steno_mat *wgu[2] = {G, U};
    float *ygu[2] = {gate, up};
    const int64_t lgu[2] = {F, F};
    if (llm_matmul_n(c, 2, wgu, X, n, ygu, lgu)) return -1;
    const int exact = c->p.compute != STENO_LLM_COMPUTE_F32 && steno_ggml_exact_available();
    for (int t = 0; t < n; t++) {
        float *g = gate + (size_t)t * F;
        (exact ? steno_ggml_swiglu : steno_swiglu)(g, g, up + (size_t)t * F, F);
    }
    return llm_matmul(c, D, gate, n, out, E);
}

steno_status llm_moe_ffn(steno_llm_ctx *c, const llm_layer *L, const float *xb, int T, float *y) {
    const llm_hparams *hp = &c->m->hp;
    const int E = hp->n_embd, NE = hp->n_expert, K = hp->n_expert_used, F = hp->n_ff_exp;
    const int Fmax = F > hp->n_ff_shexp ? F : hp->n_ff_shexp;
    const int exact = c->p.compute != STENO_LLM_COMPUTE_F32 && steno_ggml_exact_available();
    /* scratch: router logits and probabilities, selections, a gathered block, its products */
    float *logits = malloc(sizeof(float) * (size_t)T * NE), *prob = malloc(sizeof(float) * (size_t)NE);
    int *sel = malloc(sizeof(int) * (size_t)T * K), *rows = malloc(sizeof(int) * (size_t)T * K);
    float *w = malloc(sizeof(float) * (size_t)T * K);
    float *xg = malloc(sizeof(float) * (size_t)T * E), *gate = malloc(sizeof(float) * (size_t)T * Fmax),
          *up = malloc(sizeof(float) * (size_t)T * Fmax), *yg = malloc(sizeof(float) * (size_t)T * E);
    float *ys = malloc(sizeof(float) * (size_t)T * K * E); /* [T][K][E]: each selected expert's output */
    steno_status st = STENO_OK;
    if (!logits || !prob || !sel || !rows || !w || !xg || !gate || !up || !yg || !ys) {
        st = nomem();
        goto done;
    }
    if (llm_matmul(c, &L->ffn_gate_inp, xb, T, logits, NE)) {
        st = nomem();
        goto done;
    }
    for (int t = 0; t < T; t++) {
        softmax_row(prob, logits + (size_t)t * NE, NE, exact);
        int *s = sel + (size_t)t * K;
        top_k(prob, NE, K, s);
        float *wt = w + (size_t)t * K;
        for (int j = 0; j < K; j++) wt[j] = prob[s[j]];
        if (hp->moe_norm_w) {
            float sum = 0; /* ggml_sum_rows: a float sum in order */
            for (int j = 0; j < K; j++) sum += wt[j];
            if (sum < 6.103515625e-5f) sum = 6.103515625e-5f;
            for (int j = 0; j < K; j++) wt[j] /= sum;
        }
        if (hp->expert_weights_scale != 1.0f)
            for (int j = 0; j < K; j++) wt[j] *= hp->expert_weights_scale;
    }
    /* each expert over the rows routed to it, gathered */
    for (int e = 0; e < NE; e++) {
        int n = 0;
        for (int t = 0; t < T; t++)
            for (int j = 0; j < K; j++)
                if (sel[(size_t)t * K + j] == e) {
                    rows[n] = t * K + j;
                    memcpy(xg + (size_t)n * E, xb + (size_t)t * E, sizeof(float) * (size_t)E);
                    n++;
                }
        if (n == 0) continue;
        const steno_mat G = expert(&L->ffn_gate_exps, e), U = expert(&L->ffn_up_exps, e),
                        D = expert(&L->ffn_down_exps, e);
        if (swiglu_mlp(c, &G, &U, &D, xg, n, F, E, gate, up, yg)) {
            st = nomem();
            goto done;
        }
        for (int r = 0; r < n; r++) memcpy(ys + (size_t)rows[r] * E, yg + (size_t)r * E, sizeof(float) * (size_t)E);
    }
    /* the weighted sum in selection order: ((y0·w0 + y1·w1) + y2·w2) + ... */
    for (int t = 0; t < T; t++) {
        float *yt = y + (size_t)t * E;
        const float *wt = w + (size_t)t * K;
        for (int i = 0; i < E; i++) yt[i] = ys[((size_t)t * K) * E + i] * wt[0];
        for (int j = 1; j < K; j++) {
            const float *yj = ys + ((size_t)t * K + j) * E;
            for (int i = 0; i < E; i++) yt[i] = yt[i] + yj[i] * wt[j];
        }
    }
    if (L->ffn_up_shexp.data) {
        const int Fs = hp->n_ff_shexp;
        if (swiglu_mlp(c, &L->ffn_gate_shexp, &L->ffn_up_shexp, &L->ffn_down_shexp, xb, T, Fs, E, gate, up, yg)) {
            st = nomem();
            goto done;
        }
        if (L->ffn_gate_inp_shexp) {
            /* sigmoid(g) as llama.cpp writes it: silu(g) / g */
            const steno_mat Wg = {STENO_T_F32, E, 1, (size_t)E * sizeof(float), L->ffn_gate_inp_shexp, NULL};
            if (llm_matmul(c, &Wg, xb, T, logits, 1)) {
                st = nomem();
                goto done;
            }
            for (int t = 0; t < T; t++) {
                const float g = logits[t], s = (g / (1.0f + expf(-g))) / g;
                for (int i = 0; i < E; i++) yg[(size_t)t * E + i] *= s;
            }
        }
        for (size_t i = 0; i < (size_t)T * E; i++) y[i] = y[i] + yg[i];
    }
done:
    free(logits);
    free(prob);
    free(sel);
    free(rows);
    free(w);
    free(xg);
    free(gate);
    free(up);
    free(yg);
    free(ys);
    return st;
}
