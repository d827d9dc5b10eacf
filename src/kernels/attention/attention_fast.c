/* attention_fast.c — the LLM fast path's attention (attention.h
 * steno_attention_fast): float32 arithmetic over an f16 or f32 KV view, split
 * into chunks of positions so that a single decode query keeps every thread
 * busy at long contexts.
 *
 * Chunked softmax (flash-decoding; Dao et al., "Flash-Decoding for long-context
 * inference", 2023, and the online softmax of Milakov & Gimelshein, 2018): the
 * keys of a query are cut at absolute positions into chunks of FA_CHUNK; each
 * chunk gives its maximum score m_c, Σ e^(s − m_c) = l_c and Σ e^(s − m_c)·v =
 * a_c; the chunks are then combined in increasing position order, M = max m_c,
 * out = Σ a_c·e^(m_c − M) / Σ l_c·e^(m_c − M). Why the result of a query does
 * not depend on the thread count, on the other queries evaluated with it
 * (prompt blocks, batch rows) or on stale ring slots: chunk boundaries are
 * absolute positions; within a chunk the scores sit in a dense array indexed by
 * position, invisible ones at −inf whose exponential is exactly 0, so the sums
 * run over the same lanes in the same order whatever else the view holds; each
 * (query, chunk) is computed by one thread, and the combination runs in a fixed
 * order. A GQA group's queries (and, in prompt evaluation, a block of query
 * rows) share each key and value row as it is converted, so the f16 cache is
 * read once per KV head and step. */
#include "kernels/attention/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "kernels/quant/quant.h"

#define FA_CHUNK 128 /* positions per chunk (a multiple of 8) */
#define FA_TB 4      /* query rows per block in prompt evaluation */
#define FA_PF 16     /* key rows prefetched ahead */

#if defined(__x86_64__) && defined(__GNUC__)
#include "kernels/simd_avx2.h"
#include "kernels/simd_avx512.h"

typedef struct {
    const steno_attn_params *ap;
    const float *q;
    int T, q0;
    const steno_kv_view *kv;
    const int32_t *ent_slot, *ent_pos; /* entries visible to some query, by increasing position */
    const int32_t *chunk_lo;           /* [nc + 1]: the entries of chunk ci are
                                          [chunk_lo[ci], chunk_lo[ci + 1]) */
    int nc, tb, nqb;
    long n_items; /* nqb × n_kv_head × nc */
    float *part;  /* [T][n_head][nc][2 + hv]: m, l, a */
    float *out;   /* [T][n_head][hv] */
    uint8_t *scratch;
    size_t per;
    int f16;
    int z; /* AVX-512 dots and values (fa_dots_z, fa_values_z): the same bits on 16 lanes */
} fa_job;

AVX2 static inline __m256 fa_load8(const void *row, int d, int f16) {
    if (f16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + d)));
    return _mm256_loadu_ps((const float *)row + d);
}

/* scores of nq (<= 4) queries qs [nq][hk] against one key row: two accumulators
 * per query (even and odd 8-value steps), added; v[r] = that 8-lane vector, whose
 * hsum8 is the score (fa_scores reduces 8 keys' vectors at once with hsum8x8, the
 * same order per vector) */
AVX2 __attribute__((always_inline)) static inline void fa_dots(const void *krow, int f16, const float *qs, int hk,
                                                               int nq, __m256 *v) {
    __m256 a[4][2];
    for (int r = 0; r < 4; r++)
        a[r][0] = a[r][1] = _mm256_setzero_ps();
    int d = 0;
    for (; d + 16 <= hk; d += 16) {
        const __m256 k0 = fa_load8(krow, d, f16), k1 = fa_load8(krow, d + 8, f16);
        for (int r = 0; r < nq; r++) {
            a[r][0] = _mm256_fmadd_ps(k0, _mm256_loadu_ps(qs + (size_t)r * hk + d), a[r][0]);
            a[r][1] = _mm256_fmadd_ps(k1, _mm256_loadu_ps(qs + (size_t)r * hk + d + 8), a[r][1]);
        }
    }
    if (d < hk) { /* hk % 16 == 8 */
        const __m256 k0 = fa_load8(krow, d, f16);
        for (int r = 0; r < nq; r++)
            a[r][0] = _mm256_fmadd_ps(k0, _mm256_loadu_ps(qs + (size_t)r * hk + d), a[r][0]);
    }
    for (int r = 0; r < nq; r++)
        v[r] = _mm256_add_ps(a[r][0], a[r][1]);
}

#define Z512 __attribute__((target(AVX512_TARGET)))
#define FA_QZ 8 /* queries per pass over a chunk's keys with AVX-512 (32 registers); 4 with AVX2 */

/* fa_dots on 16 lanes: lanes 0–7 of a[r] are fa_dots' a[r][0] (values d..d+7 of each 16), lanes
 * 8–15 its a[r][1] (d+8..d+15), the same FMAs in the same order; v[r] = low + high half */
AVX512I void fa_dots_z(const void *krow, int f16, const float *qs, int hk, int nq, __m256 *v) {
    __m512 a[FA_QZ];
    for (int r = 0; r < FA_QZ; r++)
        a[r] = _mm512_setzero_ps();
    int d = 0;
    for (; d + 16 <= hk; d += 16) {
        const __m512 k = f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)krow + d)))
                             : _mm512_loadu_ps((const float *)krow + d);
        for (int r = 0; r < nq; r++)
            a[r] = _mm512_fmadd_ps(k, _mm512_loadu_ps(qs + (size_t)r * hk + d), a[r]);
    }
    for (int r = 0; r < nq; r++) {
        __m256 lo = _mm512_castps512_ps256(a[r]);
        if (d < hk) /* hk % 16 == 8: fa_dots adds these to a[r][0] */
            lo = _mm256_fmadd_ps(fa_load8(krow, d, f16), _mm256_loadu_ps(qs + (size_t)r * hk + d), lo);
        v[r] = _mm256_add_ps(lo, _mm512_extractf32x8_ps(a[r], 1));
    }
}

/* a[r][0..hv) = Σ_e w[r][pos_e − base] · v_e over the chunk's entries, for nq
 * (<= 4) queries, 16 values at a time; entries in increasing position order */
AVX2 __attribute__((always_inline)) static inline void fa_values(const fa_job *j, int kvh, int lo, int hi, int base,
                                                                 const float *w, int nq, float *const *a) {
    const steno_kv_view *kv = j->kv;
    const int hv = j->ap->head_dim_v;
    const size_t vhead = kv->v_row_bytes / j->ap->n_kv_head;
    for (int d = 0; d < hv; d += 16) {
        __m256 acc[4][2];
        for (int r = 0; r < 4; r++)
            acc[r][0] = acc[r][1] = _mm256_setzero_ps();
        for (int e = lo; e < hi; e++) {
            const uint8_t *vrow = kv->v + (size_t)j->ent_slot[e] * kv->v_row_bytes + (size_t)kvh * vhead;
            const __m256 v0 = fa_load8(vrow, d, j->f16), v1 = fa_load8(vrow, d + 8, j->f16);
            const int o = j->ent_pos[e] - base;
            for (int r = 0; r < nq; r++) {
                const __m256 p = _mm256_broadcast_ss(w + (size_t)r * FA_CHUNK + o);
                acc[r][0] = _mm256_fmadd_ps(p, v0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(p, v1, acc[r][1]);
            }
        }
        for (int r = 0; r < nq; r++) {
            _mm256_storeu_ps(a[r] + d, acc[r][0]);
            _mm256_storeu_ps(a[r] + d + 8, acc[r][1]);
        }
    }
}

/* fa_values on 16 lanes: acc[r] lanes 0–7 / 8–15 are fa_values' acc[r][0] / acc[r][1] */
AVX512I void fa_values_z(const fa_job *j, int kvh, int lo, int hi, int base, const float *w, int nq,
                         float *const *a) {
    const steno_kv_view *kv = j->kv;
    const int hv = j->ap->head_dim_v;
    const size_t vhead = kv->v_row_bytes / j->ap->n_kv_head;
    int d = 0;
    /* 32 values at a time where they fit: each weight broadcast serves two accumulators per query
     * (the same sums lane for lane), and twice the chains hide the FMA latency */
    for (; d + 32 <= hv; d += 32) {
        __m512 acc[FA_QZ], acc2[FA_QZ];
        for (int r = 0; r < FA_QZ; r++)
            acc[r] = acc2[r] = _mm512_setzero_ps();
        for (int e = lo; e < hi; e++) {
            const uint8_t *vrow = kv->v + (size_t)j->ent_slot[e] * kv->v_row_bytes + (size_t)kvh * vhead;
            const __m512 v = j->f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)vrow + d)))
                                    : _mm512_loadu_ps((const float *)vrow + d);
            const __m512 v2 = j->f16
                                  ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)vrow + d + 16)))
                                  : _mm512_loadu_ps((const float *)vrow + d + 16);
            const int o = j->ent_pos[e] - base;
            for (int r = 0; r < nq; r++) {
                const __m512 p = _mm512_set1_ps(w[(size_t)r * FA_CHUNK + o]);
                acc[r] = _mm512_fmadd_ps(p, v, acc[r]);
                acc2[r] = _mm512_fmadd_ps(p, v2, acc2[r]);
            }
        }
        for (int r = 0; r < nq; r++) {
            _mm512_storeu_ps(a[r] + d, acc[r]);
            _mm512_storeu_ps(a[r] + d + 16, acc2[r]);
        }
    }
    for (; d < hv; d += 16) {
        __m512 acc[FA_QZ];
        for (int r = 0; r < FA_QZ; r++)
            acc[r] = _mm512_setzero_ps();
        for (int e = lo; e < hi; e++) {
            const uint8_t *vrow = kv->v + (size_t)j->ent_slot[e] * kv->v_row_bytes + (size_t)kvh * vhead;
            const __m512 v = j->f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)vrow + d)))
                                    : _mm512_loadu_ps((const float *)vrow + d);
            const int o = j->ent_pos[e] - base;
            for (int r = 0; r < nq; r++)
                acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(w[(size_t)r * FA_CHUNK + o]), v, acc[r]);
        }
        for (int r = 0; r < nq; r++)
            _mm512_storeu_ps(a[r] + d, acc[r]);
    }
}

/* the scores of nq (<= 4) queries qs [nq][hk] against the entries [lo, hi) of a
 * chunk, written at w[r][pos − base] where entry e is visible to query row
 * rt[r] (bit rt[r] of vis[e − lo]) */
#define FA_SCORES_DEF(NAME, TARGET, DOTS)                                                                     \
    TARGET __attribute__((always_inline)) static inline void NAME(const fa_job *j, int kvh, int lo, int hi, int base, \
                                                              const uint8_t *vis, const int *rt, const float *qs, int nq, \
                                                              float *w) { \
    const steno_kv_view *kv = j->kv; \
    const int hk = j->ap->head_dim_k; \
    const size_t khead = kv->k_row_bytes / j->ap->n_kv_head; \
    const size_t vhead = kv->v_row_bytes / j->ap->n_kv_head; \
    /* keys in runs of 8: each key's per-query vectors are kept and reduced together (hsum8x8), \
     * instead of one hsum8 per key and query */ \
    __m256 v[FA_QZ][8]; \
    int run_o[8]; \
    unsigned run_vm[8]; \
    int n = 0; \
    for (int e = lo; e < hi; e++) { \
        /* the rows come from memory (the cache is larger than the caches at long \
         * contexts): ask for the key row FA_PF entries ahead, and for this entry's \
         * value row, which fa_values reads next */ \
        if (e + FA_PF < hi) { \
            const char *kp = \
                (const char *)kv->k + (size_t)j->ent_slot[e + FA_PF] * kv->k_row_bytes + (size_t)kvh * khead; \
            for (size_t b = 0; b < khead; b += 64) \
                _mm_prefetch(kp + b, _MM_HINT_T0); \
        } \
        const char *vp = (const char *)kv->v + (size_t)j->ent_slot[e] * kv->v_row_bytes + (size_t)kvh * vhead; \
        for (size_t b = 0; b < vhead; b += 64) \
            _mm_prefetch(vp + b, _MM_HINT_T0); \
        const unsigned vm = vis[e - lo]; \
        if (vm) { \
            const uint8_t *krow = kv->k + (size_t)j->ent_slot[e] * kv->k_row_bytes + (size_t)kvh * khead; \
            __m256 kvv[FA_QZ]; \
            DOTS(krow, j->f16, qs, hk, nq, kvv); \
            for (int r = 0; r < nq; r++) \
                v[r][n] = kvv[r]; \
            run_o[n] = j->ent_pos[e] - base; \
            run_vm[n++] = vm; \
        } \
        if (n == 8 || (e == hi - 1 && n > 0)) { \
            for (int k = n; k < 8; k++) \
                for (int r = 0; r < nq; r++) \
                    v[r][k] = _mm256_setzero_ps(); \
            for (int r = 0; r < nq; r++) { \
                float s[8]; \
                _mm256_storeu_ps(s, hsum8x8(v[r])); \
                for (int k = 0; k < n; k++) \
                    if (run_vm[k] >> rt[r] & 1u) \
                        w[(size_t)r * FA_CHUNK + run_o[k]] = s[k]; \
            } \
            n = 0; \
        } \
    } \
}

FA_SCORES_DEF(fa_scores, AVX2, fa_dots)
FA_SCORES_DEF(fa_scores_z, Z512, fa_dots_z)

/* fa_scores and fa_values with nq a constant, so their accumulators stay in registers: case k
 * calls the inlined body with the literal k; the last case takes every larger nq */
#define FA_NQ4(FN, ...) \
    switch (nq) { \
    case 1: FN(__VA_ARGS__, 1); break; \
    case 2: FN(__VA_ARGS__, 2); break; \
    case 3: FN(__VA_ARGS__, 3); break; \
    default: FN(__VA_ARGS__, 4); break; \
    }
#define FA_NQ8(FN, ...) \
    switch (nq) { \
    case 1: FN(__VA_ARGS__, 1); break; \
    case 2: FN(__VA_ARGS__, 2); break; \
    case 3: FN(__VA_ARGS__, 3); break; \
    case 4: FN(__VA_ARGS__, 4); break; \
    case 5: FN(__VA_ARGS__, 5); break; \
    case 6: FN(__VA_ARGS__, 6); break; \
    case 7: FN(__VA_ARGS__, 7); break; \
    default: FN(__VA_ARGS__, 8); break; \
    }
/* the kernels take nq before their output: these put it there */
#define FA_SCORES_K(j, kvh, lo, hi, base, vis, rt, qs, w, K) fa_scores(j, kvh, lo, hi, base, vis, rt, qs, K, w)
#define FA_SCORES_ZK(j, kvh, lo, hi, base, vis, rt, qs, w, K) fa_scores_z(j, kvh, lo, hi, base, vis, rt, qs, K, w)
#define FA_VALUES_K(j, kvh, lo, hi, base, w, a, K) fa_values(j, kvh, lo, hi, base, w, K, a)
#define FA_VALUES_ZK(j, kvh, lo, hi, base, w, a, K) fa_values_z(j, kvh, lo, hi, base, w, K, a)

AVX2 static void fa_scores_n(const fa_job *j, int kvh, int lo, int hi, int base, const uint8_t *vis, const int *rt,
                             const float *qs, int nq, float *w) {
    FA_NQ4(FA_SCORES_K, j, kvh, lo, hi, base, vis, rt, qs, w)
}

AVX2 static void fa_values_n(const fa_job *j, int kvh, int lo, int hi, int base, const float *w, int nq,
                             float *const *a) {
    FA_NQ4(FA_VALUES_K, j, kvh, lo, hi, base, w, a)
}

Z512 static void fa_scores_nz(const fa_job *j, int kvh, int lo, int hi, int base, const uint8_t *vis, const int *rt,
                              const float *qs, int nq, float *w) {
    FA_NQ8(FA_SCORES_ZK, j, kvh, lo, hi, base, vis, rt, qs, w)
}

Z512 static void fa_values_nz(const fa_job *j, int kvh, int lo, int hi, int base, const float *w, int nq,
                              float *const *a) {
    FA_NQ8(FA_VALUES_ZK, j, kvh, lo, hi, base, w, a)
}

/* one work item: query rows [t0, t1) × the group of KV head kvh × chunk ci */
AVX2 static void fa_item(const fa_job *j, long item, uint8_t *scr) {
    const steno_attn_params *ap = j->ap;
    const steno_kv_view *kv = j->kv;
    const int hk = ap->head_dim_k, hv = ap->head_dim_v, G = ap->n_head / ap->n_kv_head;
    const int ci = (int)(item % j->nc), kvh = (int)(item / j->nc % ap->n_kv_head),
              qb = (int)(item / j->nc / ap->n_kv_head);
    const int t0 = qb * j->tb, t1 = t0 + j->tb < j->T ? t0 + j->tb : j->T, nq = (t1 - t0) * G;
    const int lo = j->chunk_lo[ci], hi = j->chunk_lo[ci + 1], base = j->ent_pos[lo] / FA_CHUNK * FA_CHUNK;
    float *qs = (float *)scr;                              /* [nq][hk], query r = (t − t0)·G + g */
    float *w = qs + (size_t)j->tb * G * hk;                /* [nq][FA_CHUNK] */
    uint8_t *vis = (uint8_t *)(w + (size_t)nq * FA_CHUNK); /* [FA_CHUNK]: bit t − t0 = visible to row t */
    int rt[FA_TB * 64];                                    /* query r's row, t − t0 */
    const unsigned full = (1u << (t1 - t0)) - 1u;
    unsigned any = 0, every = full;
    for (int e = lo; e < hi; e++) {
        const int p = j->ent_pos[e];
        unsigned vm = 0;
        if (kv->window <= 0) { /* causal only: rows t >= p − q0 see it (steno_kv_visible) */
            const int first = p - j->q0 - t0;
            vm = p < 0 || first >= t1 - t0 ? 0u : first <= 0 ? full : full & ~((1u << first) - 1u);
        } else {
            for (int t = t0; t < t1; t++)
                vm |= (unsigned)steno_kv_visible(kv, p, j->q0 + t) << (t - t0);
        }
        vis[e - lo] = (uint8_t)vm;
        any |= vm;
        every &= vm;
    }
    if (!any) { /* a chunk after the block's queries (causal prompt) or before their window: the
                   empty partial that fa_combine skips, without the passes over its keys */
        for (int r = 0; r < nq; r++) {
            float *pr = j->part + (((size_t)(t0 + r / G) * ap->n_head + kvh * G + r % G) * j->nc + ci) * (size_t)(2 + hv);
            pr[0] = -INFINITY;
            pr[1] = 0.0f;
        }
        return;
    }
    for (int t = t0; t < t1; t++)
        for (int g = 0; g < G; g++) {
            const float *src = j->q + (size_t)t * ap->n_head * hk + (size_t)(kvh * G + g) * hk;
            float *dst = qs + (size_t)((t - t0) * G + g) * hk;
            for (int d = 0; d < hk; d++)
                dst[d] = src[d] * ap->scale;
            rt[(t - t0) * G + g] = t - t0;
        }
    /* the scores left at −inf are the slots no visible entry fills: when the chunk's positions are
     * consecutive and all visible to every row, only the span's ends outside them */
    const int p_lo = j->ent_pos[lo] - base, p_hi = j->ent_pos[hi - 1] - base;
    const int dense = every == full && p_hi - p_lo == hi - 1 - lo;
    for (int r = 0; r < nq; r++) {
        float *wr = w + (size_t)r * FA_CHUNK;
        if (dense) {
            for (int p = p_lo & ~7; p < p_lo; p++)
                wr[p] = -INFINITY;
            for (int p = p_hi + 1; p < ((p_hi | 7) + 1); p++)
                wr[p] = -INFINITY;
        } else {
            for (int p = 0; p < FA_CHUNK; p++)
                wr[p] = -INFINITY;
        }
    }
    const int qp = j->z ? FA_QZ : 4; /* queries per pass over the keys: each query's own operations either way */
    for (int r0 = 0; r0 < nq; r0 += qp)
        (j->z ? fa_scores_nz : fa_scores_n)(j, kvh, lo, hi, base, vis, rt + r0, qs + (size_t)r0 * hk,
                                            nq - r0 < qp ? nq - r0 : qp, w + (size_t)r0 * FA_CHUNK);
    /* per query: m, then e^(s − m) in place and l, over the 8-aligned span that
     * holds entries */
    const int s0 = (j->ent_pos[lo] - base) & ~7, s1 = ((j->ent_pos[hi - 1] - base) | 7) + 1;
    float *outp[FA_QZ];
    for (int r = 0; r < nq; r++) {
        float *wr = w + (size_t)r * FA_CHUNK;
        const int t = t0 + r / G, h = kvh * G + r % G;
        float *pr = j->part + (((size_t)t * ap->n_head + h) * j->nc + ci) * (size_t)(2 + hv);
        __m256 vm = _mm256_set1_ps(-INFINITY);
        for (int p = s0; p < s1; p += 8)
            vm = _mm256_max_ps(vm, _mm256_loadu_ps(wr + p));
        const float m = hmax8(vm);
        pr[0] = m;
        if (m == -INFINITY) {
            pr[1] = 0.0f;
            for (int p = s0; p < s1; p++)
                wr[p] = 0.0f;
            continue;
        }
        vm = _mm256_set1_ps(m);
        __m256 vl = _mm256_setzero_ps();
        for (int p = s0; p < s1; p += 8) {
            const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(wr + p), vm));
            _mm256_storeu_ps(wr + p, e);
            vl = _mm256_add_ps(vl, e);
        }
        pr[1] = hsum8(vl);
    }
    for (int r0 = 0; r0 < nq; r0 += qp) {
        const int n = nq - r0 < qp ? nq - r0 : qp;
        for (int r = 0; r < n; r++) {
            const int t = t0 + (r0 + r) / G, h = kvh * G + (r0 + r) % G;
            outp[r] = j->part + (((size_t)t * ap->n_head + h) * j->nc + ci) * (size_t)(2 + hv) + 2;
        }
        (j->z ? fa_values_nz : fa_values_n)(j, kvh, lo, hi, base, w + (size_t)r0 * FA_CHUNK, n, outp);
    }
}

/* items dealt round-robin: in a causal prompt the later query blocks have more visible chunks, so
 * contiguous ranges would leave the last task with most of the work */
static void fa_worker(void *arg, int ith, int nth) {
    const fa_job *j = arg;
    for (long i = ith; i < j->n_items; i += nth)
        fa_item(j, i, j->scratch + (size_t)ith * j->per);
}

/* the chunks of each (t, h) combined in increasing position order */
static void fa_combine(void *arg, int ith, int nth) {
    const fa_job *j = arg;
    const steno_attn_params *ap = j->ap;
    const int hv = ap->head_dim_v;
    long lo, hi;
    steno_split((long)j->T * ap->n_head, ith, nth, &lo, &hi);
    for (long th = lo; th < hi; th++) {
        const float *pr = j->part + (size_t)th * j->nc * (size_t)(2 + hv);
        float *out = j->out + (size_t)th * hv;
        float M = -INFINITY;
        for (int c = 0; c < j->nc; c++)
            if (pr[(size_t)c * (2 + hv) + 1] > 0.0f && pr[(size_t)c * (2 + hv)] > M)
                M = pr[(size_t)c * (2 + hv)];
        for (int d = 0; d < hv; d++)
            out[d] = 0.0f;
        if (M == -INFINITY)
            continue;
        float L = 0.0f;
        for (int c = 0; c < j->nc; c++) {
            const float *pc = pr + (size_t)c * (2 + hv);
            if (!(pc[1] > 0.0f))
                continue;
            const float f = expf(pc[0] - M);
            L += pc[1] * f;
            for (int d = 0; d < hv; d++)
                out[d] += pc[2 + d] * f;
        }
        const float inv = 1.0f / L;
        for (int d = 0; d < hv; d++)
            out[d] *= inv;
    }
}

/* AVX-512 on a CPU with Skylake-SP's set unless STENO_NO_AVX512 is set (read per call: tests
 * compare the two, which give the same bits) */
static int use_avx512(void) {
    return steno_cpu_has_avx512_skx() && steno_cpu_avx512_allowed();
}

int steno_attention_fast(steno_pool *pool, steno_work *work, const steno_attn_params *ap, const float *q, int T, int q0,
                         const steno_kv_view *kv, float *out) {
    if (ap->llama2c || kv->kq || kv->vq || (kv->dtype != STENO_T_F16 && kv->dtype != STENO_T_F32) ||
        ap->head_dim_k % 8 != 0 || ap->head_dim_v % 16 != 0 || ap->n_head % ap->n_kv_head != 0 ||
        ap->n_head / ap->n_kv_head > 64 || !steno_cpu_has_avx2_fma_f16c())
        return 1;
    const int hk = ap->head_dim_k, hv = ap->head_dim_v, G = ap->n_head / ap->n_kv_head, qlast = q0 + T - 1;
    const size_t n_order = (size_t)kv->n_order;
    /* entries visible to some query of [q0, qlast], and their chunks; an entry at
     * p >= q0 is first seen by query p, one before q0 by query q0 (the window
     * only grows stricter later) */
    size_t nc_max = n_order + 1;
    const int tb = T > 1 ? FA_TB : 1, nqb = (T + tb - 1) / tb;
    const int nth = steno_n_tasks(pool);
    size_t per = ((size_t)tb * G * hk + (size_t)tb * G * FA_CHUNK) * sizeof(float) + FA_CHUNK + 64;
    per = (per + 63) / 64 * 64;
    const size_t ent_bytes = ((n_order * 2 + nc_max + 1) * sizeof(int32_t) + 63) / 64 * 64;
    /* the partials are sized once the chunks are counted: count first with a walk
     * of the order */
    int nc = 0, last_chunk = -1;
    for (size_t i = 0; i < n_order; i++) {
        const int s = kv->order ? kv->order[i] : (int)i, p = kv->pos[s];
        if (p > qlast || !steno_kv_visible(kv, p, p > q0 ? p : q0))
            continue;
        if (p / FA_CHUNK != last_chunk) {
            nc++;
            last_chunk = p / FA_CHUNK;
        }
    }
    if (nc == 0) {
        memset(out, 0, (size_t)T * ap->n_head * hv * sizeof(float));
        return 0;
    }
    const size_t part_bytes = ((size_t)T * ap->n_head * nc * (2 + (size_t)hv) * sizeof(float) + 63) / 64 * 64;
    const size_t need = part_bytes + ent_bytes + per * (size_t)nth + 64;
    if (work->cap < need) {
        size_t cap = work->cap * 2 > need ? work->cap * 2 : need;
        void *pb = realloc(work->buf, cap);
        if (!pb)
            return -1;
        work->buf = pb;
        work->cap = cap;
    }
    uint8_t *base = (uint8_t *)(((uintptr_t)work->buf + 63) & ~(uintptr_t)63);
    float *part = (float *)base;
    int32_t *ent_slot = (int32_t *)(base + part_bytes), *ent_pos = ent_slot + n_order, *chunk_lo = ent_pos + n_order;
    int n = 0;
    nc = 0;
    last_chunk = -1;
    for (size_t i = 0; i < n_order; i++) {
        const int s = kv->order ? kv->order[i] : (int)i, p = kv->pos[s];
        if (p > qlast || !steno_kv_visible(kv, p, p > q0 ? p : q0))
            continue;
        if (p / FA_CHUNK != last_chunk) {
            chunk_lo[nc++] = n;
            last_chunk = p / FA_CHUNK;
        }
        ent_slot[n] = s;
        ent_pos[n] = p;
        n++;
    }
    chunk_lo[nc] = n;
    fa_job j = {ap,
                q,
                T,
                q0,
                kv,
                ent_slot,
                ent_pos,
                chunk_lo,
                nc,
                tb,
                nqb,
                (long)nqb * ap->n_kv_head * nc,
                part,
                out,
                base + part_bytes + ent_bytes,
                per,
                kv->dtype == STENO_T_F16,
                use_avx512()};
    if (j.n_items == 1 || (long)T * ap->n_head * n < 4096) {
        fa_worker(&j, 0, 1);
        fa_combine(&j, 0, 1);
    } else {
        steno_pool_run(pool, fa_worker, &j, nth);
        if (T > 1)
            steno_pool_run(pool, fa_combine, &j, nth);
        else
            fa_combine(&j, 0, 1);
    }
    return 0;
}
#else
int steno_attention_fast(steno_pool *pool, steno_work *work, const steno_attn_params *ap, const float *q, int T, int q0,
                         const steno_kv_view *kv, float *out) {
    (void)pool, (void)work, (void)ap, (void)q, (void)T, (void)q0, (void)kv, (void)out;
    return 1;
}
#endif
