/* test_llm_rows.c — row operations of continuous batching against solo caches, byte for byte.
 *
 * steno's batch is a set of rows, each a context with its own KV caches, stepped together by
 * steno_llm_eval_batch (docs/LLM.md "Batched evaluation"). The seeds' row operations map to:
 *   merge    a sequence prefilled on its own joins the batch: its state (steno_llm_state_save)
 *            is loaded into a free row;
 *   filter   a finished row leaves: it is simply not fed again (the others are untouched);
 *   extract  one row back to a solo cache: its state loaded into a fresh context;
 *   trim     rollback of one row (steno_llm_rollback), the others untouched.
 * A fixed-seed random run (6 rows) interleaves these with batched steps that feed every row 1..6
 * tokens at once (rows at different lengths, so rings wrap and quantized caches convert at
 * different steps), while a shadow context per sequence receives the same tokens alone
 * (steno_llm_eval). After every operation the touched rows' states must equal their shadows'
 * byte for byte, and every batched step's logits must equal the shadows' bit for bit.
 * Kinds: stories260K plain and rotating (--max-kv-size 24 --keep 2, reserve 4: wraps within a few
 * steps); SmolLM2 with q8 caches quantized from token 12 and TurboQuant 3-bit from token 20 (rows
 * cross that point at different steps; a merged or extracted row converts at the same step as its
 * shadow). Under ASan+UBSan: stories260K's two kinds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steno_llm.h"
#include "test_util.h"
#include "rng.h"

enum { ROWS = 6 };

static uint32_t g_rng = 99;
static int rnd(int n) { return (int)((rng_lcg_nr(&g_rng) >> 8) % (uint32_t)n); }

typedef struct {
    steno_llm_ctx *row, *shadow; /* row NULL: free */
    int seq;
} slot;

static steno_llm_ctx *ctx_new(const steno_llm *m, const steno_llm_ctx_params *cp) {
    steno_llm_ctx *c = NULL;
    if (steno_llm_ctx_new(m, cp, &c) != STENO_OK) {
        fprintf(stderr, "FAIL: context: %s\n", steno_errmsg());
        exit(1);
    }
    return c;
}

/* 1 when a's and b's states are the same bytes. */
static int same_state(const steno_llm_ctx *a, const steno_llm_ctx *b) {
    const size_t na = steno_llm_state_save(a, NULL, 0), nb = steno_llm_state_save(b, NULL, 0);
    if (na != nb) return 0;
    uint8_t *x = malloc(na), *y = malloc(nb);
    const int eq = steno_llm_state_save(a, x, na) == na && steno_llm_state_save(b, y, nb) == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return eq;
}

/* dst := src through the state bytes (merge and extract). */
static int copy_state(const steno_llm_ctx *src, steno_llm_ctx *dst) {
    const size_t n = steno_llm_state_save(src, NULL, 0);
    uint8_t *b = malloc(n);
    const int ok = b && steno_llm_state_save(src, b, n) == n && steno_llm_state_load(dst, b, n) == STENO_OK;
    free(b);
    return ok;
}

static void run(const char *name, const steno_llm *m, steno_llm_ctx_params cp, int n_ctx_cap, int n_ops) {
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    const int nv = info.n_vocab;
    steno_llm_ctx_params ep = cp;
    ep.n_batch = ROWS * 6;
    ep.n_threads = 2;
    steno_llm_ctx *exec = ctx_new(m, &ep);
    slot sl[ROWS] = {{0}};
    float *lg_row[ROWS], *lg_sh = malloc(sizeof(float) * (size_t)nv);
    for (int r = 0; r < ROWS; r++) lg_row[r] = malloc(sizeof(float) * (size_t)nv);
    int merges = 0, filters = 0, extracts = 0, trims = 0, trims_refused = 0, steps = 0, next_seq = 0, quantized = 0;
    int tok[ROWS][8];
    int longest = 0;
    for (int it = 0; it < n_ops; it++) {
        const int op = rnd(10);
        const int r = rnd(ROWS);
        if (op < 2 && !sl[r].row) { /* merge: prefill alone, then join */
            sl[r].shadow = ctx_new(m, &cp);
            sl[r].row = ctx_new(m, &cp);
            sl[r].seq = next_seq++;
            const int n = 1 + rnd(12);
            int p[12];
            for (int i = 0; i < n; i++) p[i] = 1 + rnd(nv - 1);
            CHECK(steno_llm_eval(sl[r].shadow, p, n, NULL, 0) == STENO_OK, "%s: %s", name, steno_errmsg());
            CHECK(copy_state(sl[r].shadow, sl[r].row), "%s: merge: %s", name, steno_errmsg());
            CHECK(same_state(sl[r].row, sl[r].shadow), "%s step %d: merged row %d differs from its solo cache", name, it, r);
            merges++;
        } else if (op == 2 && sl[r].row) { /* filter: the row leaves */
            steno_llm_ctx_free(sl[r].row);
            steno_llm_ctx_free(sl[r].shadow);
            sl[r].row = sl[r].shadow = NULL;
            filters++;
        } else if (op == 3 && sl[r].row) { /* extract: back to a solo cache, which then goes on alone */
            steno_llm_ctx *solo = ctx_new(m, &cp);
            CHECK(copy_state(sl[r].row, solo), "%s: extract: %s", name, steno_errmsg());
            CHECK(same_state(solo, sl[r].shadow), "%s step %d: extracted row %d differs from its solo cache", name, it, r);
            const int t1 = 1 + rnd(nv - 1);
            float *a = malloc(sizeof(float) * (size_t)nv);
            CHECK(steno_llm_eval(solo, &t1, 1, a, 0) == STENO_OK && steno_llm_eval(sl[r].shadow, &t1, 1, lg_sh, 0) == STENO_OK,
                  "%s: %s", name, steno_errmsg());
            CHECK(!memcmp(a, lg_sh, sizeof(float) * (size_t)nv), "%s step %d: the extracted row's next logits differ", name, it);
            /* keep the row in step with its shadow */
            CHECK(steno_llm_eval(sl[r].row, &t1, 1, NULL, 0) == STENO_OK, "%s: %s", name, steno_errmsg());
            free(a);
            steno_llm_ctx_free(solo);
            extracts++;
        } else if ((op == 4 || op == 5) && sl[r].row) { /* trim one row */
            const int k = rnd(14); /* beyond what a rotating row retains at times: refused alike */
            const int n_past = steno_llm_n_past(sl[r].row);
            const steno_status a = k <= n_past ? steno_llm_rollback(sl[r].row, k) : STENO_E_INVALID_ARG;
            const steno_status b = k <= n_past ? steno_llm_rollback(sl[r].shadow, k) : STENO_E_INVALID_ARG;
            CHECK(a == b, "%s step %d: rollback(%d) of row %d: %d, of its solo cache: %d", name, it, k, r, a, b);
            if (a == STENO_OK) trims++;
            else trims_refused++;
            CHECK(same_state(sl[r].row, sl[r].shadow), "%s step %d: trimmed row %d differs from its solo cache", name, it, r);
        } else { /* a batched step: every row 1..6 new tokens, each shadow the same alone */
            steno_llm_seq seqs[ROWS];
            int who[ROWS], ns = 0, used = 0;
            for (int k = 0; k < ROWS; k++) {
                if (!sl[k].row) continue;
                const int T = 1 + rnd(6);
                if (steno_llm_n_past(sl[k].row) + T >= n_ctx_cap) continue;
                for (int i = 0; i < T; i++) tok[k][i] = 1 + rnd(nv - 1);
                seqs[ns] = (steno_llm_seq){sl[k].row, tok[k], T, lg_row[k], 0};
                who[ns++] = k;
                used += T;
            }
            if (!ns) continue;
            CHECK(steno_llm_eval_batch(exec, seqs, ns) == STENO_OK, "%s: batch: %s", name, steno_errmsg());
            for (int i = 0; i < ns; i++) {
                slot *s = &sl[who[i]];
                CHECK(steno_llm_eval(s->shadow, seqs[i].tokens, seqs[i].n_tokens, lg_sh, 0) == STENO_OK, "%s: %s", name,
                      steno_errmsg());
                CHECK(!memcmp(lg_row[who[i]], lg_sh, sizeof(float) * (size_t)nv),
                      "%s step %d: row %d (sequence %d) logits differ from its solo cache's", name, it, who[i], s->seq);
                CHECK(same_state(s->row, s->shadow), "%s step %d: row %d differs from its solo cache after a step",
                      name, it, who[i]);
                if (steno_llm_n_past(s->row) > longest) longest = steno_llm_n_past(s->row);
            }
            (void)used;
            steps++;
        }
    }
    for (int r = 0; r < ROWS; r++) {
        if (sl[r].row) {
            size_t qb, pb;
            steno_llm_kv_quant_usage(sl[r].row, &qb, &pb);
            quantized += qb != pb && steno_llm_n_past(sl[r].row) > cp.kv_quant_start;
        }
        steno_llm_ctx_free(sl[r].row);
        steno_llm_ctx_free(sl[r].shadow);
        free(lg_row[r]);
    }
    printf("%-34s %d batched steps, %d merges, %d filters, %d extracts, %d trims (%d refused alike), %d rows "
           "quantized at the end, longest row %d tokens: rows equal their solo caches byte for byte\n",
           name, steps, merges, filters, extracts, trims, trims_refused, quantized, longest);
    free(lg_sh);
    steno_llm_ctx_free(exec);
}

int main(void) {
    const char *san = getenv("STENO_SANITIZE");
    const int sanitize = san && !strcmp(san, "1");
    char path[4200];
    snprintf(path, sizeof path, "%s/models/stories260K/stories260K.bin", test_shared_dir());
    steno_llm *m;
    if (steno_llm_load(path, NULL, &m) != STENO_OK) {
        fprintf(stderr, "FAIL: %s\n", steno_errmsg());
        return 1;
    }
    steno_llm_ctx_params cp = steno_llm_ctx_default_params();
    cp.n_threads = 1;
    cp.n_batch = 8;
    cp.n_ctx = 256;
    run("stories260K plain", m, cp, 250, 160);
    steno_llm_ctx_params rp = cp;
    rp.max_kv_size = 24;
    rp.keep = 2;
    rp.kv_reserve = 4;
    run("stories260K rotating(24, keep 2)", m, rp, 250, 160);
    steno_llm_free(m);
    if (!sanitize) {
        if (steno_llm_resolve("smollm2", path, sizeof path) != STENO_OK || steno_llm_load(path, NULL, &m) != STENO_OK) {
            CHECK(0, "%s (the test script fetches it: bash scripts/fetch_llm_models.sh smollm2)", steno_errmsg());
        } else {
            steno_llm_ctx_params qp = cp;
            qp.kv_quant = STENO_KV_QUANT_Q8;
            qp.kv_quant_start = 12;
            run("smollm2 q8 from token 12", m, qp, 250, 50);
            qp.kv_quant = STENO_KV_QUANT_TQ3;
            qp.kv_quant_start = 20;
            run("smollm2 tq3 from token 20", m, qp, 250, 50);
            steno_llm_free(m);
        }
    }
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
