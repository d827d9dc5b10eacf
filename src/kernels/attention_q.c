/* attention_q.c — attention over a quantized KV-cache view (kernels/kvquant.h formats).
 *
 * The cache is read in its packed form: each visible key (value) head vector is decoded into a
 * head_dim-float scratch that stays in L1 (never a float copy of the cache) and used at once by
 * every query head of a task — with GQA the query heads that share a KV head share the decode.
 *   keys    AFFINE: k_j = scale · c + bias per group; s_j = (q · k_j) · scale (llama2c: / scale_div)
 *   softmax as attention.c's generic path: max-subtracted expf, the sum in double (float for
 *           llama2c numerics), p = e · (1/sum) — no f16 rounding of p (that is ggml's f16-cache
 *           arithmetic, which the quantized caches do not reproduce anyway)
 *   values  AFFINE: out += p_j · (scale · c + bias);
 *           TQV: out_rot += p_j · s_j · codebook[c], then out = unrotate(out_rot) once per head
 *           (the rotation is linear, so Σ_j p_j R⁻¹ŷ_j = R⁻¹ Σ_j p_j ŷ_j — TurboQuant's deferred
 *           inverse rotation, the seed's decodeValuesRotated + unrotateValues).
 * Work items are (query t, KV head, subset of that KV head's query heads); the subset is the whole
 * group unless that leaves too few items for the threads. Every output element is computed by one
 * thread in a fixed order, so results do not depend on the thread count.
 * An AVX2+FMA build of the same code is chosen at run time when the CPU has it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/attention.h"
#include "kernels/kvquant.h"

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

typedef struct {
    const steno_attn_params *ap;
    const float *q;
    int T, q0;
    const steno_kv_view *kv;
    float *out;
    uint8_t *scratch;
    size_t per;
    int hpt; /* query heads per work item (divides the GQA group) */
} attnq_job;

static inline __attribute__((always_inline)) void attnq_body(attnq_job *j, int ith, int nth) {
    const steno_attn_params *ap = j->ap;
    const steno_kv_view *kv = j->kv;
    const steno_kvq_fmt *kf = kv->kq, *vf = kv->vq;
    const int hk = ap->head_dim_k, hv = ap->head_dim_v, group = ap->n_head / ap->n_kv_head, hpt = j->hpt;
    const int subs = group / hpt;
    const size_t khead = kv->k_row_bytes / ap->n_kv_head, vhead = kv->v_row_bytes / ap->n_kv_head;
    uint8_t *scr = j->scratch + (size_t)ith * j->per;
    float *scores = (float *)scr;                           /* [hpt][n_order] */
    int32_t *slots = (int32_t *)(scores + (size_t)hpt * kv->n_order); /* [n_order] */
    float *kbuf = (float *)(slots + kv->n_order);           /* [hk] */
    float *vbuf = kbuf + hk;                                /* [hv] */
    float *acc = vbuf + hv;                                 /* [hpt][hv] */
    float maxv[64];
    long lo, hi;
    steno_split((long)j->T * ap->n_kv_head * subs, ith, nth, &lo, &hi);
    for (long task = lo; task < hi; task++) {
        const int t = (int)(task / ((long)ap->n_kv_head * subs));
        const int rem = (int)(task % ((long)ap->n_kv_head * subs));
        const int kvh = rem / subs, h0 = kvh * group + (rem % subs) * hpt;
        const int qpos = j->q0 + t;
        const float *qt = j->q + (size_t)t * ap->n_head * hk;
        for (int a = 0; a < hpt; a++) maxv[a] = -INFINITY;
        int n = 0;
        for (int i = 0; i < kv->n_order; i++) {
            const int s = kv->order ? kv->order[i] : i;
            if (!steno_kv_visible(kv, kv->pos[s], qpos)) continue;
            decode_head(kf, kv->k + (size_t)s * kv->k_row_bytes + (size_t)kvh * khead, kbuf);
            for (int a = 0; a < hpt; a++) {
                const float *qh = qt + (size_t)(h0 + a) * hk;
                /* eight partial sums (a vectorizable order; head_dim is a multiple of 32) */
                float part[8] = {0};
                for (int e = 0; e < hk; e += 8)
                    for (int l = 0; l < 8; l++) part[l] += qh[e + l] * kbuf[e + l];
                const float d = ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
                const float sc = ap->llama2c ? d / ap->scale_div : d * ap->scale;
                scores[(size_t)a * kv->n_order + n] = sc;
                if (sc > maxv[a]) maxv[a] = sc;
            }
            slots[n++] = s;
        }
        for (int a = 0; a < hpt; a++) {
            float *sc = scores + (size_t)a * kv->n_order;
            if (ap->llama2c) {
                float sum = 0.0f;
                for (int i = 0; i < n; i++) {
                    sc[i] = expf(sc[i] - maxv[a]);
                    sum += sc[i];
                }
                for (int i = 0; i < n; i++) sc[i] /= sum;
            } else {
                double sum = 0.0;
                for (int i = 0; i < n; i++) {
                    sc[i] = expf(sc[i] - maxv[a]);
                    sum += (double)sc[i];
                }
                const float inv = (float)(1.0 / sum);
                for (int i = 0; i < n; i++) sc[i] *= inv;
            }
        }
        memset(acc, 0, (size_t)hpt * hv * sizeof(float));
        for (int i = 0; i < n; i++) {
            decode_head(vf, kv->v + (size_t)slots[i] * kv->v_row_bytes + (size_t)kvh * vhead, vbuf);
            for (int a = 0; a < hpt; a++) {
                const float p = scores[(size_t)a * kv->n_order + i];
                float *ac = acc + (size_t)a * hv;
                for (int e = 0; e < hv; e++) ac[e] += p * vbuf[e];
            }
        }
        for (int a = 0; a < hpt; a++) {
            float *ac = acc + (size_t)a * hv;
            if (vf->kind == STENO_KVQ_TQV && n > 0) steno_tq_unrotate(ac, hv);
            memcpy(j->out + (size_t)t * ap->n_head * hv + (size_t)(h0 + a) * hv, ac, (size_t)hv * sizeof(float));
        }
    }
}

static void attnq_worker(void *arg, int ith, int nth) { attnq_body(arg, ith, nth); }

#ifdef STENO_HAVE_X86_DISPATCH
__attribute__((target("avx2,fma"))) static void attnq_worker_avx2(void *arg, int ith, int nth) {
    attnq_body(arg, ith, nth);
}
#endif

int steno_attention_quant(steno_pool *pool, steno_work *work, const steno_attn_params *ap, const float *q, int T,
                          int q0, const steno_kv_view *kv, float *out) {
    if (!kv->kq || !kv->vq || kv->kq->head_dim != ap->head_dim_k || kv->vq->head_dim != ap->head_dim_v) return -1;
    const int group = ap->n_head / ap->n_kv_head;
    const int nth = steno_n_tasks(pool);
    /* heads per item: the whole GQA group (one decode per key for all of them) unless that leaves
     * fewer than 3 items per thread */
    int hpt = 1;
    for (int d = group; d >= 1; d--)
        if (group % d == 0 && d <= 64 && (long)T * ap->n_head / d >= 3L * nth) {
            hpt = d;
            break;
        }
    size_t per = (size_t)kv->n_order * ((size_t)hpt * sizeof(float) + sizeof(int32_t)) +
                 ((size_t)ap->head_dim_k + ap->head_dim_v + (size_t)hpt * ap->head_dim_v) * sizeof(float) + 64;
    per = (per + 63) / 64 * 64;
    if (work->cap < per * (size_t)nth) {
        size_t want = per * (size_t)nth, cap = work->cap * 2 > want ? work->cap * 2 : want;
        void *p = realloc(work->buf, cap);
        if (!p) return -1;
        work->buf = p;
        work->cap = cap;
    }
    attnq_job j = {ap, q, T, q0, kv, out, work->buf, per, hpt};
    void (*fn)(void *, int, int) = attnq_worker;
#ifdef STENO_HAVE_X86_DISPATCH
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !getenv("STENO_NO_AVX2"))
        fn = attnq_worker_avx2;
#endif
    if ((long)T * ap->n_head * kv->n_order < 4096) fn(&j, 0, 1);
    else steno_pool_run(pool, fn, &j, nth);
    return 0;
}
