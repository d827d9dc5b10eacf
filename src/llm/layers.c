/* layers.c — the per-layer steps the forward passes (models/llama.c, models/gemma3.c) share:
 * positions, attention of one or many sequences, grouped matrix products, the GLU down projection and
 * the output head. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/ops/ops.h"
#include "llm/model.h"

const float *llm_rope_factors(const steno_llm_ctx *c) {
    const llm_hparams *hp = &c->m->hp;
    if (hp->rope_freqs) return hp->rope_freqs;
    if (hp->rope_long && c->p.n_ctx > hp->n_ctx_orig) return hp->rope_long;
    return hp->rope_short;
}

void llm_group_positions(steno_llm_ctx *c, const llm_group *g, int ng) {
    for (int i = 0; i < ng; i++)
        for (int t = 0; t < g[i].T; t++) c->pos[g[i].t0 + t] = g[i].ctx->n_past + t;
}

/* The small groups' attentions of one layer, side by side: pool task i claims groups in turn and
 * runs each on one thread with scratch row_work[i]. */
typedef struct {
    steno_llm_ctx *c;
    const llm_group *g;
    const steno_attn_params *ap;
    const float *q;
    float *att;
    size_t nq, no;
    int n;
    atomic_int next, failed;
} attend_rows_job;

static void attend_rows_task(void *arg, int task, int n_tasks) {
    (void)n_tasks;
    attend_rows_job *j = arg;
    steno_llm_ctx *c = j->c;
    for (int k; (k = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < j->n;) {
        const int i = c->row_small[k];
        const size_t t0 = (size_t)j->g[i].t0;
        if (steno_attention(NULL, &c->row_work[task], j->ap, j->q + t0 * j->nq, j->g[i].T, c->pos[t0], &c->row_view[i],
                            j->att + t0 * j->no))
            atomic_store(&j->failed, 1);
    }
}

/* room for ng groups' views and one scratch per pool thread; 0 = not available (then serially) */
static int attend_rows_room(steno_llm_ctx *c, int ng, int nth) {
    if (ng > c->row_cap) {
        steno_kv_view *v = realloc(c->row_view, sizeof *v * (size_t)ng);
        if (!v) return 0;
        c->row_view = v;
        int *s = realloc(c->row_small, sizeof *s * (size_t)ng);
        if (!s) return 0;
        c->row_small = s;
        c->row_cap = ng;
    }
    if (nth > c->n_row_work) {
        steno_work *w = realloc(c->row_work, sizeof *w * (size_t)nth);
        if (!w) return 0;
        for (int i = c->n_row_work; i < nth; i++) w[i] = (steno_work){0};
        c->row_work = w;
        c->n_row_work = nth;
    }
    return 1;
}

steno_status llm_attend_groups(steno_llm_ctx *c, const llm_group *g, int ng, int l, const steno_attn_params *ap,
                               const float *q, const float *k, const float *v, float *att) {
    const llm_hparams *hp = &c->m->hp;
    const size_t nq = (size_t)hp->n_head * hp->head_dim_k, nk = (size_t)hp->n_head_kv * hp->head_dim_k,
                 nv = (size_t)hp->n_head_kv * hp->head_dim_v, no = (size_t)hp->n_head * hp->head_dim_v;
    const int nth = steno_pool_threads(c->pool);
    /* Decode rows at short contexts are each too small for the kernels to split over threads (they
     * run on the calling thread), so a batch of them ran one after another on one core: 14 % of an
     * 8-row SmolLM2 step with the other core idle. Those groups run side by side instead, each on
     * one thread; a query's result does not depend on the thread count (attention.h), so the bits
     * are the same. Larger groups keep the pool to themselves, one after another. */
    if (ng > 1 && nth > 1 && attend_rows_room(c, ng, nth)) {
        int n_small = 0;
        for (int i = 0; i < ng; i++) {
            const size_t t0 = (size_t)g[i].t0;
            steno_status st = steno_kv_update_and_fetch(g[i].ctx->kv[l], k + t0 * nk, v + t0 * nv, g[i].T, &c->row_view[i]);
            if (st != STENO_OK) return st;
            if ((long)g[i].T * hp->n_head * c->row_view[i].n_order < 4096) c->row_small[n_small++] = i;
            else if (steno_attention(c->pool, &c->attn_work, ap, q + t0 * nq, g[i].T, c->pos[t0], &c->row_view[i],
                                     att + t0 * no))
                return steno_fail(STENO_E_NOMEM, "forward: out of memory in attention");
        }
        if (n_small > 0) {
            attend_rows_job j = {.c = c, .g = g, .ap = ap, .q = q, .att = att, .nq = nq, .no = no, .n = n_small};
            atomic_init(&j.next, 0);
            atomic_init(&j.failed, 0);
            steno_pool_run(c->pool, attend_rows_task, &j, n_small < nth ? n_small : nth);
            if (atomic_load(&j.failed)) return steno_fail(STENO_E_NOMEM, "forward: out of memory in attention");
        }
        return STENO_OK;
    }
    for (int i = 0; i < ng; i++) {
        const size_t t0 = (size_t)g[i].t0;
        steno_kv_view view;
        steno_status st = steno_kv_update_and_fetch(g[i].ctx->kv[l], k + t0 * nk, v + t0 * nv, g[i].T, &view);
        if (st != STENO_OK) return st;
        if (steno_attention(c->pool, &c->attn_work, ap, q + t0 * nq, g[i].T, c->pos[t0], &view, att + t0 * no))
            return steno_fail(STENO_E_NOMEM, "forward: out of memory in attention");
    }
    return STENO_OK;
}

/* llm_matmul_n (model.h): matrices are grouped by how they are computed, each group in one call, in
 * the order of their first member; the results do not depend on the grouping (bit-identical). */
int llm_matmul_n(steno_llm_ctx *c, int nm, const steno_mat *const *W, const float *X, int T, float *const *Y,
                 const int64_t *ldy) {
    return llm_matmul_n_pre(c, NULL, nm, W, X, T, Y, ldy);
}

int llm_matmul_n_pre(steno_llm_ctx *c, const steno_xmat_pre *pre, int nm, const steno_mat *const *W, const float *X,
                     int T, float *const *Y, const int64_t *ldy) {
    /* the first group computed is W[0]'s: pre goes into its conversion, or runs here */
    if (pre && !(c->p.compute == STENO_LLM_COMPUTE_FAST && W[0]->x8)) {
        for (int t = 0; t < T; t++) pre->fn(pre->ctx, t);
        pre = NULL;
    }
    int done[STENO_MATMUL_MAX_N] = {0};
    for (int a = 0; a < nm; a++) {
        if (done[a]) continue;
        if (c->p.compute == STENO_LLM_COMPUTE_F32) {
            if (llm_matmul(c, W[a], X, T, Y[a], ldy[a])) return -1;
            done[a] = 1;
            continue;
        }
        if (c->p.compute == STENO_LLM_COMPUTE_FAST && W[a]->x8) {
            const steno_xmat *xw[STENO_MATMUL_MAX_N];
            float *xy[STENO_MATMUL_MAX_N];
            int64_t xl[STENO_MATMUL_MAX_N];
            int nx = 0;
            for (int b = a; b < nm; b++)
                if (!done[b] && W[b]->x8 && W[b]->x8->type == W[a]->x8->type && W[b]->n_in == W[a]->n_in) {
                    xw[nx] = W[b]->x8, xy[nx] = Y[b], xl[nx++] = ldy[b];
                    done[b] = 1;
                }
            if (steno_matmul_x_pre(c->pool, &c->work, pre, nx, xw, X, T, xy, xl)) return -1;
            pre = NULL;
            continue;
        }
        const steno_mat *gw[STENO_MATMUL_MAX_N];
        float *gy[STENO_MATMUL_MAX_N];
        int64_t gl[STENO_MATMUL_MAX_N];
        int ng = 0;
        for (int b = a; b < nm; b++)
            if (!done[b] && W[b]->type == W[a]->type && W[b]->n_in == W[a]->n_in &&
                !(c->p.compute == STENO_LLM_COMPUTE_FAST && W[b]->x8)) {
                gw[ng] = W[b], gy[ng] = Y[b], gl[ng++] = ldy[b];
                done[b] = 1;
            }
        if (steno_matmul_n(c->pool, &c->work, ng, gw, X, T, gy, gl)) return -1;
    }
    return 0;
}

void llm_pre_glu(void *arg, int t) {
    const llm_glu_rows *r = arg;
    float *h = r->hb + (size_t)t * r->F;
    r->fn(h, h, r->hb2 + (size_t)t * r->F, r->F);
}

int llm_glu_down(steno_llm_ctx *c, const llm_glu_rows *glu, int fuse, const char *name, int layer, const steno_mat *W,
                 int T, float *Y, int64_t ldy) {
    const steno_xmat_pre pre = {llm_pre_glu, (void *)glu};
    if (!fuse) {
        for (int t = 0; t < T; t++) llm_pre_glu(pre.ctx, t);
        llm_dump(c, name, layer, glu->hb, T, glu->F);
    }
    return llm_matmul_n_pre(c, fuse ? &pre : NULL, 1, &W, glu->hb, T, &Y, &ldy);
}

steno_status llm_output(steno_llm_ctx *c, int r0, const int *rows, int nr, float *logits) {
    const steno_llm *m = c->m;
    const llm_hparams *hp = &m->hp;
    const int E = hp->n_embd;
    for (int t = 0; t < nr; t++) {
        const float *xt = c->x + (size_t)(rows ? rows[t] : r0 + t) * E;
        if (hp->llama2c) steno_rmsnorm_llama2c(c->xb + (size_t)t * E, xt, m->output_norm, E, hp->norm_eps);
        else steno_rmsnorm_ggml(c->xb + (size_t)t * E, xt, m->output_norm, E, hp->norm_eps);
    }
    if (llm_matmul(c, &m->output, c->xb, nr, logits, hp->n_vocab))
        return steno_fail(STENO_E_NOMEM, "forward: out of memory");
    if (hp->logit_scale != 1.0f)
        for (size_t i = 0; i < (size_t)nr * hp->n_vocab; i++) logits[i] *= hp->logit_scale;
    if (hp->logit_softcap > 0) {
        const float cap = hp->logit_softcap;
        for (size_t i = 0; i < (size_t)nr * hp->n_vocab; i++) logits[i] = tanhf(logits[i] / cap) * cap;
    }
    return STENO_OK;
}
