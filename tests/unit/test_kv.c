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
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/quant.h"
#include "llm/kvcache.h"

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
#define HD 4
#define ROW (NKV * HD)
#define MAXP 4096

static uint32_t g_seed = 7;
static int rnd(int n) {
    g_seed = g_seed * 1103515245u + 12345u;
    return (int)((g_seed >> 8) % (uint32_t)n);
}

/* The value written for position p at version v: exact in f32 (and in f16 for small p, v). */
static float val(int p, int v, int i) { return (float)(p * 8 + (v % 8)) + (float)i * 0.125f; }

typedef struct {
    int version[MAXP]; /* write version of each position, -1 = not written */
    int offset;
} reference;

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

static void random_run(int kind, int dtype, int W, int keep, int reserve, int iters, int batches) {
    steno_kv_params kp = {kind, dtype, NKV, HD, HD, W, keep, reserve, 8, 0};
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
        printf("rotating W=%d keep=%d reserve=%d %s%s: %d steps checked, offset %d, %d rollbacks, %d refused\n", W,
               keep, reserve, dtype == STENO_T_F16 ? "f16" : "f32", batches ? " batches" : "", iters, ref.offset,
               trims_ok, trims_refused);
    steno_kv_free(c);
}

static void deterministic_rollback(void) {
    const int W = 8, keep = 2, reserve = 3;
    steno_kv_params kp = {STENO_KV_ROTATING, STENO_T_F32, NKV, HD, HD, W, keep, reserve, 0, 0};
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
    steno_kv_params pp = {STENO_KV_PLAIN, STENO_T_F16, NKV, HD, HD, 0, 0, 0, 4, 10};
    CHECK(steno_kv_new(&pp, &c) == STENO_OK, "%s", steno_errmsg());
    CHECK(steno_kv_bytes_per_token(c) == 2 * ROW * 2, "f16 bytes per token");
    memset(ref.version, 0xff, sizeof ref.version);
    ref.offset = 0;
    do_update(c, &pp, &ref, 7, 1, "plain f16");
    do_update(c, &pp, &ref, 3, 1, "plain f16");
    float k[ROW] = {0}, v[ROW] = {0};
    CHECK(steno_kv_update_and_fetch(c, k, v, 1, NULL) != STENO_OK && strstr(steno_errmsg(), "full"),
          "max_tokens not enforced: %s", steno_errmsg());
    CHECK(steno_kv_trim(c, 11) != STENO_OK, "plain trim beyond offset accepted");
    steno_kv_free(c);

    /* invalid parameters */
    steno_kv_params bad = {STENO_KV_ROTATING, STENO_T_F32, NKV, HD, HD, 4, 4, 0, 0, 0};
    CHECK(steno_kv_new(&bad, &c) == STENO_E_INVALID_ARG, "keep >= max_size accepted");
    bad.keep = 0;
    bad.dtype = 99;
    CHECK(steno_kv_new(&bad, &c) == STENO_E_INVALID_ARG, "bad dtype accepted");
}

int main(void) {
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
