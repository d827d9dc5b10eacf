/* attention.c — see attention.h. */
#include "kernels/attention/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/ops/ggml_simd.h"
#include "kernels/quant/quant.h"

typedef struct {
    const steno_attn_params *ap;
    const float *q;
    int T, q0;
    const steno_kv_view *kv;
    float *out;
    uint8_t *scratch;      /* per thread: scores [n_order] + converted q + v row */
    size_t scratch_per_thread;
    size_t qconv_bytes;
    const steno_type_traits *kt, *kdot, *vt;
} attn_job;

static void attn_worker(void *arg, int ith, int nth) {
    attn_job *j = arg;
    const steno_attn_params *ap = j->ap;
    const steno_kv_view *kv = j->kv;
    const int hk = ap->head_dim_k, hv = ap->head_dim_v;
    const int group = ap->n_head / ap->n_kv_head;
    uint8_t *scr = j->scratch + (size_t)ith * j->scratch_per_thread;
    float *scores = (float *)scr;
    int32_t *slots = (int32_t *)(scores + kv->n_order);
    uint8_t *qconv = (uint8_t *)(slots + kv->n_order);
    float *vrow = (float *)(qconv + ((j->qconv_bytes + 15) / 16 * 16));
    long lo, hi;
    steno_split((long)j->T * ap->n_head, ith, nth, &lo, &hi);
    const int v_f16 = kv->dtype == STENO_T_F16;
    for (long task = lo; task < hi; task++) {
        const int t = (int)(task / ap->n_head), h = (int)(task % ap->n_head);
        const int kvh = h / group;
        const int qpos = j->q0 + t;
        const float *qh = j->q + (size_t)t * ap->n_head * hk + (size_t)h * hk;
        float *oh = j->out + (size_t)t * ap->n_head * hv + (size_t)h * hv;
        j->kdot->from_float(qh, qconv, hk);
        /* scores over visible slots, in temporal order */
        int n = 0;
        float maxv = -INFINITY;
        for (int i = 0; i < kv->n_order; i++) {
            int s = kv->order ? kv->order[i] : i;
            if (!steno_kv_visible(kv, kv->pos[s], qpos)) continue;
            const uint8_t *krow = kv->k + (size_t)s * kv->k_row_bytes + (size_t)kvh * (kv->k_row_bytes / ap->n_kv_head);
            float d = j->kt->vec_dot(hk, krow, qconv);
            float sc = ap->llama2c ? d / ap->scale_div : d * ap->scale;
            if (ap->softcap > 0) sc = tanhf(sc * (1.0f / ap->softcap)) * ap->softcap;
            scores[n] = sc;
            slots[n] = s;
            if (sc > maxv) maxv = sc;
            n++;
        }
        memset(oh, 0, (size_t)hv * sizeof(float));
        if (n == 0) continue;
        if (ap->llama2c) {
            float sum = 0.0f;
            for (int i = 0; i < n; i++) {
                scores[i] = expf(scores[i] - maxv);
                sum += scores[i];
            }
            for (int i = 0; i < n; i++) scores[i] /= sum;
        } else {
            double sum = 0.0;
            for (int i = 0; i < n; i++) {
                scores[i] = expf(scores[i] - maxv);
                sum += (double)scores[i];
            }
            const float inv = (float)(1.0 / sum);
            for (int i = 0; i < n; i++) {
                scores[i] *= inv;
                if (v_f16) scores[i] = steno_round_f16(scores[i]);
            }
        }
        const size_t vhead_bytes = kv->v_row_bytes / ap->n_kv_head;
        for (int i = 0; i < n; i++) {
            const uint8_t *vr = kv->v + (size_t)slots[i] * kv->v_row_bytes + (size_t)kvh * vhead_bytes;
            const float p = scores[i];
            if (kv->dtype == STENO_T_F32) {
                const float *vf = (const float *)vr;
                for (int d = 0; d < hv; d++) oh[d] += p * vf[d];
            } else if (kv->dtype == STENO_T_F16) {
                steno_f16_axpy(hv, p, vr, oh);
            } else {
                j->vt->to_float(vr, vrow, hv);
                for (int d = 0; d < hv; d++) oh[d] += p * vrow[d];
            }
        }
    }
}

/* ggml-exact path (f16 caches, AVX2): llama.cpp's non-flash attention on its f16 KV cache,
 * operation for operation — kq = ggml_vec_dot_f16(k, f16(q)) · scale, soft_max with ggml_v_expf over
 * 8-position chunks aligned to position 0, p rounded to f16, kqv = ggml_vec_dot_f16 over the
 * transposed V cache with position p in lane p % 32. Positions play the role of llama.cpp's cache
 * cells (one sequence, cells filled in order).
 * Blocking (prompt evaluation): a task takes tb query rows × hb heads of one KV group, so each key
 * row is converted once and scored against all tb·hb queries (8 rows at a time); every (t, h)
 * output is still computed by the same operations in the same order as one query alone, whatever
 * tb, hb and the thread split are. */
typedef struct {
    const steno_attn_params *ap;
    const float *q;
    int T, q0;
    const steno_kv_view *kv;
    float *out;
    uint8_t *scratch;
    size_t per;
    int span; /* positions covered by the score array (multiple of 8) */
    int hb;   /* query heads per task (1 or the whole KV group) */
    int tb;   /* query rows per task */
} attn_ggml_job;

static void attn_worker_ggml(void *arg, int ith, int nth) {
    attn_ggml_job *j = arg;
    const steno_attn_params *ap = j->ap;
    const steno_kv_view *kv = j->kv;
    const int hk = ap->head_dim_k, hv = ap->head_dim_v, group = ap->n_head / ap->n_kv_head, hb = j->hb, tb = j->tb;
    const int heads_tasks = ap->n_head / hb, t_tasks = (j->T + tb - 1) / tb;
    const size_t wst = (size_t)kv->n_order;
    uint8_t *scr = j->scratch + (size_t)ith * j->per;
    float *dense = (float *)scr;                              /* [span] */
    float *acc = dense + j->span;                             /* [32 * hv] */
    float *w = acc + 32 * (size_t)hv;                         /* [tb · hb][n_order] */
    int32_t *upos = (int32_t *)(w + (size_t)tb * hb * wst);   /* [n_order] union of the block's rows */
    int32_t *tpos = upos + wst;                               /* [n_order] rows of one query row */
    const uint16_t **uv = (const uint16_t **)(((uintptr_t)(tpos + wst) + 15) & ~(uintptr_t)15); /* [n_order] */
    const uint16_t **tv = uv + wst;                           /* [n_order] */
    int32_t *tidx = (int32_t *)(tv + wst);                    /* [n_order] their indices in the union */
    float *qf = (float *)(tidx + wst);                        /* [tb · hb][hk] */
    const size_t khead = kv->k_row_bytes / ap->n_kv_head, vhead = kv->v_row_bytes / ap->n_kv_head;
    long lo, hi;
    steno_split((long)t_tasks * heads_tasks, ith, nth, &lo, &hi);
    for (long task = lo; task < hi; task++) {
        const int t0 = (int)(task / heads_tasks) * tb, h0 = (int)(task % heads_tasks) * hb, kvh = h0 / group;
        const int t1 = t0 + tb < j->T ? t0 + tb : j->T, nq = (t1 - t0) * hb;
        /* ggml's mul_mat(k, q) converts q to f16; query (t, h0 + g) is qf row (t − t0)·hb + g */
        for (int t = t0; t < t1; t++)
            steno_ggml_round_f16_row(hb * hk, j->q + (size_t)t * ap->n_head * hk + (size_t)h0 * hk,
                                     qf + (size_t)(t - t0) * hb * hk);
        /* rows visible to any query row of the block, scored against all its queries */
        int n = 0, nb = 0;
        const uint16_t *krows[8];
        for (int i = 0; i < kv->n_order; i++) {
            const int s = kv->order ? kv->order[i] : i, p = kv->pos[s];
            int vis = 0;
            for (int t = t1 - 1; t >= t0 && !vis; t--) vis = steno_kv_visible(kv, p, j->q0 + t);
            if (!vis) continue;
            krows[nb++] = (const uint16_t *)(kv->k + (size_t)s * kv->k_row_bytes + (size_t)kvh * khead);
            upos[n] = p;
            uv[n] = (const uint16_t *)(kv->v + (size_t)s * kv->v_row_bytes + (size_t)kvh * vhead);
            n++;
            if (nb == 8) {
                steno_ggml_dot_f16_block(hk, krows, 8, qf, (size_t)hk, nq, ap->scale, w + n - 8, wst);
                nb = 0;
            }
        }
        if (nb) steno_ggml_dot_f16_block(hk, krows, nb, qf, (size_t)hk, nq, ap->scale, w + n - nb, wst);
        for (int t = t0; t < t1; t++) {
            const int qpos = j->q0 + t;
            /* this query row's visible rows (all of the union when the block is one row) */
            const int32_t *pos = upos;
            const uint16_t *const *vrows = uv;
            int m = n, prefix = 1; /* prefix: the visible rows are the union's first m (causal) */
            if (t1 - t0 > 1) {
                m = 0;
                for (int u = 0; u < n; u++)
                    if (steno_kv_visible(kv, upos[u], qpos)) {
                        if (u != m) prefix = 0;
                        tidx[m] = u;
                        tpos[m] = upos[u];
                        tv[m] = uv[u];
                        m++;
                    }
                if (!prefix) {
                    pos = tpos;
                    vrows = tv;
                }
            }
            for (int g = 0; g < hb; g++) {
                float *oh = j->out + (size_t)t * ap->n_head * hv + (size_t)(h0 + g) * hv;
                float *wg = w + (size_t)((t - t0) * hb + g) * wst;
                if (m == 0) {
                    memset(oh, 0, (size_t)hv * sizeof(float));
                    continue;
                }
                if (!prefix) /* compact the scores in place to the visible rows (order kept) */
                    for (int k = 0; k < m; k++) wg[k] = wg[tidx[k]];
                if (ap->softcap > 0) /* ggml_scale(1/cap), ggml_tanh, ggml_scale(cap) */
                    for (int k = 0; k < m; k++) wg[k] = tanhf(wg[k] * (1.0f / ap->softcap)) * ap->softcap;
                float maxv = -INFINITY;
                for (int k = 0; k < m; k++)
                    if (wg[k] > maxv) maxv = wg[k];
                /* dense scores over the 8-aligned chunks that hold visible positions, -inf elsewhere */
                const int first = pos[0] & ~7, end = (pos[m - 1] | 7) + 1;
                for (int p = first; p < end; p++) dense[p - first] = -INFINITY;
                for (int k = 0; k < m; k++) dense[pos[k] - first] = wg[k];
                /* chunks wholly masked add exp(-inf) = 0 in llama.cpp: skipping them is exact; runs of
                 * consecutive non-empty chunks go through one call, the sum accumulated in chunk order */
                double sum = 0;
                for (int k = 0; k < m;) {
                    const int c0 = pos[k] & ~7;
                    int c1 = c0 + 8;
                    while (k < m && pos[k] < c1 + 8) {
                        if (pos[k] >= c1) c1 += 8;
                        k++;
                    }
                    sum = steno_ggml_soft_max_from(c1 - c0, dense + (c0 - first), dense + (c0 - first), maxv, sum);
                }
                steno_ggml_probs_f16(m, dense, pos, first, (float)(1.0 / sum), wg);
                steno_ggml_attn_values(m, pos, vrows, wg, hv, acc, oh);
            }
        }
    }
}

static int attention_ggml(steno_pool *pool, steno_work *work, const steno_attn_params *ap, const float *q, int T,
                          int q0, const steno_kv_view *kv, float *out) {
    int maxpos = 0;
    for (int i = 0; i < kv->n_order; i++) {
        int s = kv->order ? kv->order[i] : i;
        if (kv->pos[s] > maxpos) maxpos = kv->pos[s];
    }
    const int span = (maxpos | 7) + 1 + 8;
    const int nth = steno_n_tasks(pool);
    /* whole KV groups, then blocks of query rows, per task when there are enough tasks to share out
     * (prompt evaluation, or one thread); single heads when few rows would leave threads idle */
    const int group = ap->n_head / ap->n_kv_head;
    const int hb = nth == 1 || (long)T * ap->n_kv_head >= 4L * nth ? group : 1;
    const int tb = hb > 1 && (long)T * ap->n_kv_head >= 16L * nth ? 4 : 1;
    const size_t n_order = (size_t)kv->n_order;
    size_t per = (size_t)span * 4 + 32 * (size_t)ap->head_dim_v * 4 + n_order * 4 * (size_t)(tb * hb) +
                 n_order * (4 + 4 + 8 + 8 + 4) + 16 + (size_t)(tb * hb) * ap->head_dim_k * 4 + 64;
    per = (per + 63) / 64 * 64;
    if (work->cap < per * (size_t)nth) {
        size_t want = per * (size_t)nth, cap = work->cap * 2 > want ? work->cap * 2 : want;
        void *p = realloc(work->buf, cap);
        if (!p) return -1;
        work->buf = p;
        work->cap = cap;
    }
    attn_ggml_job j = {ap, q, T, q0, kv, out, work->buf, per, span, hb, tb};
    if ((long)T * ap->n_head * kv->n_order < 4096) attn_worker_ggml(&j, 0, 1);
    else steno_pool_run(pool, attn_worker_ggml, &j, nth);
    return 0;
}

int steno_attention(steno_pool *pool, steno_work *work, const steno_attn_params *ap, const float *q, int T, int q0,
                    const steno_kv_view *kv, float *out) {
    if (kv->kq || kv->vq) return ap->softcap > 0 ? -1 : steno_attention_quant(pool, work, ap, q, T, q0, kv, out);
    if (ap->fast && ap->softcap <= 0) {
        const int rc = steno_attention_fast(pool, work, ap, q, T, q0, kv, out);
        if (rc <= 0) return rc;
    }
    if (!ap->llama2c && kv->dtype == STENO_T_F16 && ap->head_dim_v % 8 == 0 && steno_ggml_exact_available())
        return attention_ggml(pool, work, ap, q, T, q0, kv, out);
    const steno_type_traits *kt = steno_type_get(kv->dtype);
    if (!kt || !kt->vec_dot || !kt->to_float) return -1;
    const steno_type_traits *kdot = steno_type_get(kt->vec_dot_type);
    if (!kdot || !kdot->from_float) return -1;
    size_t qconv = steno_row_size(kt->vec_dot_type, ap->head_dim_k);
    if (qconv == 0) return -1;
    int nth = steno_n_tasks(pool);
    size_t per = (size_t)kv->n_order * (sizeof(float) + sizeof(int32_t)) + (qconv + 15) / 16 * 16 +
                 (size_t)ap->head_dim_v * sizeof(float) + 64;
    per = (per + 63) / 64 * 64;
    if (work->cap < per * (size_t)nth) {
        /* grow geometrically: the scratch follows the context length, and the decode step should
         * not allocate on every token */
        size_t want = per * (size_t)nth, cap = work->cap * 2 > want ? work->cap * 2 : want;
        void *p = realloc(work->buf, cap);
        if (!p) return -1;
        work->buf = p;
        work->cap = cap;
    }
    attn_job j = {ap, q, T, q0, kv, out, work->buf, per, qconv, kt, kdot, kt};
    if ((long)T * ap->n_head * kv->n_order < 4096) attn_worker(&j, 0, 1);
    else steno_pool_run(pool, attn_worker, &j, nth);
    return 0;
}
