/* attention_kvquant.c — attention over a quantized KV-cache view (kernels/quant/kvquant.h formats).
 *
 * The cache is read in its packed form: each visible key (value) head vector is decoded into a
 * head_dim-float scratch that stays in L1 (never a float copy of the cache) and used at once by
 * every query head of a task — with GQA the query heads that share a KV head share the decode.
 *   keys    AFFINE: k_j = scale · c + bias per group; s_j = (q · k_j) · scale (llama2c: / scale_div)
 *   softmax: max-subtracted expf with the sum in double, per chunk of positions, chunks merged
 *           with their maxima (below); no f16 rounding of p (that is ggml's f16-cache arithmetic,
 *           which the quantized caches do not reproduce anyway); llama2c numerics only change the
 *           score scaling (d / scale_div)
 *   values  AFFINE: out += p_j · (scale · c + bias);
 *           TQV: out_rot += p_j · s_j · codebook[c], then out = unrotate(out_rot) once per head
 *           (the rotation is linear, so Σ_j p_j R⁻¹ŷ_j = R⁻¹ Σ_j p_j ŷ_j — TurboQuant's deferred
 *           inverse rotation, the seed's decodeValuesRotated + unrotateValues).
 * Rotated keys (kq->rotate): s_j = (Rq)·(Rk_j), the query heads rotated once per work item;
 * rotated affine values are un-rotated once per output head as TurboQuant's. Centered keys
 * (kv->k_center = c): codes hold k_j − c, so s_j = q·dec_j + q·c, q·c computed once per query head
 * (not for the sinks' float rows, which hold raw keys).
 * Work items are (query t, KV head, chunk of positions), each serving the KV head's whole GQA group.
 * An AVX2+FMA build of the same code is chosen at run time when the CPU has it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/attention/attention.h"
#include "kernels/quant/kvquant.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define STENO_HAVE_X86_DISPATCH 1
#endif

static inline float ld_f16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return steno_fp16_to_f32(h);
}

/* Decodes one packed head (see kvquant.h) into x; TQV stays in the rotated domain. Same arithmetic
 * as steno_kvq_decode. */
static inline __attribute__((always_inline)) void decode_head(const steno_kvq_fmt *f, const uint8_t *src, float *x) {
    const int D = f->head_dim, bits = f->bits;
    const uint8_t *codes = src;
    const size_t cbytes = (size_t)D * bits / 8;
    if (f->kind == STENO_KVQ_AFFINE) {
        const int G = f->group, ng = D / G;
        for (int g = 0; g < ng; g++) {
            const float s = ld_f16(src + cbytes + 2 * (size_t)g), b = ld_f16(src + cbytes + 2 * (size_t)(ng + g));
            float *xg = x + (size_t)g * G;
            if (bits == 8) {
                const uint8_t *c = codes + (size_t)g * G;
                for (int j = 0; j < G; j++) xg[j] = s * (float)c[j] + b;
            } else {
                const uint8_t *c = codes + (size_t)g * G / 2;
                for (int j = 0; j < G / 2; j++) {
                    xg[2 * j] = s * (float)(c[j] & 15) + b;
                    xg[2 * j + 1] = s * (float)(c[j] >> 4) + b;
                }
            }
        }
        return;
    }
    const float *cb = steno_lloyd_max_codebook(bits);
    float s;
    memcpy(&s, src + cbytes, 4);
    float tab[16];
    for (int k = 0; k < (1 << bits); k++) tab[k] = s * cb[k];
    if (bits == 4) {
        for (int j = 0; j < D / 2; j++) {
            x[2 * j] = tab[codes[j] & 15];
            x[2 * j + 1] = tab[codes[j] >> 4];
        }
    } else if (bits == 2) {
        for (int j = 0; j < D / 4; j++) {
            const unsigned c = codes[j];
            x[4 * j] = tab[c & 3];
            x[4 * j + 1] = tab[(c >> 2) & 3];
            x[4 * j + 2] = tab[(c >> 4) & 3];
            x[4 * j + 3] = tab[c >> 6];
        }
    } else { /* 3 bits: 8 codes in every 3 bytes of the little-endian stream */
        for (int j = 0; j < D / 8; j++) {
            const uint32_t w = (uint32_t)codes[3 * j] | (uint32_t)codes[3 * j + 1] << 8 | (uint32_t)codes[3 * j + 2] << 16;
            for (int e = 0; e < 8; e++) x[8 * j + e] = tab[(w >> (3 * e)) & 7];
        }
    }
}

/* Positions are processed in chunks of CHUNK entries of the view's temporal order (split-K, as
 * flash-decoding): a chunk yields, per query head, its score maximum m, Σ e^(s−m) and the
 * unnormalized Σ e^(s−m)·v; the chunks are then merged. The chunking depends only on the view, never
 * on the thread count, so results are the same for any number of threads, and a single decoded
 * query still spreads over all threads. */
#define CHUNK 256
#define SUB 32 /* value rows decoded at a time */

typedef struct {
    const steno_attn_params *ap;
    const float *q;
    int T, q0;
    const steno_kv_view *kv;
    uint8_t *scratch;
    size_t per;
    int hpt;       /* query heads per work item: the whole GQA group */
    int nchunk;    /* chunks of the temporal order */
    float *part;   /* [T][n_kv_head][nchunk][hpt][hv + 2]: acc, then m, then l */
} attnq_job;

/* hk, hv: the head dimensions, passed as constants by the dispatchers below for the common sizes
 * (fully unrolled dots, accumulators kept in registers). */
static inline __attribute__((always_inline)) void attnq_body(attnq_job *j, int ith, int nth, const int hk,
                                                             const int hv) {
    const steno_attn_params *ap = j->ap;
    const steno_kv_view *kv = j->kv;
    const steno_kvq_fmt *kf = kv->kq, *vf = kv->vq;
    const int hpt = j->hpt;
    const size_t khead = kv->k_row_bytes / ap->n_kv_head, vhead = kv->v_row_bytes / ap->n_kv_head;
    uint8_t *scr = j->scratch + (size_t)ith * j->per;
    float *scores = (float *)scr;                       /* [hpt][CHUNK] */
    int32_t *slots = (int32_t *)(scores + (size_t)hpt * CHUNK); /* [CHUNK] */
    float *kbuf = (float *)(slots + CHUNK);             /* [hk] */
    float *vdec = kbuf + hk;                            /* [SUB][hv] */
    float *qrot = vdec + (size_t)SUB * hv;              /* [hpt][hk]: rotated queries (kf->rotate) */
    long lo, hi;
    steno_split((long)j->T * ap->n_kv_head * j->nchunk, ith, nth, &lo, &hi);
    for (long task = lo; task < hi; task++) {
        const int c = (int)(task % j->nchunk);
        const int kvh = (int)((task / j->nchunk) % ap->n_kv_head);
        const int t = (int)(task / ((long)j->nchunk * ap->n_kv_head));
        const int h0 = kvh * hpt, qpos = j->q0 + t;
        const float *qt = j->q + (size_t)t * ap->n_head * hk + (size_t)h0 * hk;
        float qc[64]; /* q·c per query head: the centered keys' missing term (0 without centering) */
        for (int a = 0; a < hpt; a++) {
            qc[a] = 0.0f;
            if (!kv->k_center) continue;
            const float *qa = qt + (size_t)a * hk, *ca = kv->k_center + (size_t)kvh * hk;
            float p8[8] = {0};
            for (int e = 0; e < hk; e += 8)
                for (int l = 0; l < 8; l++) p8[l] += qa[e + l] * ca[e + l];
            qc[a] = ((p8[0] + p8[4]) + (p8[1] + p8[5])) + ((p8[2] + p8[6]) + (p8[3] + p8[7]));
        }
        if (kf->rotate) { /* keys are stored rotated: q·k = (Rq)·(Rk) for the orthonormal R */
            memcpy(qrot, qt, (size_t)hpt * hk * sizeof(float));
            for (int a = 0; a < hpt; a++) steno_tq_rotate(qrot + (size_t)a * hk, hk);
            qt = qrot;
        }
        float *part = j->part + (size_t)task * hpt * (hv + 2);
        float maxv[64];
        for (int a = 0; a < hpt; a++) maxv[a] = -INFINITY;
        const int i1 = (c + 1) * CHUNK < kv->n_order ? (c + 1) * CHUNK : kv->n_order;
        int n = 0;
        for (int i = c * CHUNK; i < i1; i++) {
            const int s = kv->order ? kv->order[i] : i;
            if (!steno_kv_visible(kv, kv->pos[s], qpos)) continue;
            const float *kx = kbuf;
            const int sink = kv->pos[s] < kv->n_sink;
            if (sink) kx = kv->sink_k + ((size_t)kv->pos[s] * ap->n_kv_head + kvh) * hk;
            else decode_head(kf, kv->k + (size_t)s * kv->k_row_bytes + (size_t)kvh * khead, kbuf);
            for (int a = 0; a < hpt; a++) {
                const float *qh = qt + (size_t)a * hk;
                /* eight partial sums (a vectorizable order; head_dim is a multiple of 32) */
                float p8[8] = {0};
                for (int e = 0; e < hk; e += 8)
                    for (int l = 0; l < 8; l++) p8[l] += qh[e + l] * kx[e + l];
                const float d = ((p8[0] + p8[4]) + (p8[1] + p8[5])) + ((p8[2] + p8[6]) + (p8[3] + p8[7])) +
                                (sink ? 0.0f : qc[a]);
                const float sc = ap->llama2c ? d / ap->scale_div : d * ap->scale;
                scores[(size_t)a * CHUNK + n] = sc;
                if (sc > maxv[a]) maxv[a] = sc;
            }
            slots[n++] = s;
        }
        for (int a = 0; a < hpt; a++) {
            float *sc = scores + (size_t)a * CHUNK;
            double sum = 0.0;
            for (int i = 0; i < n; i++) {
                sc[i] = expf(sc[i] - maxv[a]);
                sum += (double)sc[i];
            }
            memset(part + (size_t)a * (hv + 2), 0, (size_t)hv * sizeof(float));
            part[(size_t)a * (hv + 2) + hv] = maxv[a];
            part[(size_t)a * (hv + 2) + hv + 1] = (float)sum;
        }
        /* values: decode SUB rows at a time into vdec (L1/L2), then accumulate each head's 32-float
         * column blocks over those rows in registers */
        for (int i0 = 0; i0 < n; i0 += SUB) {
            const int m = n - i0 < SUB ? n - i0 : SUB;
            for (int i = 0; i < m; i++) {
                const int ps = kv->pos[slots[i0 + i]];
                if (ps < kv->n_sink)
                    memcpy(vdec + (size_t)i * hv, kv->sink_v + ((size_t)ps * ap->n_kv_head + kvh) * hv,
                           (size_t)hv * sizeof(float));
                else
                    decode_head(vf, kv->v + (size_t)slots[i0 + i] * kv->v_row_bytes + (size_t)kvh * vhead,
                                vdec + (size_t)i * hv);
            }
            for (int a = 0; a < hpt; a++) {
                const float *pa = scores + (size_t)a * CHUNK + i0;
                float *ac = part + (size_t)a * (hv + 2);
                for (int e0 = 0; e0 < hv; e0 += 32) {
                    float acc[32];
                    for (int l = 0; l < 32; l++) acc[l] = ac[e0 + l];
                    for (int i = 0; i < m; i++) {
                        const float p = pa[i], *x = vdec + (size_t)i * hv + e0;
                        for (int l = 0; l < 32; l++) acc[l] += p * x[l];
                    }
                    for (int l = 0; l < 32; l++) ac[e0 + l] = acc[l];
                }
            }
        }
    }
}

#define ATTNQ_DISPATCH(j, ith, nth)                                                                      \
    do {                                                                                                 \
        const int hk_ = (j)->ap->head_dim_k, hv_ = (j)->ap->head_dim_v;                                  \
        if (hk_ == 64 && hv_ == 64) attnq_body((j), (ith), (nth), 64, 64);                               \
        else if (hk_ == 128 && hv_ == 128) attnq_body((j), (ith), (nth), 128, 128);                      \
        else if (hk_ == 256 && hv_ == 256) attnq_body((j), (ith), (nth), 256, 256);                      \
        else attnq_body((j), (ith), (nth), hk_, hv_);                                                    \
    } while (0)

static void attnq_worker(void *arg, int ith, int nth) { ATTNQ_DISPATCH((attnq_job *)arg, ith, nth); }

#ifdef STENO_HAVE_X86_DISPATCH
__attribute__((target("avx2,fma"))) static void attnq_worker_avx2(void *arg, int ith, int nth) {
    ATTNQ_DISPATCH((attnq_job *)arg, ith, nth);
}
#endif

int steno_attention_quant(steno_pool *pool, steno_work *work, const steno_attn_params *ap, const float *q, int T,
                          int q0, const steno_kv_view *kv, float *out) {
    if (!kv->kq || !kv->vq || kv->kq->head_dim != ap->head_dim_k || kv->vq->head_dim != ap->head_dim_v) return -1;
    const int hpt = ap->n_head / ap->n_kv_head, hv = ap->head_dim_v;
    if (hpt > 64) return -1;
    const int nth = steno_n_tasks(pool);
    const int nchunk = kv->n_order > 0 ? (kv->n_order + CHUNK - 1) / CHUNK : 1;
    size_t per = (size_t)CHUNK * ((size_t)hpt * sizeof(float) + sizeof(int32_t)) +
                 ((size_t)ap->head_dim_k * (1 + (size_t)hpt) + (size_t)SUB * hv) * sizeof(float) + 64;
    per = (per + 63) / 64 * 64;
    const size_t ntask = (size_t)T * ap->n_kv_head * nchunk;
    const size_t part_bytes = ntask * hpt * (hv + 2) * sizeof(float);
    const size_t want = per * (size_t)nth + part_bytes + 64;
    if (work->cap < want) {
        size_t cap = work->cap * 2 > want ? work->cap * 2 : want;
        void *p = realloc(work->buf, cap);
        if (!p) return -1;
        work->buf = p;
        work->cap = cap;
    }
    float *part = (float *)((uint8_t *)work->buf + per * (size_t)nth);
    attnq_job j = {ap, q, T, q0, kv, work->buf, per, hpt, nchunk, part};
    void (*fn)(void *, int, int) = attnq_worker;
#ifdef STENO_HAVE_X86_DISPATCH
    static int avx2 = -1;
    if (avx2 < 0) avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !getenv("STENO_NO_AVX2");
    if (avx2) fn = attnq_worker_avx2;
#endif
    if ((long)T * ap->n_head * kv->n_order < 4096) fn(&j, 0, 1);
    else steno_pool_run(pool, fn, &j, nth);
    /* merge the chunks of every (query, head): out = Σ_c e^(m_c−M)·acc_c / Σ_c e^(m_c−M)·l_c */
    for (int t = 0; t < T; t++)
        for (int kvh = 0; kvh < ap->n_kv_head; kvh++)
            for (int a = 0; a < hpt; a++) {
                float *oh = out + (size_t)t * ap->n_head * hv + (size_t)(kvh * hpt + a) * hv;
                const float *p0 = part + ((size_t)(t * ap->n_kv_head + kvh) * nchunk) * hpt * (hv + 2);
                float M = -INFINITY;
                for (int c = 0; c < nchunk; c++) {
                    const float *pc = p0 + ((size_t)c * hpt + a) * (hv + 2);
                    if (pc[hv + 1] > 0.0f && pc[hv] > M) M = pc[hv];
                }
                memset(oh, 0, (size_t)hv * sizeof(float));
                if (M == -INFINITY) continue; /* no visible key */
                double L = 0.0;
                for (int c = 0; c < nchunk; c++) {
                    const float *pc = p0 + ((size_t)c * hpt + a) * (hv + 2);
                    if (!(pc[hv + 1] > 0.0f)) continue;
                    const float w = expf(pc[hv] - M);
                    L += (double)w * pc[hv + 1];
                    for (int e = 0; e < hv; e++) oh[e] += w * pc[e];
                }
                const float inv = (float)(1.0 / L);
                for (int e = 0; e < hv; e++) oh[e] *= inv;
                if (kv->vq->kind == STENO_KVQ_TQV || kv->vq->rotate) steno_tq_unrotate(oh, hv);
            }
    return 0;
}
