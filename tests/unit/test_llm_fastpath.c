/* test_llm_fastpath.c — the LLM forward's vectorized kernels outside the matmuls (issue #13) against
 * plain-C references, bit for bit.
 *
 * 1. Activation quantizers: the dispatched q8_0 / q8_1 / q8_K from_float (AVX2 when the CPU has it)
 *    produce the same bytes as the scalar references on random rows at several scales, with exact
 *    .5 ties, zeros, subnormal blocks, NaN and ±inf; steno_quantize_rows equals row-by-row calls;
 *    steno_f32_to_f16_row equals steno_f32_to_f16.
 * 2. The ggml-exact attention (f16 caches): steno_attention's output equals, bit for bit, a
 *    transcription of llama.cpp's non-flash attention written here in plain C (f16(q), the key dot
 *    as ggml_vec_dot_f16's 4 × 8 lanes with fmaf and GGML_F32x8_REDUCE, steno_ggml_soft_max per
 *    8-position chunk, p rounded to f16, the value sums in lane position % 32), for several query
 *    counts T, head counts and GQA ratios, head sizes (64, 128, 256, 40 with a 32-tail, 576 beyond
 *    the kernel's buffer), cache lengths, slot orders with gaps, sliding windows with kept
 *    positions, on 1 and 3 threads. The f32 cache (generic path) against its plain reference too.
 * 3. steno_ggml_dot_f16_multi and _block (8 key rows at once) equal steno_ggml_dot_f16 · scale for
 *    each query of a group and each row.
 * 4. GEGLU as ggml (steno_geglu_ggml, F16C table index) equals steno_gelu_ggml(g) · u element by element
 *    (random, ±10 boundaries, large, NaN, infinities, subnormals; lengths with tails).
 * 5. steno_argmax_f32 equals the first-maximum scalar loop (ties, NaN, ±0, -inf).
 * 6. steno_rope_ggml_qk equals steno_rope_ggml on q and on k (normal and neox pairs, partial n_rot).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "core/threadpool.h"
#include "kernels/ops/argmax.h"
#include "kernels/attention/attention.h"
#include "kernels/ops/ggml_simd.h"
#include "kernels/ops/ops.h"
#include "kernels/quant/quant.h"
#include "kernels/quant/act.h"
#include "kernels/quant/blocks.h"
#include "rng.h"

static int g_fail = 0;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            g_fail++;                                                                              \
        }                                                                                          \
    } while (0)

static uint64_t g_s = 0x9E3779B97F4A7C15ull;
static uint32_t rnd32(void) { return (uint32_t)(rng_xorshift64(&g_s) >> 16); }
static float frand(void) { return rng_f24_pm1(rnd32()); }

/* ------------------------------------------------------------------------------------------- */
/* 1. quantizers                                                                                 */

static void fill_row(float *x, int n, int kind) {
    const float scale = kind == 1 ? 1e-3f : kind == 2 ? 300.0f : 1.0f;
    for (int i = 0; i < n; i++) x[i] = frand() * scale;
    if (kind == 3) /* exact ties of x·127/amax: amax = 127 makes id = 1 */
        for (int i = 0; i < n; i++) x[i] = (i % 32 == 0) ? 127.0f : (float)((int)(rnd32() % 200) - 100) + 0.5f;
    if (kind == 4) /* blocks of zeros, a subnormal block, NaN and infinities in others */
        for (int i = 0; i < n; i++) {
            const int b = (i / 32) % 8;
            x[i] = b == 0 ? 0.0f : b == 1 ? frand() * 1e-40f : b == 2 && i % 7 == 0 ? NAN
                 : b == 3 && i % 11 == 0 ? INFINITY : b == 4 && i % 13 == 0 ? -INFINITY : b == 5 ? -0.0f : x[i];
        }
    if (kind == 5) /* the largest magnitude repeated with both signs (q8_K keeps the first) */
        for (int i = 0; i < n; i++) x[i] = (i % 37 == 5) ? -2.0f : (i % 37 == 9) ? 2.0f : x[i];
}

static void test_quantizers(void) {
    static const int types[3] = {STENO_T_Q8_0, STENO_T_Q8_1, STENO_T_Q8_K};
    void (*ref[3])(const float *, void *, int64_t) = {steno_quantize_q8_0_scalar, steno_quantize_q8_1_scalar,
                                                      steno_quantize_q8_K_scalar};
    const int n = 2048, rows = 5;
    float *x = malloc(sizeof(float) * n * rows);
    uint8_t *a = malloc(292 * 8 * rows), *b = malloc(292 * 8 * rows);
    for (int ti = 0; ti < 3; ti++) {
        const steno_type_traits *t = steno_type_get(types[ti]);
        const size_t rb = steno_row_size(types[ti], n);
        for (int kind = 0; kind < 6; kind++) {
            for (int rep = 0; rep < 20; rep++) {
                fill_row(x, n, kind);
                memset(a, 0xAA, rb);
                memset(b, 0x55, rb);
                ref[ti](x, a, n);
                t->from_float(x, b, n);
                CHECK(memcmp(a, b, rb) == 0, "%s: kind %d rep %d differs from the scalar reference", t->name, kind,
                      rep);
            }
        }
        /* a row range equals row-by-row calls */
        for (int r = 0; r < rows; r++) fill_row(x + (size_t)r * n, n, r % 6);
        memset(a, 0, rb * rows);
        memset(b, 0, rb * rows);
        for (int r = 0; r < rows; r++) ref[ti](x + (size_t)r * n, a + r * rb, n);
        CHECK(steno_quantize_rows(types[ti], x, n, b, rb, n, 0, 2) == 0 &&
                  steno_quantize_rows(types[ti], x, n, b, rb, n, 2, rows) == 0,
              "steno_quantize_rows failed");
        CHECK(memcmp(a, b, rb * rows) == 0, "%s: steno_quantize_rows differs", t->name);
        CHECK(steno_quantize_rows(types[ti], x, n, b, rb, n - 16, 0, 1) == -1, "%s: bad n accepted", t->name);
    }
    CHECK(steno_quantize_rows(STENO_T_Q4_0, x, n, b, 64, n, 0, 1) == -1, "q4_0 has no from_float");
    /* f16 rows */
    uint16_t *h = malloc(2 * (size_t)n);
    for (int i = 0; i < n; i++) {
        uint32_t u = rnd32() ^ (rnd32() << 16);
        memcpy(&x[i], &u, 4); /* every bit pattern, NaN and subnormals included */
    }
    steno_f32_to_f16_row(x, h, n - 3);
    int bad = 0;
    for (int i = 0; i < n - 3; i++) bad += h[i] != steno_f32_to_f16(x[i]);
    CHECK(bad == 0, "steno_f32_to_f16_row: %d values differ", bad);
    free(h);
    free(x);
    free(a);
    free(b);
}

/* ------------------------------------------------------------------------------------------- */
/* 2. attention references                                                                       */

static float h2f(uint16_t h) { return steno_fp16_to_f32(h); }

/* GGML_F32x8_REDUCE of 4 accumulators × 8 lanes (x[j][l]), in its order. */
static float reduce32(float x[4][8]) {
    for (int l = 0; l < 8; l++) {
        x[0][l] = x[0][l] + x[2][l];
        x[1][l] = x[1][l] + x[3][l];
    }
    for (int l = 0; l < 8; l++) x[0][l] = x[0][l] + x[1][l];
    float t0[4];
    for (int l = 0; l < 4; l++) t0[l] = x[0][l] + x[0][l + 4];
    return (t0[0] + t0[1]) + (t0[2] + t0[3]);
}

/* ggml_vec_dot_f16 (AVX2 build): 32-element steps into 4 × 8 fused accumulators, reduce, tail in
 * double. */
static float ref_dot_f16(int n, const uint16_t *x, const uint16_t *y) {
    float s[4][8] = {{0}};
    const int np = n & ~31;
    for (int i = 0; i < np; i += 32)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 8; l++) s[j][l] = fmaf(h2f(x[i + 8 * j + l]), h2f(y[i + 8 * j + l]), s[j][l]);
    double sumf = (double)reduce32(s);
    for (int i = np; i < n; i++) sumf += (double)(h2f(x[i]) * h2f(y[i]));
    return (float)sumf;
}

/* The ggml-exact attention as it was before the fast path: one (t, h) at a time. */
static void ref_attention_f16(const steno_attn_params *ap, const float *q, int T, int q0, const steno_kv_view *kv,
                              float *out) {
    const int hk = ap->head_dim_k, hv = ap->head_dim_v, group = ap->n_head / ap->n_kv_head;
    const size_t khead = kv->k_row_bytes / ap->n_kv_head, vhead = kv->v_row_bytes / ap->n_kv_head;
    int maxpos = 0;
    for (int i = 0; i < kv->n_order; i++) {
        int s = kv->order ? kv->order[i] : i;
        if (kv->pos[s] > maxpos) maxpos = kv->pos[s];
    }
    float *dense = malloc(sizeof(float) * ((maxpos | 7) + 17));
    float *w = malloc(sizeof(float) * (kv->n_order + 1));
    int32_t *pos = malloc(sizeof(int32_t) * (kv->n_order + 1));
    int32_t *slot = malloc(sizeof(int32_t) * (kv->n_order + 1));
    uint16_t *q16 = malloc(2 * (size_t)hk);
    float(*acc)[512] = malloc(sizeof(float) * 32 * 512);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < ap->n_head; h++) {
            const int kvh = h / group, qpos = q0 + t;
            const float *qh = q + (size_t)t * ap->n_head * hk + (size_t)h * hk;
            float *oh = out + (size_t)t * ap->n_head * hv + (size_t)h * hv;
            for (int i = 0; i < hk; i++) q16[i] = steno_f32_to_f16(qh[i]);
            int n = 0, pmax = -1;
            float maxv = -INFINITY;
            for (int i = 0; i < kv->n_order; i++) {
                const int s = kv->order ? kv->order[i] : i, p = kv->pos[s];
                if (!steno_kv_visible(kv, p, qpos)) continue;
                const uint16_t *krow = (const uint16_t *)(kv->k + (size_t)s * kv->k_row_bytes + (size_t)kvh * khead);
                const float sc = ref_dot_f16(hk, krow, q16) * ap->scale;
                w[n] = sc;
                pos[n] = p;
                slot[n] = s;
                if (sc > maxv) maxv = sc;
                if (p > pmax) pmax = p;
                n++;
            }
            if (n == 0) {
                memset(oh, 0, sizeof(float) * hv);
                continue;
            }
            const int first = pos[0] & ~7, end = (pmax | 7) + 1;
            for (int p = first; p < end; p++) dense[p - first] = -INFINITY;
            for (int i = 0; i < n; i++) dense[pos[i] - first] = w[i];
            double sum = 0;
            for (int c0 = first, i = 0; c0 < end; c0 += 8) {
                while (i < n && pos[i] < c0) i++;
                if (i >= n || pos[i] >= c0 + 8) continue;
                sum += steno_ggml_soft_max(8, dense + (c0 - first), dense + (c0 - first), maxv);
            }
            const float inv = (float)(1.0 / sum);
            for (int k = 0; k < n; k++) w[k] = steno_round_f16(dense[pos[k] - first] * inv);
            for (int l = 0; l < 32; l++)
                for (int d = 0; d < hv; d++) acc[l][d] = 0.0f;
            for (int k = 0; k < n; k++) {
                const uint16_t *v = (const uint16_t *)(kv->v + (size_t)slot[k] * kv->v_row_bytes + (size_t)kvh * vhead);
                for (int d = 0; d < hv; d++) acc[pos[k] & 31][d] = fmaf(h2f(v[d]), w[k], acc[pos[k] & 31][d]);
            }
            for (int d = 0; d < hv; d++) {
                float x[4][8];
                for (int j = 0; j < 4; j++)
                    for (int l = 0; l < 8; l++) x[j][l] = acc[8 * j + l][d];
                oh[d] = reduce32(x);
            }
        }
    free(dense);
    free(w);
    free(pos);
    free(slot);
    free(q16);
    free(acc);
}

/* The generic path on an f32 cache with ggml numerics (attention.c attn_worker). */
static void ref_attention_f32(const steno_attn_params *ap, const float *q, int T, int q0, const steno_kv_view *kv,
                              float *out) {
    const int hk = ap->head_dim_k, hv = ap->head_dim_v, group = ap->n_head / ap->n_kv_head;
    float *sc = malloc(sizeof(float) * (kv->n_order + 1));
    int32_t *slot = malloc(sizeof(int32_t) * (kv->n_order + 1));
    for (int t = 0; t < T; t++)
        for (int h = 0; h < ap->n_head; h++) {
            const int kvh = h / group;
            const float *qh = q + (size_t)t * ap->n_head * hk + (size_t)h * hk;
            float *oh = out + (size_t)t * ap->n_head * hv + (size_t)h * hv;
            int n = 0;
            float maxv = -INFINITY;
            for (int i = 0; i < kv->n_order; i++) {
                const int s = kv->order ? kv->order[i] : i;
                if (!steno_kv_visible(kv, kv->pos[s], q0 + t)) continue;
                const float *k = (const float *)(kv->k + (size_t)s * kv->k_row_bytes) + (size_t)kvh * hk;
                float d = 0.0f;
                for (int e = 0; e < hk; e++) d += qh[e] * k[e];
                sc[n] = d * ap->scale;
                slot[n] = s;
                if (sc[n] > maxv) maxv = sc[n];
                n++;
            }
            memset(oh, 0, sizeof(float) * hv);
            if (n == 0) continue;
            double sum = 0;
            for (int i = 0; i < n; i++) {
                sc[i] = expf(sc[i] - maxv);
                sum += (double)sc[i];
            }
            const float inv = (float)(1.0 / sum);
            for (int i = 0; i < n; i++) {
                const float p = sc[i] * inv;
                const float *v = (const float *)(kv->v + (size_t)slot[i] * kv->v_row_bytes) + (size_t)kvh * hv;
                for (int d = 0; d < hv; d++) oh[d] += p * v[d];
            }
        }
    free(sc);
    free(slot);
}

typedef struct {
    int n_head, n_kv, hk, hv, n_ctx, T, window, keep, gaps, shuffled;
} attn_case;

static void run_case(const attn_case *c, int dtype, steno_pool *p1, steno_pool *p3) {
    const int es = dtype == STENO_T_F16 ? 2 : 4;
    const int n_slots = c->n_ctx;
    const size_t krb = (size_t)c->n_kv * c->hk * es, vrb = (size_t)c->n_kv * c->hv * es;
    uint8_t *k = malloc(krb * n_slots), *v = malloc(vrb * n_slots);
    int32_t *pos = malloc(sizeof(int32_t) * n_slots), *order = malloc(sizeof(int32_t) * n_slots);
    for (size_t i = 0; i < krb * n_slots / es; i++) {
        const float f = frand() * 2.0f;
        if (es == 2) {
            uint16_t hh = steno_f32_to_f16(f);
            memcpy(k + 2 * i, &hh, 2);
        } else {
            memcpy(k + 4 * i, &f, 4);
        }
    }
    for (size_t i = 0; i < vrb * n_slots / es; i++) {
        const float f = frand();
        if (es == 2) {
            uint16_t hh = steno_f32_to_f16(f);
            memcpy(v + 2 * i, &hh, 2);
        } else {
            memcpy(v + 4 * i, &f, 4);
        }
    }
    /* slots in a random order when shuffled (a rotating cache); positions increase along the order,
     * with gaps when asked (evicted cells); the last T positions are the new queries' own */
    for (int i = 0; i < n_slots; i++) order[i] = i;
    if (c->shuffled)
        for (int i = n_slots - 1; i > 0; i--) {
            int r = (int)(rnd32() % (uint32_t)(i + 1)), tmp = order[i];
            order[i] = order[r];
            order[r] = tmp;
        }
    int p = 0;
    for (int i = 0; i < n_slots; i++) {
        if (c->gaps && i < n_slots - c->T && rnd32() % 5 == 0) p += 1 + (int)(rnd32() % 12);
        pos[order[i]] = p++;
    }
    const int q0 = pos[order[n_slots - c->T]];
    steno_kv_view kv = {0};
    kv.dtype = dtype;
    kv.n_slots = n_slots;
    kv.pos = pos;
    kv.order = c->shuffled ? order : NULL;
    kv.n_order = n_slots;
    kv.k = k;
    kv.v = v;
    kv.k_row_bytes = krb;
    kv.v_row_bytes = vrb;
    kv.window = c->window;
    kv.keep = c->keep;
    const int T = c->T;
    float *q = malloc(sizeof(float) * T * c->n_head * c->hk);
    for (int i = 0; i < T * c->n_head * c->hk; i++) q[i] = frand() * 3.0f;
    const size_t on = (size_t)T * c->n_head * c->hv;
    float *o1 = malloc(sizeof(float) * on), *o3 = malloc(sizeof(float) * on), *oref = malloc(sizeof(float) * on);
    steno_attn_params ap = {c->n_head, c->n_kv, c->hk, c->hv, 1.0f / sqrtf((float)c->hk), sqrtf((float)c->hk), 0, 0, 0.0f};
    steno_work w1 = {0}, w3 = {0};
    CHECK(steno_attention(p1, &w1, &ap, q, T, q0, &kv, o1) == 0, "attention failed");
    CHECK(steno_attention(p3, &w3, &ap, q, T, q0, &kv, o3) == 0, "attention failed");
    if (dtype == STENO_T_F16) ref_attention_f16(&ap, q, T, q0, &kv, oref);
    else ref_attention_f32(&ap, q, T, q0, &kv, oref);
    size_t bad1 = 0, bad3 = 0, first = on;
    for (size_t i = 0; i < on; i++) {
        if (memcmp(&o1[i], &oref[i], 4) != 0) {
            bad1++;
            if (first == on) first = i;
        }
        bad3 += memcmp(&o3[i], &oref[i], 4) != 0;
    }
    CHECK(bad1 == 0 && bad3 == 0,
          "%s heads %d/%d dims %d/%d ctx %d T %d window %d keep %d gaps %d shuffled %d: %zu (1 thread) and %zu (3 "
          "threads) of %zu outputs differ from the reference (first %zu: %.9g vs %.9g)",
          dtype == STENO_T_F16 ? "f16" : "f32", c->n_head, c->n_kv, c->hk, c->hv, c->n_ctx, T, c->window, c->keep,
          c->gaps, c->shuffled, bad1, bad3, on, first, first < on ? o1[first] : 0.0, first < on ? oref[first] : 0.0);
    steno_work_free(&w1);
    steno_work_free(&w3);
    free(q);
    free(o1);
    free(o3);
    free(oref);
    free(k);
    free(v);
    free(pos);
    free(order);
}

static void test_attention(void) {
    steno_pool *p1 = NULL, *p3 = NULL;
    CHECK(steno_pool_create(1, &p1) == STENO_OK && steno_pool_create(3, &p3) == STENO_OK, "pool");
    static const attn_case cases[] = {
        /* heads, kv, hk, hv, ctx, T, window, keep, gaps, shuffled */
        {9, 3, 64, 64, 150, 150, 0, 0, 0, 0},    /* SmolLM2-like prompt, causal */
        {9, 3, 64, 64, 301, 1, 0, 0, 0, 0},      /* SmolLM2-like decode */
        {4, 1, 256, 256, 90, 37, 0, 0, 0, 0},    /* Gemma 3 270M-like, GQA 4 */
        {4, 1, 256, 256, 200, 64, 48, 0, 0, 1},  /* sliding window over a rotating cache */
        {8, 2, 128, 128, 120, 9, 40, 4, 1, 1},   /* window with kept positions, gaps */
        {6, 6, 64, 64, 77, 77, 0, 0, 1, 0},      /* no GQA, gaps */
        {8, 1, 40, 40, 53, 5, 0, 0, 0, 0},       /* head size with a 32-tail (8 | 40) */
        {2, 1, 576, 64, 40, 3, 0, 0, 0, 0},      /* key head beyond the kernel's row buffer */
        {8, 4, 64, 64, 1, 1, 0, 0, 0, 0},        /* first token */
        {12, 4, 64, 64, 700, 24, 0, 0, 1, 1},    /* long context, several query rows */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (steno_ggml_exact_available()) run_case(&cases[i], STENO_T_F16, p1, p3);
        if (cases[i].hk <= 256) run_case(&cases[i], STENO_T_F32, p1, p3);
    }
    if (!steno_ggml_exact_available())
        fprintf(stderr, "note: the ggml-exact f16 attention is not in use (no AVX2/FMA/F16C, or STENO_NO_AVX2 "
                        "set): only the f32 path was compared\n");
    steno_pool_free(p1);
    steno_pool_free(p3);
}

/* ------------------------------------------------------------------------------------------- */
/* 3. grouped key dots                                                                          */

static void test_dot_multi(void) {
    if (!steno_ggml_exact_available()) return;
    static const int ns[] = {8, 32, 40, 64, 72, 128, 256, 512, 520, 576};
    uint16_t k[576], q16[4][576];
    float qf[4][576], out[4 * 3];
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
        const int n = ns[c];
        for (int i = 0; i < n; i++) {
            k[i] = steno_f32_to_f16(frand() * 4.0f);
            for (int g = 0; g < 4; g++) {
                q16[g][i] = steno_f32_to_f16(frand() * 4.0f);
                qf[g][i] = steno_fp16_to_f32(q16[g][i]);
            }
        }
        steno_ggml_dot_f16_multi(n, k, &qf[0][0], 576, 4, 0.125f, out, 3);
        /* the 8-row block with rows of several kinds: row r is k with its first r values negated */
        static uint16_t kr[8][576];
        const uint16_t *krows[8];
        float outb[4 * 8];
        for (int r = 0; r < 8; r++) {
            memcpy(kr[r], k, 2 * (size_t)n);
            for (int i = 0; i < r; i++) kr[r][i] ^= 0x8000;
            krows[r] = kr[r];
        }
        for (int nr = 1; nr <= 8; nr = nr == 1 ? 5 : nr + 3) { /* 1, 5, 8 rows */
            steno_ggml_dot_f16_block(n, krows, nr, &qf[0][0], 576, 4, 0.125f, outb, 8);
            for (int g = 0; g < 4; g++)
                for (int r = 0; r < nr; r++) {
                    const float want = steno_ggml_dot_f16(n, kr[r], q16[g]) * 0.125f;
                    CHECK(memcmp(&want, &outb[8 * g + r], 4) == 0, "block n %d rows %d query %d row %d: %.9g vs %.9g",
                          n, nr, g, r, outb[8 * g + r], want);
                }
        }
        for (int g = 0; g < 4; g++) {
            const float want = steno_ggml_dot_f16(n, k, q16[g]) * 0.125f;
            CHECK(memcmp(&want, &out[3 * g], 4) == 0, "n %d query %d: %.9g vs %.9g", n, g, out[3 * g], want);
            const float ref = ref_dot_f16(n, k, q16[g]) * 0.125f;
            CHECK(memcmp(&want, &ref, 4) == 0, "n %d query %d: ggml dot %.9g vs plain reference %.9g", n, g, want, ref);
        }
    }
}

static void test_geglu(void) {
    const int n = 4099;
    float *g = malloc(sizeof(float) * n), *u = malloc(sizeof(float) * n), *h = malloc(sizeof(float) * n);
    static const float special[] = {-10.0f, 10.0f, -10.000001f, 9.999999f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN,
                                    1e-42f, -0.0f, 0.0f, 65504.0f, 65520.0f};
    for (int i = 0; i < n; i++) {
        g[i] = i % 53 == 0 ? special[(i / 53) % (sizeof special / sizeof special[0])] : frand() * (i % 3 ? 4.0f : 14.0f);
        u[i] = frand() * 3.0f;
    }
    for (int len = n; len > n - 9; len -= 4) {
        steno_geglu_ggml(h, g, u, len);
        int bad = 0;
        for (int i = 0; i < len; i++) {
            const float want = steno_gelu_ggml(g[i]) * u[i];
            bad += memcmp(&want, &h[i], 4) != 0;
        }
        CHECK(bad == 0, "geglu length %d: %d values differ from steno_gelu_ggml(g) * u", len, bad);
    }
    free(g);
    free(u);
    free(h);
}

static int argmax_ref(const float *x, int n) {
    int c = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[c]) c = i;
    return c;
}

static void test_argmax(void) {
    const int n = 1000;
    float *x = malloc(sizeof(float) * n);
    for (int rep = 0; rep < 400; rep++) {
        const int len = rep < 20 ? 1 + rep : n - (int)(rnd32() % 50);
        for (int i = 0; i < len; i++) x[i] = (float)(int)(rnd32() % 9) - 4.0f; /* many ties */
        if (rep % 5 == 1) x[rnd32() % len] = NAN;
        if (rep % 7 == 2) x[0] = NAN;
        if (rep % 3 == 0)
            for (int i = 0; i < len; i++) x[i] = x[i] > 0 ? -0.0f : x[i]; /* maximum ±0 */
        if (rep % 11 == 3)
            for (int i = 0; i < len; i++) x[i] = rnd32() % 2 ? -INFINITY : x[i];
        if (rep % 13 == 4) x[len - 1] = 100.0f; /* in the tail */
        if (rep % 17 == 5)
            for (int i = 0; i < len; i++) x[i] = rnd32() % 3 ? 0.0f : -0.0f;
        const int want = argmax_ref(x, len), got = steno_argmax_f32(x, len);
        CHECK(want == got, "argmax rep %d length %d: %d, want %d", rep, len, got, want);
    }
    free(x);
}

static void test_rope_qk(void) {
    float q[8 * 64], k[2 * 64], q2[8 * 64], k2[2 * 64];
    for (int neox = 0; neox < 2; neox++)
        for (int n_rot = 32; n_rot <= 64; n_rot += 32)
            for (int pos = 0; pos < 3000; pos += 997) {
                for (int i = 0; i < 8 * 64; i++) q[i] = q2[i] = frand();
                for (int i = 0; i < 2 * 64; i++) k[i] = k2[i] = frand();
                steno_rope_ggml_qk(q, 8, k, 2, 64, n_rot, pos, 10000.0f, 1.0f, neox);
                steno_rope_ggml(q2, 8, 64, n_rot, pos, 10000.0f, 1.0f, neox);
                steno_rope_ggml(k2, 2, 64, n_rot, pos, 10000.0f, 1.0f, neox);
                CHECK(memcmp(q, q2, sizeof q) == 0 && memcmp(k, k2, sizeof k) == 0,
                      "rope_qk differs (neox %d n_rot %d pos %d)", neox, n_rot, pos);
            }
}

int main(void) {
    printf("kernels: %s\n", steno_kernels_isa());
    test_quantizers();
    test_dot_multi();
    test_geglu();
    test_argmax();
    test_rope_qk();
    test_attention();
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("ok\n");
    return 0;
}
