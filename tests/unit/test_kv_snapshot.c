/* test_kv_snapshot.c — steno_kv_snapshot / steno_kv_restore (the prompt cache's entries).
 *
 * For every cache kind (plain; rotating with keep and reserve, through ring wraps; affine and
 * TurboQuant storage with sinks, centering and rotation, snapshots taken before, at and after the
 * quantization point), a fixed-seed random run of updates (1..3 windows at once) and rollbacks
 * drives cache A; at random steps A is snapshotted and restored into B, which held something else
 * (a larger ring, or quantized rows while A's are not). From then on both get the same
 * operations and must stay identical: the same offset, the same can_trim answers and min offset,
 * and views with the same positions in the same temporal order, the same row bytes, key center
 * and sinks. Damaged snapshots (truncated, bytes flipped, another kind or format) must be refused
 * with STENO_E_FORMAT, leaving an empty, usable cache — never a crash (also run under ASan). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/quant/quant.h"
#include "llm/kvcache.h"
#include "test_util.h"
#include "rng.h"

static uint32_t g_seed = 11;
static int rnd(int n) { return (int)((rng_lcg_ansi(&g_seed) >> 8) % (uint32_t)n); }
static float frnd(void) { return (float)rnd(20001) / 1000.0f - 10.0f; }

enum { NKV = 2 };

static steno_status update(steno_kv_cache *c, const float *k, const float *v, int T, steno_kv_view *vw) {
    return steno_kv_update_and_fetch(c, k, v, T, vw);
}

/* The bytes attention reads, in temporal order. */
static int same_view(const steno_kv_cache *a, const steno_kv_view *va, const steno_kv_cache *b, const steno_kv_view *vb,
                     const char *ctx) {
    const int na = va->order ? va->n_order : va->n_slots, nb = vb->order ? vb->n_order : vb->n_slots;
    if (na != nb || va->k_row_bytes != vb->k_row_bytes || va->v_row_bytes != vb->v_row_bytes) {
        fprintf(stderr, "%s: %d vs %d rows, row bytes %zu/%zu vs %zu/%zu\n", ctx, na, nb, va->k_row_bytes,
                va->v_row_bytes, vb->k_row_bytes, vb->v_row_bytes);
        return 0;
    }
    for (int i = 0; i < na; i++) {
        const int sa = va->order ? va->order[i] : i, sb = vb->order ? vb->order[i] : i;
        if (va->pos[sa] != vb->pos[sb] || memcmp(va->k + (size_t)sa * va->k_row_bytes, vb->k + (size_t)sb * vb->k_row_bytes,
                                                 va->k_row_bytes) != 0 ||
            memcmp(va->v + (size_t)sa * va->v_row_bytes, vb->v + (size_t)sb * vb->v_row_bytes, va->v_row_bytes) != 0) {
            fprintf(stderr, "%s: row %d (position %d vs %d) differs\n", ctx, i, va->pos[sa], vb->pos[sb]);
            return 0;
        }
    }
    if ((va->kq != NULL) != (vb->kq != NULL) || (va->k_center != NULL) != (vb->k_center != NULL) ||
        va->n_sink != vb->n_sink)
        return 0;
    const steno_kv_params *p = &a->p;
    if (va->k_center && memcmp(va->k_center, vb->k_center, sizeof(float) * NKV * (size_t)p->head_dim_k) != 0) return 0;
    if (va->n_sink && (memcmp(va->sink_k, vb->sink_k, sizeof(float) * (size_t)va->n_sink * NKV * p->head_dim_k) != 0 ||
                       memcmp(va->sink_v, vb->sink_v, sizeof(float) * (size_t)va->n_sink * NKV * p->head_dim_v) != 0))
        return 0;
    (void)b;
    return 1;
}

static int g_restores, g_steps;

static void run(steno_kv_params kp, const char *name, int iters) {
    steno_kv_cache *a, *b;
    CHECK(steno_kv_new(&kp, &a) == STENO_OK, "%s: %s", name, steno_errmsg());
    CHECK(steno_kv_new(&kp, &b) == STENO_OK, "%s: %s", name, steno_errmsg());
    const int row = NKV * kp.head_dim_k, W = kp.kind == STENO_KV_ROTATING ? kp.max_size : 16;
    float *k = malloc(sizeof(float) * (size_t)row * 3 * (size_t)W), *v = malloc(sizeof(float) * (size_t)row * 3 * (size_t)W);
    /* B first holds a long unrelated history (a larger ring when rotating; quantized rows when A's
     * snapshot will not be) */
    for (int t = 0; t < 3 * W * row; t++) k[t] = v[t] = frnd();
    CHECK(update(b, k, v, 3 * W, NULL) == STENO_OK, "%s: %s", name, steno_errmsg());
    int synced = 0, restores = 0;
    char ctx[160];
    for (int it = 0; it < iters; it++) {
        snprintf(ctx, sizeof ctx, "%s step %d", name, it);
        const int op = rnd(12);
        if (op < 8) {
            const int T = op < 5 ? 1 : 1 + rnd(3 * W);
            for (int t = 0; t < T * row; t++) k[t] = frnd(), v[t] = frnd();
            if (kp.kind == STENO_KV_PLAIN && steno_kv_offset(a) + T > 2000) continue;
            steno_kv_view va, vb;
            CHECK(update(a, k, v, T, &va) == STENO_OK, "%s: %s", ctx, steno_errmsg());
            if (synced) {
                CHECK(update(b, k, v, T, &vb) == STENO_OK, "%s: %s", ctx, steno_errmsg());
                CHECK(same_view(a, &va, b, &vb, ctx), "%s: views differ after an update of %d", ctx, T);
                g_steps++;
            }
        } else if (op < 10) {
            const int n = rnd(kp.reserve + 8);
            const int can = steno_kv_can_trim(a, n);
            if (synced) {
                CHECK(can == steno_kv_can_trim(b, n), "%s: can_trim(%d) differs", ctx, n);
                CHECK(steno_kv_min_offset(a) == steno_kv_min_offset(b), "%s: min offset %d vs %d", ctx,
                      steno_kv_min_offset(a), steno_kv_min_offset(b));
            }
            if (can) {
                CHECK(steno_kv_trim(a, n) == STENO_OK, "%s: %s", ctx, steno_errmsg());
                if (synced) CHECK(steno_kv_trim(b, n) == STENO_OK, "%s: %s", ctx, steno_errmsg());
            }
        } else {
            const size_t n = steno_kv_snapshot(a, NULL);
            uint8_t *buf = malloc(n);
            CHECK(steno_kv_snapshot(a, buf) == n, "%s: snapshot size changed", ctx);
            CHECK(steno_kv_restore(b, buf, n) == STENO_OK, "%s: restore: %s", ctx, steno_errmsg());
            CHECK(steno_kv_offset(b) == steno_kv_offset(a), "%s: offset %d vs %d", ctx, steno_kv_offset(b),
                  steno_kv_offset(a));
            CHECK(steno_kv_is_quantized(b) == steno_kv_is_quantized(a), "%s: quantization state differs", ctx);
            /* the restored cache snapshots to the same bytes */
            uint8_t *again = malloc(n);
            CHECK(steno_kv_snapshot(b, NULL) == n && steno_kv_snapshot(b, again) == n && memcmp(buf, again, n) == 0,
                  "%s: snapshot of the restored cache differs", ctx);
            free(again);
            free(buf);
            synced = 1;
            restores++;
        }
    }
    printf("%-44s %4d restores, offset %5d, quantized %d, min offset %d\n", name, restores, steno_kv_offset(a),
           steno_kv_is_quantized(a), steno_kv_min_offset(a));
    g_restores += restores;
    free(k);
    free(v);
    steno_kv_free(a);
    steno_kv_free(b);
}

/* Damaged and foreign snapshots are refused with STENO_E_FORMAT and leave an empty cache. */
static void damaged(void) {
    steno_kv_params rp = {STENO_KV_ROTATING, STENO_T_F16, NKV, 32, 32, 16, 2, 4, 0, 0,
                          STENO_KV_Q_AFFINE, 4, 4, 32, 8, 2, 1, 1};
    steno_kv_params pp = rp;
    pp.kind = STENO_KV_PLAIN;
    pp.quant = STENO_KV_Q_NONE;
    steno_kv_cache *a, *b, *plain;
    CHECK(steno_kv_new(&rp, &a) == STENO_OK && steno_kv_new(&rp, &b) == STENO_OK && steno_kv_new(&pp, &plain) == STENO_OK,
          "%s", steno_errmsg());
    float k[64 * NKV * 32], v[64 * NKV * 32];
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) k[i] = v[i] = frnd();
    CHECK(update(a, k, v, 40, NULL) == STENO_OK, "%s", steno_errmsg());
    const size_t n = steno_kv_snapshot(a, NULL);
    uint8_t *buf = malloc(n), *bad = malloc(n);
    steno_kv_snapshot(a, buf);
    int refused = 0, accepted = 0;
    for (size_t cut = 0; cut < n; cut += 1 + n / 97) {
        CHECK(steno_kv_restore(b, buf, cut) == STENO_E_FORMAT, "truncated to %zu of %zu bytes: accepted", cut, n);
        CHECK(steno_kv_offset(b) == 0, "a refused restore left %d tokens", steno_kv_offset(b));
        refused++;
    }
    CHECK(steno_kv_restore(plain, buf, n) == STENO_E_FORMAT, "a rotating quantized snapshot restored into a plain cache");
    /* every header byte flipped in turn: refused, or (a flag that changes nothing checked) accepted
     * as a valid cache; either way no crash and a usable cache */
    for (size_t i = 0; i < 64 && i < n; i++) {
        memcpy(bad, buf, n);
        bad[i] ^= 0x5a;
        steno_status st = steno_kv_restore(b, bad, n);
        if (st == STENO_OK) accepted++;
        else {
            CHECK(st == STENO_E_FORMAT, "byte %zu flipped: status %d", i, st);
            refused++;
        }
        CHECK(update(b, k, v, 3, NULL) == STENO_OK, "byte %zu flipped: the cache is not usable: %s", i, steno_errmsg());
    }
    printf("damaged snapshots: %d refused, %d header flips accepted as valid caches\n", refused, accepted);
    free(buf);
    free(bad);
    steno_kv_free(a);
    steno_kv_free(b);
    steno_kv_free(plain);
}

/* steno_kv_bytes_at predicts what the cache allocates; steno_kv_release gives it back. */
static void budget_and_release(void) {
    const steno_kv_params ps[] = {
        {STENO_KV_PLAIN, STENO_T_F16, NKV, 32, 32, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {STENO_KV_ROTATING, STENO_T_F16, NKV, 32, 32, 16, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {STENO_KV_PLAIN, STENO_T_F16, NKV, 32, 32, 0, 0, 0, 16, 0, STENO_KV_Q_AFFINE, 4, 4, 32, 20, 2, 1, 1},
        {STENO_KV_ROTATING, STENO_T_F16, NKV, 64, 64, 12, 0, 6, 0, 0, STENO_KV_Q_TURBO, 4, 2, 0, 0, 3, 1, 1}};
    float k[5 * NKV * 64], v[5 * NKV * 64];
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) k[i] = v[i] = frnd();
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
        steno_kv_cache *c;
        CHECK(steno_kv_new(&ps[i], &c) == STENO_OK, "%s", steno_errmsg());
        const size_t empty = c->ops->nbytes(c);
        int n = 0;
        for (int it = 0; it < 40; it++) {
            const int T = 1 + rnd(5);
            CHECK(update(c, k, v, T, NULL) == STENO_OK, "%s", steno_errmsg());
            n += T;
            CHECK(c->ops->nbytes(c) <= steno_kv_bytes_at(&ps[i], n, 5), "params %zu at %d tokens: %zu bytes allocated, "
                  "more than the %zu predicted", i, n, c->ops->nbytes(c), steno_kv_bytes_at(&ps[i], n, 5));
        }
        CHECK(steno_kv_release(c) == STENO_OK && steno_kv_offset(c) == 0 && c->ops->nbytes(c) <= empty,
              "params %zu: release left %d tokens, %zu bytes (new: %zu)", i, steno_kv_offset(c), c->ops->nbytes(c), empty);
        CHECK(update(c, k, v, 3, NULL) == STENO_OK && steno_kv_offset(c) == 3, "params %zu: unusable after release", i);
        steno_kv_free(c);
    }
    printf("steno_kv_bytes_at bounds the allocation of 4 kinds over 40 updates; release returns it\n");
}

int main(void) {
    const int iters = getenv("STENO_SANITIZE") ? 150 : 400;
    /* kind, dtype, n_kv_heads, hd_k, hd_v, max_size, keep, reserve, step, max_tokens,
     * quant, k_bits, v_bits, group, quant_start, sink, rotate, center */
    run((steno_kv_params){STENO_KV_PLAIN, STENO_T_F16, NKV, 8, 8, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        "plain f16", iters);
    run((steno_kv_params){STENO_KV_PLAIN, STENO_T_F32, NKV, 8, 8, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        "plain f32", iters);
    run((steno_kv_params){STENO_KV_ROTATING, STENO_T_F16, NKV, 8, 8, 12, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        "rotating W12 reserve5", iters);
    run((steno_kv_params){STENO_KV_ROTATING, STENO_T_F32, NKV, 8, 8, 10, 3, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        "rotating W10 keep3 reserve2", iters);
    run((steno_kv_params){STENO_KV_PLAIN, STENO_T_F16, NKV, 32, 32, 0, 0, 0, 8, 0, STENO_KV_Q_AFFINE, 4, 4, 32, 20, 2, 1, 1},
        "plain affine q4, quantized from 20", iters);
    run((steno_kv_params){STENO_KV_PLAIN, STENO_T_F16, NKV, 64, 64, 0, 0, 0, 8, 0, STENO_KV_Q_TURBO, 8, 3, 0, 0, 4, 1, 1},
        "plain turboquant k8 v3", iters);
    run((steno_kv_params){STENO_KV_ROTATING, STENO_T_F16, NKV, 32, 32, 16, 2, 4, 0, 0, STENO_KV_Q_AFFINE, 8, 8, 32, 30, 2, 0, 1},
        "rotating W16 affine q8, quantized from 30", iters);
    run((steno_kv_params){STENO_KV_ROTATING, STENO_T_F16, NKV, 64, 64, 12, 0, 6, 0, 0, STENO_KV_Q_TURBO, 4, 2, 0, 10, 3, 1, 1},
        "rotating W12 turboquant k4 v2, from 10", iters);
    damaged();
    budget_and_release();
    printf("%d restores, %d synced steps compared\n", g_restores, g_steps);
    CHECK(g_restores > 20 && g_steps > 200, "too little was compared");
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
