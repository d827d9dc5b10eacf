/* test_kv.c — the KV-cache contract (llm/kvcache.h) for the plain and rotating kinds.
 *
 * A reference keeps every key/value ever written, tagged with its position and a write version.
 * After every update the test checks, for each of the T new queries, that the view exposes exactly
 * the positions the kind's rule makes visible (plain: all p <= q; rotating: p < keep or
 * q - p < max_size - keep), that each visible slot holds the latest value written at that position,
 * that `order` lists the valid slots by increasing position, and that steno_kv_make_mask agrees.
 * This covers multi-token updates that cross the ring boundary (T up to 3 × max_size) and rollback
 * after the ring has wrapped: trim(n) either succeeds and the next queries see exactly their window,
 * or refuses (can_trim = 0) with a message and leaves the cache unchanged. Deterministic cases pin
 * the documented guarantee: after single-token steps, rollback of reserve + 1 tokens succeeds and
 * reserve + 2 is refused. Also: f16 storage rounds as F16C does; bytes per token.
 * Quantized storage (affine q8/q4, TurboQuant 8/4-bit keys with 4/3/2-bit values) runs the same
 * random histories on both layouts — rollbacks, wraps, batches across the ring — and every visible
 * row must be byte-identical to a fresh encoding of its latest value; with a conversion threshold,
 * converted rows equal rows quantized on arrival after any history (conversion_exactness).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/quant/quant.h"
#include "llm/kvcache.h"
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

#define NKV 2
#define MAXHD 64
static int HD = 4; /* head_dim: 4 for the dtype kinds, 32/64 for the quantized ones */
#define ROW (NKV * HD)
#define MAXP 4096

static uint32_t g_seed = 7;
static int rnd(int n) { return (int)((rng_lcg_ansi(&g_seed) >> 8) % (uint32_t)n); }

/* The value written for position p at version v: exact in f32 (and in f16 for small p, v). */
static float val(int p, int v, int i) { return (float)(p * 8 + (v % 8)) + (float)i * 0.125f; }

typedef struct {
    int version[MAXP]; /* write version of each position, -1 = not written */
    int offset;
} reference;

/* Quantized views: the row of a visible slot must be byte-identical to a fresh encoding of the
 * expected (dtype-rounded) values, head by head. */
/* The row of position p (version v) must hold the encoding of its values: keys minus the view's
 * key center from position sink on (kvcache.h, centering), sinks' float rows in attention's domain. */
static int row_matches_encoding(const steno_kv_view *vw, const steno_kvq_fmt *f, const uint8_t *row, int p, int v,
                                float sign, int dtype, int sink_from) {
    const float *sink = sign > 0 ? vw->sink_k : vw->sink_v;
    float x[MAXHD];
    uint8_t enc[1024];
    const size_t hb = steno_kvq_head_bytes(f);
    for (int h = 0; h < NKV; h++) {
        for (int i = 0; i < HD; i++) {
            float w = sign * val(p, v, h * HD + i);
            x[i] = dtype == STENO_T_F16 ? steno_round_f16(w) : w;
        }
        float xc[MAXHD];
        for (int i = 0; i < HD; i++) xc[i] = sign > 0 && vw->k_center && p >= sink_from ? x[i] - vw->k_center[h * HD + i] : x[i];
        steno_kvq_encode(f, xc, enc);
        if (memcmp(enc, row + (size_t)h * hb, hb) != 0) return 0;
        if (p < vw->n_sink) { /* an attention sink: its float row (rotated values and keys rotated) */
            if (f->kind == STENO_KVQ_TQV || f->rotate) steno_tq_rotate(x, HD);
            if (memcmp(x, sink + ((size_t)p * NKV + h) * HD, (size_t)HD * sizeof(float)) != 0) return 0;
        }
    }
    return 1;
}

static float get(const steno_kv_view *vw, const uint8_t *base, size_t rb, int slot, int i) {
    const uint8_t *row = base + (size_t)slot * rb;
    if (vw->dtype == STENO_T_F16) {
        uint16_t h;
        memcpy(&h, row + 2 * (size_t)i, 2);
        return steno_fp16_to_f32(h);
    }
    float f;
    memcpy(&f, row + 4 * (size_t)i, 4);
    return f;
}

static int expect_visible(const steno_kv_params *kp, int p, int q) {
    if (p > q) return 0;
    if (kp->kind == STENO_KV_PLAIN) return 1;
    return p < kp->keep || q - p < kp->max_size - kp->keep;
}

/* Checks the view for queries q0..q0+T-1. */
static void check_view(const steno_kv_params *kp, const reference *ref, const steno_kv_view *vw, int q0, int T,
                       const char *ctx) {
    /* order: valid slots by increasing position */
    int prev = -1;
    for (int i = 0; i < vw->n_order; i++) {
        int s = vw->order ? vw->order[i] : i;
        CHECK(s >= 0 && s < vw->n_slots, "%s: order[%d] = %d out of range", ctx, i, s);
        if (s < 0 || s >= vw->n_slots) return;
        CHECK(vw->pos[s] > prev, "%s: order not increasing at %d (%d after %d)", ctx, i, vw->pos[s], prev);
        prev = vw->pos[s];
    }
    float *mask = malloc((size_t)T * vw->n_slots * sizeof(float));
    steno_kv_make_mask(vw, q0, T, mask);
    for (int t = 0; t < T; t++) {
        int q = q0 + t;
        static unsigned char seen[MAXP];
        memset(seen, 0, sizeof seen);
        for (int i = 0; i < vw->n_order; i++) {
            int s = vw->order ? vw->order[i] : i, p = vw->pos[s];
            int vis = steno_kv_visible(vw, p, q);
            CHECK(vis == expect_visible(kp, p, q), "%s: q %d: position %d visible=%d", ctx, q, p, vis);
            CHECK((mask[(size_t)t * vw->n_slots + s] == 0.0f) == (vis != 0), "%s: mask disagrees at q %d slot %d", ctx,
                  q, s);
            if (!vis) continue;
            seen[p] = 1;
            int v = ref->version[p];
            if (vw->kq) {
                CHECK(row_matches_encoding(vw, vw->kq, vw->k + (size_t)s * vw->k_row_bytes, p, v, 1.0f, kp->dtype, kp->sink) &&
                          row_matches_encoding(vw, vw->vq, vw->v + (size_t)s * vw->v_row_bytes, p, v, -1.0f, kp->dtype, kp->sink),
                      "%s: q %d: slot %d (position %d) does not hold the encoding of version %d", ctx, q, s, p, v);
                continue;
            }
            CHECK(kp->quant == STENO_KV_Q_NONE || kp->quant_start > 0, "%s: quantized cache returned a dtype view", ctx);
            for (int e = 0; e < ROW; e++) {
                float k = get(vw, vw->k, vw->k_row_bytes, s, e), x = get(vw, vw->v, vw->v_row_bytes, s, e);
                float want = val(p, v, e);
                if (vw->dtype == STENO_T_F16) want = steno_round_f16(want);
                if (k != want || x != -want) {
                    CHECK(0, "%s: q %d: slot %d (position %d) holds %g/%g, want %g", ctx, q, s, p, k, x, want);
                    break;
                }
            }
        }
        for (int p = 0; p <= q && p < MAXP; p++)
            if (expect_visible(kp, p, q) && !seen[p]) {
                CHECK(0, "%s: q %d: position %d missing from the view", ctx, q, p);
                break;
            }
    }
    free(mask);
}

static void do_update(steno_kv_cache *c, const steno_kv_params *kp, reference *ref, int T, int version,
                      const char *ctx) {
    float *k = calloc((size_t)T * ROW, sizeof(float)), *v = calloc((size_t)T * ROW, sizeof(float));
    int q0 = ref->offset;
    for (int t = 0; t < T; t++)
        for (int e = 0; e < ROW; e++) {
            k[t * ROW + e] = val(q0 + t, version, e);
            v[t * ROW + e] = -val(q0 + t, version, e);
        }
    steno_kv_view vw;
    steno_status st = steno_kv_update_and_fetch(c, k, v, T, &vw);
    CHECK(st == STENO_OK, "%s: update failed: %s", ctx, steno_errmsg());
    if (st == STENO_OK) {
        for (int t = 0; t < T; t++) ref->version[q0 + t] = version;
        ref->offset += T;
        CHECK(steno_kv_offset(c) == ref->offset, "%s: offset %d want %d", ctx, steno_kv_offset(c), ref->offset);
        check_view(kp, ref, &vw, q0, T, ctx);
    }
    free(k);
    free(v);
}

static int g_quant, g_kbits, g_vbits, g_group, g_qstart, g_sink, g_rot, g_center; /* random_run's quantization */

static void random_run(int kind, int dtype, int W, int keep, int reserve, int iters, int batches) {
    steno_kv_params kp = {kind, dtype, NKV, HD, HD, W, keep, reserve, 8, 0,
                          g_quant, g_kbits, g_vbits, g_group, g_qstart, g_sink, g_rot, g_center};
    steno_kv_cache *c;
    CHECK(steno_kv_new(&kp, &c) == STENO_OK, "%s", steno_errmsg());
    reference ref;
    memset(ref.version, 0xff, sizeof ref.version);
    ref.offset = 0;
    char ctx[128];
    int trims_ok = 0, trims_refused = 0;
    for (int it = 0; it < iters && ref.offset < MAXP - 4 * (W > 0 ? W : 8) - 8; it++) {
        snprintf(ctx, sizeof ctx, "%s W%d keep%d reserve%d it%d", kind ? "rotating" : "plain", W, keep, reserve, it);
        int op = rnd(10);
        if (op < 6) {
            do_update(c, &kp, &ref, 1, it, ctx);
        } else if (op < 8) {
            do_update(c, &kp, &ref, batches ? 1 + rnd(3 * (W > 0 ? W : 8)) : 1, it, ctx);
        } else {
            int n = rnd(reserve + 6 + 1);
            if (n > ref.offset) n = ref.offset;
            int can = steno_kv_can_trim(c, n);
            if (kind == STENO_KV_PLAIN) CHECK(can, "%s: plain cache refused trim(%d)", ctx, n);
            steno_status st = steno_kv_trim(c, n);
            CHECK((st == STENO_OK) == (can != 0), "%s: trim(%d) status %d vs can_trim %d", ctx, n, st, can);
            if (st == STENO_OK) {
                ref.offset -= n;
                trims_ok++;
            } else {
                CHECK(strstr(steno_errmsg(), "cannot roll back") != NULL, "%s: message: %s", ctx, steno_errmsg());
                CHECK(steno_kv_offset(c) == ref.offset, "%s: refused trim changed the offset", ctx);
                trims_refused++;
            }
            /* the next query must see exactly its window */
            do_update(c, &kp, &ref, 1, it + 100000, ctx);
        }
    }
    if (kind == STENO_KV_ROTATING)
        printf("rotating W=%d keep=%d reserve=%d %s%s%s: %d steps checked, offset %d, %d rollbacks, %d refused\n", W,
               keep, reserve, dtype == STENO_T_F16 ? "f16" : "f32", batches ? " batches" : "",
               g_quant == STENO_KV_Q_AFFINE ? " affine" : g_quant == STENO_KV_Q_TURBO ? " turboquant" : "", iters,
               ref.offset, trims_ok, trims_refused);
    else if (g_quant)
        printf("plain %s%s: %d steps checked, offset %d, %d rollbacks\n", dtype == STENO_T_F16 ? "f16" : "f32",
               g_quant == STENO_KV_Q_AFFINE ? " affine" : " turboquant", iters, ref.offset, trims_ok);

    steno_kv_free(c);
}

static void deterministic_rollback(void) {
    const int W = 8, keep = 2, reserve = 3;
    steno_kv_params kp = {STENO_KV_ROTATING, STENO_T_F32, NKV, HD, HD, W, keep, reserve, 0, 0, STENO_KV_Q_NONE, 0, 0, 0, 0, 0, 0, 0};
    steno_kv_cache *c;
    CHECK(steno_kv_new(&kp, &c) == STENO_OK, "%s", steno_errmsg());
    reference ref;
    memset(ref.version, 0xff, sizeof ref.version);
    ref.offset = 0;
    for (int i = 0; i < 30; i++) do_update(c, &kp, &ref, 1, 1, "det");
    CHECK(steno_kv_can_trim(c, reserve + 1), "rollback of reserve+1 after wrap must be possible");
    CHECK(!steno_kv_can_trim(c, reserve + 2), "rollback of reserve+2 after wrap must be refused");
    CHECK(steno_kv_trim(c, reserve + 2) != STENO_OK && strstr(steno_errmsg(), "cannot roll back 5 tokens"),
          "refusal message: %s", steno_errmsg());
    CHECK(steno_kv_trim(c, reserve + 1) == STENO_OK, "%s", steno_errmsg());
    ref.offset -= reserve + 1;
    do_update(c, &kp, &ref, 1, 2, "det after rollback");
    /* a multi-token update grows the ring: then a longer rollback is possible */
    do_update(c, &kp, &ref, 20, 3, "det batch of 20");
    CHECK(steno_kv_can_trim(c, 15), "after a batch of 20 the ring retains more history");
    CHECK(steno_kv_trim(c, 15) == STENO_OK, "%s", steno_errmsg());
    ref.offset -= 15;
    do_update(c, &kp, &ref, 1, 4, "det after long rollback");
    size_t bpt = steno_kv_bytes_per_token(c);
    CHECK(bpt == 2 * ROW * sizeof(float), "bytes per token %zu", bpt);
    steno_kv_free(c);

    /* plain f16: bytes per token and rounding */
    steno_kv_params pp = {STENO_KV_PLAIN, STENO_T_F16, NKV, HD, HD, 0, 0, 0, 4, 10, STENO_KV_Q_NONE, 0, 0, 0, 0, 0, 0, 0};
    CHECK(steno_kv_new(&pp, &c) == STENO_OK, "%s", steno_errmsg());
    CHECK(steno_kv_bytes_per_token(c) == (size_t)(2 * ROW * 2), "f16 bytes per token");
    memset(ref.version, 0xff, sizeof ref.version);
    ref.offset = 0;
    do_update(c, &pp, &ref, 7, 1, "plain f16");
    do_update(c, &pp, &ref, 3, 1, "plain f16");
    float k[NKV * MAXHD] = {0}, v[NKV * MAXHD] = {0};
    CHECK(steno_kv_update_and_fetch(c, k, v, 1, NULL) != STENO_OK && strstr(steno_errmsg(), "full"),
          "max_tokens not enforced: %s", steno_errmsg());
    CHECK(steno_kv_trim(c, 11) != STENO_OK, "plain trim beyond offset accepted");
    steno_kv_free(c);

    /* invalid parameters */
    steno_kv_params bad = {STENO_KV_ROTATING, STENO_T_F32, NKV, HD, HD, 4, 4, 0, 0, 0, STENO_KV_Q_NONE, 0, 0, 0, 0, 0, 0, 0};
    CHECK(steno_kv_new(&bad, &c) == STENO_E_INVALID_ARG, "keep >= max_size accepted");
    bad.keep = 0;
    bad.dtype = 99;
    CHECK(steno_kv_new(&bad, &c) == STENO_E_INVALID_ARG, "bad dtype accepted");
}

/* Conversion (quant_start > 0): a cache that holds dtype rows first and converts must end with
 * bytes identical to a cache quantized from the start, whatever rollbacks happened in between
 * (also across the conversion point and across the ring wrap); reset returns to dtype rows. */
static void conversion_exactness(int kind, int quant, int kbits, int vbits, int group, int rotate) {
    steno_kv_params a = {kind, STENO_T_F16, NKV, HD, HD, 9, 1, 4, 8, 0, quant, kbits, vbits, group, 0, 0, rotate, 0};
    steno_kv_params b = a;
    b.quant_start = 12;
    steno_kv_cache *ca, *cb;
    CHECK(steno_kv_new(&a, &ca) == STENO_OK && steno_kv_new(&b, &cb) == STENO_OK, "%s", steno_errmsg());
    float *k = calloc(64 * ROW, sizeof(float)), *v = calloc(64 * ROW, sizeof(float));
    int pos = 0, converted = 0;
    /* both caches see the same history: 10 tokens, trim 3, 6 tokens (conversion at 12 happens in
     * cb's next update), 1-token steps, a trim back below 12, a batch across the ring boundary */
    static const int plan[][2] = {{10, 0}, {0, 3}, {6, 0}, {1, 0}, {1, 0}, {0, 4}, {3, 0}, {1, 0}, {0, 2},
                                  {11, 0}, {1, 0}, {0, 3}, {2, 0}, {1, 0}};
    for (size_t i = 0; i < sizeof plan / sizeof plan[0]; i++) {
        if (plan[i][1]) {
            CHECK(steno_kv_trim(ca, plan[i][1]) == STENO_OK && steno_kv_trim(cb, plan[i][1]) == STENO_OK, "trim: %s",
                  steno_errmsg());
            pos -= plan[i][1];
            continue;
        }
        const int T = plan[i][0];
        for (int t = 0; t < T; t++)
            for (int e = 0; e < ROW; e++) {
                k[t * ROW + e] = val(pos + t, (int)i, e) * 0.01f;
                v[t * ROW + e] = -val(pos + t, (int)i, e) * 0.02f;
            }
        steno_kv_view va, vb;
        CHECK(steno_kv_update_and_fetch(ca, k, v, T, &va) == STENO_OK, "%s", steno_errmsg());
        CHECK(steno_kv_update_and_fetch(cb, k, v, T, &vb) == STENO_OK, "%s", steno_errmsg());
        pos += T;
        CHECK(va.kq != NULL, "quant_start 0: not quantized at once");
        /* converted at the first update that begins with >= 12 tokens; a later trim below 12 keeps it */
        converted |= pos - T >= 12;
        CHECK((vb.kq != NULL) == converted, "quant_start 12: quantized=%d after an update from %d", vb.kq != NULL,
              pos - T);
        if (!vb.kq) continue;
        CHECK(va.n_order == vb.n_order, "orders differ");
        for (int j = 0; j < va.n_order && j < vb.n_order; j++) {
            int sa = va.order ? va.order[j] : j, sb = vb.order ? vb.order[j] : j;
            CHECK(va.pos[sa] == vb.pos[sb], "positions differ");
            CHECK(memcmp(va.k + (size_t)sa * va.k_row_bytes, vb.k + (size_t)sb * vb.k_row_bytes, va.k_row_bytes) == 0 &&
                      memcmp(va.v + (size_t)sa * va.v_row_bytes, vb.v + (size_t)sb * vb.v_row_bytes, va.v_row_bytes) == 0,
                  "%s %s: converted row of position %d differs from the row quantized on arrival",
                  kind ? "rotating" : "plain", quant == STENO_KV_Q_AFFINE ? "affine" : "turbo", va.pos[sa]);
        }
    }
    CHECK(steno_kv_bytes_per_token(ca) == steno_kv_quant_bytes_per_token(&a), "bytes per token %zu vs %zu",
          steno_kv_bytes_per_token(ca), steno_kv_quant_bytes_per_token(&a));
    CHECK(steno_kv_bytes_per_token(ca) < (size_t)(2 * ROW * 2), "quantized rows are not smaller than f16");
    ca->ops->reset(ca);
    CHECK(!steno_kv_is_quantized(ca) || a.quant_start == 0, "reset");
    cb->ops->reset(cb);
    CHECK(!steno_kv_is_quantized(cb) && steno_kv_bytes_per_token(cb) == (size_t)2 * ROW * 2,
          "reset did not return to f16 rows");
    steno_kv_view vb;
    CHECK(steno_kv_update_and_fetch(cb, k, v, 2, &vb) == STENO_OK && vb.kq == NULL && steno_kv_offset(cb) == 2,
          "after reset the cache holds f16 rows again");
    printf("conversion %s %s k%d v%d%s: converted rows == rows quantized on arrival, across trims and the ring\n",
           kind ? "rotating" : "plain", quant == STENO_KV_Q_AFFINE ? "affine" : "turbo", kbits, vbits,
           rotate ? " rotated" : "");
    free(k);
    free(v);
    steno_kv_free(ca);
    steno_kv_free(cb);
}

static void quantized_runs(void) {
    static const struct { int quant, kbits, vbits, group, hd; } q[] = {
        {STENO_KV_Q_AFFINE, 8, 8, 32, 64}, {STENO_KV_Q_AFFINE, 4, 4, 64, 64}, {STENO_KV_Q_TURBO, 8, 4, 0, 32},
        {STENO_KV_Q_TURBO, 8, 3, 0, 64}, {STENO_KV_Q_TURBO, 4, 2, 0, 32}};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        HD = q[i].hd;
        g_quant = q[i].quant;
        g_kbits = q[i].kbits;
        g_vbits = q[i].vbits;
        g_group = q[i].group;
        g_qstart = 0;
        random_run(STENO_KV_PLAIN, STENO_T_F16, 0, 0, 0, 150, 1);
        random_run(STENO_KV_ROTATING, STENO_T_F16, 8, 3, 2, 300, 1);
        random_run(STENO_KV_ROTATING, STENO_T_F32, 6, 0, 4, 300, 0);
        g_qstart = 7; /* conversion in the middle of the run */
        random_run(STENO_KV_ROTATING, STENO_T_F16, 5, 1, 1, 200, 1);
        random_run(STENO_KV_PLAIN, STENO_T_F32, 0, 0, 0, 100, 1);
        g_sink = 3; /* attention sinks, kept through trims, re-adds and the conversion */
        random_run(STENO_KV_ROTATING, STENO_T_F16, 5, 2, 1, 200, 1);
        random_run(STENO_KV_PLAIN, STENO_T_F16, 0, 0, 0, 100, 1);
        g_sink = 0;
        conversion_exactness(STENO_KV_PLAIN, q[i].quant, q[i].kbits, q[i].vbits, q[i].group, 0);
        conversion_exactness(STENO_KV_ROTATING, q[i].quant, q[i].kbits, q[i].vbits, q[i].group, 0);
        conversion_exactness(STENO_KV_ROTATING, q[i].quant, q[i].kbits, q[i].vbits, q[i].group, 1);
        /* steno's defaults (rotated, centered keys, sinks): rows stay the encoding of their values
         * relative to the center through trims, re-adds, the conversion and the ring */
        g_rot = g_center = 1;
        g_sink = 3;
        g_qstart = 0;
        random_run(STENO_KV_PLAIN, STENO_T_F16, 0, 0, 0, 150, 1);
        random_run(STENO_KV_ROTATING, STENO_T_F16, 6, 1, 3, 300, 1);
        g_qstart = 7;
        random_run(STENO_KV_ROTATING, STENO_T_F32, 5, 0, 2, 200, 1);
        g_sink = 0;
        random_run(STENO_KV_PLAIN, STENO_T_F32, 0, 0, 0, 100, 1);
        g_rot = g_center = 0;
    }
    /* bad quantization parameters are refused with the reason */
    HD = 48;
    steno_kv_params bad = {STENO_KV_PLAIN, STENO_T_F16, NKV, HD, HD, 0, 0, 0, 0, 0, STENO_KV_Q_TURBO, 8, 3, 0, 0, 0, 0, 0};
    steno_kv_cache *c;
    CHECK(steno_kv_new(&bad, &c) == STENO_E_INVALID_ARG && strstr(steno_errmsg(), "head_dim"), "head_dim 48: %s",
          steno_errmsg());
    HD = 64;
    bad.head_dim_k = bad.head_dim_v = 64;
    bad.quant = STENO_KV_Q_AFFINE;
    bad.k_bits = bad.v_bits = 3;
    bad.group = 64;
    CHECK(steno_kv_new(&bad, &c) == STENO_E_INVALID_ARG && strstr(steno_errmsg(), "4 or 8 bits"), "3-bit affine: %s",
          steno_errmsg());
    HD = 4;
    g_quant = 0;
}

int main(void) {
    quantized_runs();
    deterministic_rollback();
    random_run(STENO_KV_PLAIN, STENO_T_F32, 0, 0, 0, 300, 1);
    random_run(STENO_KV_PLAIN, STENO_T_F16, 0, 0, 0, 200, 1);
    random_run(STENO_KV_ROTATING, STENO_T_F32, 8, 0, 0, 600, 1);
    random_run(STENO_KV_ROTATING, STENO_T_F32, 8, 3, 2, 600, 1);
    random_run(STENO_KV_ROTATING, STENO_T_F32, 16, 0, 6, 600, 1);
    random_run(STENO_KV_ROTATING, STENO_T_F16, 5, 1, 1, 400, 1);
    random_run(STENO_KV_ROTATING, STENO_T_F32, 1, 0, 0, 200, 1);
    random_run(STENO_KV_ROTATING, STENO_T_F32, 8, 0, 0, 600, 0);
    random_run(STENO_KV_ROTATING, STENO_T_F32, 8, 3, 2, 600, 0);
    random_run(STENO_KV_ROTATING, STENO_T_F16, 6, 2, 4, 600, 0);
    if (g_fail) {
        fprintf(stderr, "%d check(s) failed\n", g_fail);
        return 1;
    }
    printf("all passed\n");
    return 0;
}
