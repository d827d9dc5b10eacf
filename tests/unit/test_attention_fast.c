/* test_attention_fast.c — the fast path's chunked attention
 * (kernels/attention/attention.h steno_attention_fast) against a float64 reference over
 * random f16 and f32 views: plain caches, sliding windows with and without
 * `keep`, ring slots out of position order with stale entries, GQA groups of
 * 1–4, head sizes 64 and 256, decode (T = 1) and causal prompt blocks (T up to
 * 37), contexts crossing several 128-position chunks. Also: outputs
 * bit-identical for 1 and 2 threads, and a query's output bit-identical whether
 * evaluated alone or inside a prompt block, and the AVX-512 kernels' outputs
 * bit-identical to the AVX2 ones (STENO_NO_AVX512=1). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/attention/attention.h"
#include "kernels/quant/quant.h"
#include "kernels/gemv/vec.h"
#include "test_util.h"

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* uniform in [-1, 1) */
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (float)((g_rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

typedef struct {
    int n_head, n_kv, hk, hv, f16, window, keep;
    int n_slots;
    int32_t *pos, *order;
    int n_order;
    uint8_t *k, *v;
    size_t krb, vrb;
} view_case;

static float kv_val(const view_case *c, const uint8_t *rows, size_t rb, int slot, int i) {
    const uint8_t *r = rows + (size_t)slot * rb;
    return c->f16 ? steno_fp16_to_f32(((const uint16_t *)r)[i]) : ((const float *)r)[i];
}

static steno_kv_view make_view(const view_case *c) {
    steno_kv_view v;
    memset(&v, 0, sizeof v);
    v.dtype = c->f16 ? STENO_T_F16 : STENO_T_F32;
    v.n_slots = c->n_slots;
    v.pos = c->pos;
    v.order = c->order;
    v.n_order = c->n_order;
    v.k = c->k;
    v.v = c->v;
    v.k_row_bytes = c->krb;
    v.v_row_bytes = c->vrb;
    v.window = c->window;
    v.keep = c->keep;
    return v;
}

/* positions 0..n_pos-1 stored in a ring of n_slots (slot = p mod n_slots when
 * the ring is smaller, else shuffled slots); order lists the slots by
 * increasing position */
static void fill_case(view_case *c, int n_pos, int ring) {
    c->n_slots = ring ? ring : n_pos;
    const int first = n_pos > c->n_slots ? n_pos - c->n_slots : 0;
    c->pos = malloc(sizeof(int32_t) * (size_t)c->n_slots);
    c->order = malloc(sizeof(int32_t) * (size_t)c->n_slots);
    for (int s = 0; s < c->n_slots; s++)
        c->pos[s] = -1;
    c->n_order = 0;
    for (int p = first; p < n_pos; p++) {
        const int s = ring ? p % ring : (int)((p * 2L + 3) % n_pos); /* n_pos odd below: a permutation */
        c->pos[s] = p;
    }
    for (int p = first; p < n_pos; p++)
        for (int s = 0; s < c->n_slots; s++)
            if (c->pos[s] == p)
                c->order[c->n_order++] = s;
    const size_t es = c->f16 ? 2 : 4;
    c->krb = (size_t)c->n_kv * c->hk * es;
    c->vrb = (size_t)c->n_kv * c->hv * es;
    c->k = malloc(c->krb * (size_t)c->n_slots);
    c->v = malloc(c->vrb * (size_t)c->n_slots);
    const int nk = c->n_kv * c->hk, nv = c->n_kv * c->hv;
    float *tmp = malloc(sizeof(float) * (size_t)(nk > nv ? nk : nv));
    for (int s = 0; s < c->n_slots; s++) {
        for (int i = 0; i < nk; i++)
            tmp[i] = 2.0f * frand();
        if (c->f16)
            vec_f32_to_f16(tmp, (uint16_t *)(c->k + s * c->krb), (size_t)nk);
        else
            memcpy(c->k + s * c->krb, tmp, sizeof(float) * (size_t)nk);
        for (int i = 0; i < nv; i++)
            tmp[i] = frand();
        if (c->f16)
            vec_f32_to_f16(tmp, (uint16_t *)(c->v + s * c->vrb), (size_t)nv);
        else
            memcpy(c->v + s * c->vrb, tmp, sizeof(float) * (size_t)nv);
    }
    free(tmp);
}

static void free_case(view_case *c) {
    free(c->pos);
    free(c->order);
    free(c->k);
    free(c->v);
}

/* float64 softmax attention of query rows [0, T) at positions q0 + t */
static void reference(const view_case *c, const steno_kv_view *view, const float *q, int T, int q0, float scale,
                      double *out) {
    const int G = c->n_head / c->n_kv;
    double *sc = malloc(sizeof(double) * (size_t)c->n_slots);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < c->n_head; h++) {
            const int kvh = h / G;
            double m = -INFINITY;
            for (int i = 0; i < c->n_order; i++) {
                const int s = c->order[i];
                sc[i] = -INFINITY;
                if (!steno_kv_visible(view, c->pos[s], q0 + t))
                    continue;
                double d = 0;
                for (int e = 0; e < c->hk; e++)
                    d += (double)q[((size_t)t * c->n_head + h) * c->hk + e] * scale *
                         kv_val(c, c->k, c->krb, s, kvh * c->hk + e);
                sc[i] = d;
                if (d > m)
                    m = d;
            }
            double *o = out + ((size_t)t * c->n_head + h) * c->hv, l = 0;
            for (int e = 0; e < c->hv; e++)
                o[e] = 0;
            if (m == -INFINITY)
                continue;
            for (int i = 0; i < c->n_order; i++) {
                if (sc[i] == -INFINITY)
                    continue;
                const double p = exp(sc[i] - m);
                l += p;
                for (int e = 0; e < c->hv; e++)
                    o[e] += p * kv_val(c, c->v, c->vrb, c->order[i], kvh * c->hv + e);
            }
            for (int e = 0; e < c->hv; e++)
                o[e] /= l;
        }
    free(sc);
}

static void run_case(steno_pool *pool2, int n_head, int n_kv, int hd, int f16, int n_pos, int ring, int window,
                     int keep, int T) {
    view_case c = {n_head, n_kv, hd, hd, f16, window, keep, 0, NULL, NULL, 0, NULL, NULL, 0, 0};
    fill_case(&c, n_pos, ring);
    steno_kv_view view = make_view(&c);
    if (!ring && n_pos % 2 == 0) { /* a plain cache: slot = position, no order list */
        for (int s = 0; s < c.n_slots; s++)
            c.pos[s] = s, c.order[s] = s;
        view.order = NULL;
    }
    const int q0 = n_pos - T;
    const float scale = 1.0f / sqrtf((float)hd);
    const size_t nq = (size_t)T * n_head * hd;
    float *q = malloc(sizeof(float) * nq), *o1 = malloc(sizeof(float) * nq), *o2 = malloc(sizeof(float) * nq),
          *o3 = malloc(sizeof(float) * (size_t)n_head * hd);
    double *ref = malloc(sizeof(double) * nq);
    for (size_t i = 0; i < nq; i++)
        q[i] = frand();
    steno_attn_params ap = {n_head, n_kv, hd, hd, scale, 1.0f, 0, 1, 0.0f};
    steno_work w1 = {0}, w2 = {0}, w3 = {0};
    int rc1 = steno_attention_fast(NULL, &w1, &ap, q, T, q0, &view, o1);
    int rc2 = steno_attention_fast(pool2, &w2, &ap, q, T, q0, &view, o2);
    CHECK(rc1 == 0 && rc2 == 0, "rc %d %d", rc1, rc2);
    reference(&c, &view, q, T, q0, scale, ref);
    double maxerr = 0;
    for (size_t i = 0; i < nq; i++) {
        const double e = fabs(ref[i] - (double)o1[i]);
        if (e > maxerr)
            maxerr = e;
    }
    CHECK(maxerr < 2e-5,
          "heads %d/%d dim %d %s pos %d ring %d window %d keep %d T %d: max "
          "error %g",
          n_head, n_kv, hd, f16 ? "f16" : "f32", n_pos, ring, window, keep, T, maxerr);
    CHECK(memcmp(o1, o2, sizeof(float) * nq) == 0, "1 vs 2 threads differ (pos %d T %d)", n_pos, T);
    /* the AVX-512 dots and values (8 queries per pass) against the AVX2 ones (4): the same bits
     * (on a CPU without AVX-512 both runs take the AVX2 kernels) */
    {
        float *o4 = malloc(sizeof(float) * nq);
        steno_work w4 = {0};
        setenv("STENO_NO_AVX512", "1", 1);
        const int rc4 = steno_attention_fast(pool2, &w4, &ap, q, T, q0, &view, o4);
        unsetenv("STENO_NO_AVX512");
        CHECK(rc4 == 0 && memcmp(o4, o2, sizeof(float) * nq) == 0, "AVX-512 and AVX2 kernels differ (pos %d T %d)",
              n_pos, T);
        steno_work_free(&w4);
        free(o4);
    }
    /* each query row alone (the rows of the prompt block it came from as its own
     * decode step) */
    int alone_equal = 1;
    for (int t = 0; t < T; t++) {
        /* the view the query would have had alone: the same slots, later positions
         * hidden by causality */
        int rc = steno_attention_fast(pool2, &w3, &ap, q + (size_t)t * n_head * hd, 1, q0 + t, &view, o3);
        if (rc != 0 || memcmp(o3, o1 + (size_t)t * n_head * hd, sizeof(float) * (size_t)n_head * hd) != 0)
            alone_equal = 0;
    }
    CHECK(alone_equal,
          "a query alone differs from the same query in the block (pos %d T %d "
          "window %d)",
          n_pos, T, window);
    steno_work_free(&w1);
    steno_work_free(&w2);
    steno_work_free(&w3);
    free(q), free(o1), free(o2), free(o3), free(ref);
    free_case(&c);
}

int main(void) {
    vec_init();
    steno_pool *pool2 = NULL;
    if (steno_pool_create(2, &pool2) != STENO_OK)
        return 1;
    steno_attn_params probe = {1, 1, 64, 64, 1.0f, 1.0f, 0, 1, 0.0f};
    steno_kv_view empty;
    memset(&empty, 0, sizeof empty);
    empty.dtype = STENO_T_F16;
    float dummy[64];
    steno_work wp = {0};
    if (steno_attention_fast(NULL, &wp, &probe, dummy, 1, 0, &empty, dummy) == 1) {
        printf("test_attention_fast: skipped: this CPU has no AVX2+FMA+F16C (the "
               "fast attention does not apply)\n");
        steno_pool_free(pool2);
        return 0;
    }
    steno_work_free(&wp);
    /* SmolLM2's geometry (9 heads, 3 KV heads, 64), decode at depths across chunk
     * boundaries */
    const int depths[] = {1, 7, 127, 129, 255, 301, 1025};
    for (size_t i = 0; i < sizeof depths / sizeof *depths; i++) {
        run_case(pool2, 9, 3, 64, 1, depths[i] | 1, 0, 0, 0, 1);
        run_case(pool2, 9, 3, 64, 0, depths[i] | 1, 0, 0, 0, 1);
    }
    /* prompt blocks (causal), T not a multiple of the block */
    run_case(pool2, 9, 3, 64, 1, 301, 0, 0, 0, 37);
    run_case(pool2, 9, 3, 64, 1, 37, 0, 0, 0, 37);
    run_case(pool2, 9, 3, 64, 1, 128, 0, 0, 0, 128);
    run_case(pool2, 9, 3, 64, 1, 512, 0, 0, 0, 128);
    run_case(pool2, 4, 4, 64, 1, 141, 0, 0, 0, 5);
    /* Gemma 3's geometry (4 heads, 1 KV head, 256) and its sliding window in a
     * ring */
    run_case(pool2, 4, 1, 256, 1, 333, 0, 0, 0, 1);
    run_case(pool2, 4, 1, 256, 1, 901, 512, 512, 0, 1);
    run_case(pool2, 4, 1, 256, 1, 901, 600, 512, 0, 19); /* stale slots the window hides */
    run_case(pool2, 8, 2, 64, 1, 777, 300, 260, 4, 9);   /* window with kept sink positions */
    run_case(pool2, 8, 2, 64, 0, 777, 300, 260, 4, 1);
    steno_pool_free(pool2);
    printf("test_attention_fast: %d checks, %d failed\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
