/* test_llm_batch.c — batch invariance of steno_llm_eval_batch (continuous batching's step).
 *
 * For stories260K, SmolLM2 and Gemma 3, 16 prompts of different lengths are each decoded greedily
 * for GEN tokens on their own (steno_llm_eval on a fresh context), recording every step's token and
 * a 64-bit hash of its logits' bytes. Prompts 0..7 are fixed-seed random token ids (7..36 tokens);
 * prompt 8 + i is a chat's next turn: prompt i, the GEN tokens its solo run generated, and 2..6
 * new tokens. Then the same 16 go through a simulated continuous-batching run: 8 rows, prompt i
 * arriving at step 2i,
 * prompts prefilled in chunks mixed into the decode steps (cut at multiples of CHUNK, as the solo
 * run's steno_llm_eval with n_batch = CHUNK cuts them: a quantized cache's key center comes from
 * its first update, so the cut is part of the sequence's definition), a row leaving
 * when its sequence is done and the next arrival taking the row over (its caches reset, so a row
 * is reused by sequences of different lengths). Each sequence's tokens and logits must be
 * bit-identical to its solo run, for every cache kind (plain, rotating ring after a wrap,
 * TurboQuant 3-bit, Q8 affine; Gemma 3 the first three, stories260K the first two: its head_dim 8
 * cannot be quantized) and, for SmolLM2 and Gemma 3, the plain cache under --compute fast (the
 * fast path's kernels); with STENO_TEST_FULL=1 also Q4 affine, TurboQuant 4- and 2-bit and
 * Gemma 3's Q8 — every kind steno has; for 1 and 2 threads (the cache-on pass with 1 unless STENO_TEST_FULL=1),
 * and with the prompt cache off and on: on, a row
 * that finishes saves its state (prompt_cache_store) and an arriving prompt starts from the entry
 * sharing the longest prefix (prompt_cache_restore) — each next turn restores its earlier turn's
 * state and evaluates only its new tokens (the hits are counted and printed), and must still be
 * bit-identical to its solo run from scratch. (Every prompt is at least one chunk long, so a
 * restored quantized cache took its key center from the same first CHUNK tokens as the solo run.)
 * Models come from the cache (scripts/fetch_llm_models.sh); a missing one is a FAILURE. Under
 * ASan+UBSan (STENO_SANITIZE=1): stories260K's two kinds and SmolLM2's tq3 (cache on), 1 thread.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/prompt_cache.h"
#include "steno_llm.h"

#include "test_util.h"
#include "rng.h"

#define N_PROMPTS 16
#define N_ROWS 8
#define GEN 8
#define CHUNK 7

typedef struct {
    int n;
    int tok[64];
} prompt;

typedef struct {
    int tokens[GEN];
    uint64_t hash[GEN];
} trace;

static uint64_t fnv(const float *x, size_t n) {
    const unsigned char *p = (const unsigned char *)x;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

typedef struct {
    const char *name;
    steno_kv_quant quant;
    int max_kv_size, keep;
    steno_llm_compute compute;
} kind;

static steno_llm_ctx *new_ctx(const steno_llm *m, const kind *k, int threads, int n_batch) {
    steno_llm_ctx_params p = steno_llm_ctx_default_params();
    p.n_threads = threads;
    p.n_ctx = 512;
    p.n_batch = n_batch;
    p.kv_quant = k->quant;
    p.max_kv_size = k->max_kv_size;
    p.keep = k->keep;
    p.compute = k->compute;
    if (k->max_kv_size) p.kv_reserve = 4; /* a ring of 28 + 4 + CHUNK - 1 slots: the longer prompts wrap it */
    steno_llm_ctx *c = NULL;
    if (steno_llm_ctx_new(m, &p, &c) != STENO_OK) fprintf(stderr, "FAIL: context: %s\n", steno_errmsg());
    return c;
}

static void solo(const steno_llm *m, const kind *k, int threads, const prompt *pr, trace *tr, int nv) {
    steno_llm_ctx *c = new_ctx(m, k, threads, CHUNK);
    float *lg = malloc(sizeof(float) * (size_t)nv);
    if (!c || !lg) exit(1);
    int ok = steno_llm_eval(c, pr->tok, pr->n, lg, 0) == STENO_OK;
    for (int s = 0; ok && s < GEN; s++) {
        tr->hash[s] = fnv(lg, (size_t)nv);
        tr->tokens[s] = argmax(lg, nv);
        if (s + 1 < GEN) ok = steno_llm_eval(c, &tr->tokens[s], 1, lg, 0) == STENO_OK;
    }
    CHECK(ok, "solo run: %s", steno_errmsg());
    free(lg);
    steno_llm_ctx_free(c);
}

typedef struct {
    int seq;      /* the prompt it serves, -1: free */
    int fed;      /* prompt tokens evaluated */
    int gen;      /* tokens generated */
    int next;     /* the token to evaluate next (decode) */
    float *lg;
    steno_llm_ctx *ctx;
    int hold[128]; /* the tokens in ctx's caches */
    int nhold;
} row;

/* Returns the number of sequences whose trace differs from the solo one. */
static int batched(const steno_llm *m, const kind *k, int threads, const prompt *pr, const trace *ref, int nv,
                   int use_cache, int *steps_out, int *max_rows_out, int *hits_out) {
    steno_llm_ctx *exec = new_ctx(m, k, threads, N_ROWS + 2 * CHUNK);
    static row rows[N_ROWS];
    for (int r = 0; r < N_ROWS; r++) {
        rows[r] = (row){-1, 0, 0, 0, malloc(sizeof(float) * (size_t)nv), new_ctx(m, k, 1, 256), {0}, 0};
        if (!rows[r].lg || !rows[r].ctx || !exec) exit(1);
    }
    prompt_cache *pc = NULL;
    if (use_cache) {
        char cfg[4096];
        steno_llm_state_config(rows[0].ctx, cfg, sizeof cfg);
        const prompt_cache_params pp = {(size_t)1 << 30, NULL, NULL, cfg, 4, NULL, NULL};
        if (!(pc = prompt_cache_new(&pp))) exit(1);
    }
    int hits = 0;
    trace got[N_PROMPTS];
    memset(got, 0, sizeof got);
    int next_arrival = 0, finished = 0, step = 0, max_rows = 0, failed = 0;
    while (finished < N_PROMPTS && step < 10000) {
        /* arrivals: prompt i is ready from step 2i and takes the first free row */
        for (int r = 0; r < N_ROWS && next_arrival < N_PROMPTS && 2 * next_arrival <= step; r++)
            if (rows[r].seq < 0) {
                row *w = &rows[r];
                steno_llm_reset(w->ctx);
                w->seq = next_arrival++;
                w->fed = w->gen = w->nhold = 0;
                const prompt *p = &pr[w->seq];
                const int c = pc ? prompt_cache_restore(pc, p->tok, p->n - 1, 0, w->ctx) : 0;
                if (c > 0) {
                    memcpy(w->hold, p->tok, sizeof(int) * (size_t)c);
                    w->fed = w->nhold = c;
                    hits++;
                }
            }
        steno_llm_seq seqs[N_ROWS];
        int who[N_ROWS], ns = 0, budget = 2 * CHUNK; /* two whole chunks per step */
        for (int r = 0; r < N_ROWS; r++) {
            row *w = &rows[r];
            if (w->seq < 0) continue;
            const prompt *p = &pr[w->seq];
            if (w->fed < p->n) {
                /* prefill: the next chunk, cut at multiples of CHUNK as steno_llm_eval with
                 * n_batch = CHUNK cuts it, whole or not at all this step */
                int end = (w->fed / CHUNK + 1) * CHUNK;
                if (end > p->n) end = p->n;
                const int n = end - w->fed;
                if (n > budget) continue;
                budget -= n;
                seqs[ns] = (steno_llm_seq){w->ctx, p->tok + w->fed, n, end == p->n ? w->lg : NULL, 0};
                memcpy(w->hold + w->nhold, p->tok + w->fed, sizeof(int) * (size_t)n);
                w->nhold += n;
                w->fed = end;
            } else {
                seqs[ns] = (steno_llm_seq){w->ctx, &w->next, 1, w->lg, 0};
                w->hold[w->nhold++] = w->next;
            }
            who[ns++] = r;
        }
        if (ns > max_rows) max_rows = ns;
        step++;
        if (ns == 0) continue;
        if (steno_llm_eval_batch(exec, seqs, ns) != STENO_OK) {
            CHECK(0, "eval_batch: %s", steno_errmsg());
            failed = N_PROMPTS;
            break;
        }
        for (int i = 0; i < ns; i++) {
            row *w = &rows[who[i]];
            if (!seqs[i].logits) continue;
            trace *t = &got[w->seq];
            t->hash[w->gen] = fnv(w->lg, (size_t)nv);
            t->tokens[w->gen] = argmax(w->lg, nv);
            w->next = t->tokens[w->gen];
            if (++w->gen == GEN) {
                if (pc) prompt_cache_store(pc, w->hold, w->nhold, w->ctx); /* this turn's state, for the next */
                w->seq = -1;
                finished++;
            }
        }
    }
    for (int i = 0; i < N_PROMPTS && failed < N_PROMPTS; i++)
        if (memcmp(&got[i], &ref[i], sizeof got[i]) != 0) {
            failed++;
            int s = 0;
            while (s < GEN && got[i].hash[s] == ref[i].hash[s]) s++;
            fprintf(stderr, "  %s: prompt %d (%d tokens) first differs at step %d\n", k->name, i, pr[i].n, s);
        }
    for (int r = 0; r < N_ROWS; r++) {
        free(rows[r].lg);
        steno_llm_ctx_free(rows[r].ctx);
    }
    steno_llm_ctx_free(exec);
    prompt_cache_free(pc);
    *steps_out = step;
    *max_rows_out = max_rows;
    *hits_out = hits;
    return failed;
}

static int g_full; /* STENO_TEST_FULL=1 */

static void run_model(const char *label, const char *path, unsigned kind_mask, int max_threads, unsigned cache_mask) {
    steno_llm *m = NULL;
    if (steno_llm_load(path, NULL, &m) != STENO_OK) {
        CHECK(0, "%s: %s", label, steno_errmsg());
        return;
    }
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    const int nv = info.n_vocab;
    prompt pr[N_PROMPTS];
    uint32_t rng = 12345;
#define RND() (1 + (int)((rng_lcg_nr(&rng) >> 8) % (uint32_t)(nv - 1)))
    for (int i = 0; i < N_PROMPTS / 2; i++) {
        pr[i].n = 7 + (i * 13) % 36; /* 7..36, all different */
        for (int t = 0; t < pr[i].n; t++) pr[i].tok[t] = RND();
    }
    const kind kinds[] = {{"plain", STENO_KV_QUANT_PLAIN, 0, 0, STENO_LLM_COMPUTE_GGML},
                          {"rotating(32,keep 4)", STENO_KV_QUANT_PLAIN, 32, 4, STENO_LLM_COMPUTE_GGML},
                          {"tq3", STENO_KV_QUANT_TQ3, 0, 0, STENO_LLM_COMPUTE_GGML},
                          {"q8", STENO_KV_QUANT_Q8, 0, 0, STENO_LLM_COMPUTE_GGML},
                          {"plain, --compute fast", STENO_KV_QUANT_PLAIN, 0, 0, STENO_LLM_COMPUTE_FAST},
                          {"q4", STENO_KV_QUANT_Q4, 0, 0, STENO_LLM_COMPUTE_GGML},
                          {"tq4", STENO_KV_QUANT_TQ4, 0, 0, STENO_LLM_COMPUTE_GGML},
                          {"tq2", STENO_KV_QUANT_TQ2, 0, 0, STENO_LLM_COMPUTE_GGML}};
    for (int ki = 0; ki < (int)(sizeof kinds / sizeof kinds[0]); ki++) {
        if (!(kind_mask >> ki & 1)) continue;
        /* the solo reference once (its thread-count invariance is test_llm_stories' and
         * test_llm_parity's); the batched run with 1 and 2 threads against it */
        trace ref[N_PROMPTS];
        uint32_t rng_turn = 777;
        for (int i = 0; i < N_PROMPTS; i++) {
            if (i >= N_PROMPTS / 2) { /* the next turn of prompt i - 8: its prompt, its answer, new tokens */
                const prompt *a = &pr[i - N_PROMPTS / 2];
                pr[i] = *a;
                memcpy(pr[i].tok + a->n, ref[i - N_PROMPTS / 2].tokens, sizeof(int) * GEN);
                pr[i].n += GEN;
                const int extra = 2 + (int)((rng_lcg_nr(&rng_turn) >> 8) % 5u);
                for (int t = 0; t < extra; t++) pr[i].tok[pr[i].n++] = RND();
            }
            solo(m, &kinds[ki], max_threads, &pr[i], &ref[i], nv);
        }
        /* CI size: the prompt cache's restores run with 1 thread (thread invariance is the cache-off
         * pass's check); STENO_TEST_FULL=1 runs both counts with the cache on too */
        for (int cache = 0; cache <= 1; cache++)
            for (int th = 1; th <= (cache && !g_full ? 1 : max_threads) && (cache_mask >> cache & 1); th++) {
                int steps = 0, max_rows = 0, hits = 0;
                const int bad = batched(m, &kinds[ki], th, pr, ref, nv, cache, &steps, &max_rows, &hits);
                CHECK(bad == 0, "%s %s, %d thread(s), prompt cache %s: %d of %d sequences differ from their solo runs",
                      label, kinds[ki].name, th, cache ? "on" : "off", bad, N_PROMPTS);
                if (cache) CHECK(hits >= 4, "%s %s: only %d of 8 next turns found their earlier turn in the prompt cache",
                                 label, kinds[ki].name, hits);
                printf("%s %s, %d thread(s), prompt cache %s: %d sequences x %d tokens in %d batched steps (up to %d "
                       "rows, %d restored from the cache): %s\n",
                       label, kinds[ki].name, th, cache ? "on " : "off", N_PROMPTS, GEN, steps, max_rows, hits,
                       bad ? "DIFFER" : "tokens and logits bit-identical to solo");
            }
    }
    steno_llm_free(m);
}

int main(void) {
    const char *san = getenv("STENO_SANITIZE");
    const int sanitize = san && strcmp(san, "1") == 0;
    const char *full = getenv("STENO_TEST_FULL");
    g_full = full && strcmp(full, "1") == 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/models/stories260K/stories260K.bin", test_shared_dir());
    /* kinds by bit: 1 plain, 2 rotating, 4 tq3, 8 q8 (stories260K's head_dim 8 cannot be
     * quantized), 16 plain with the fast path's arithmetic (its x8 kernels convert 4 or more rows
     * in parallel and run the forward's per-row steps inside that conversion; stories260K is f32,
     * which the fast path leaves to llama.cpp's arithmetic); with STENO_TEST_FULL=1 also 32 q4,
     * 64 tq4, 128 tq2 and Gemma 3's q8: every cache kind. CI's time: the first five for SmolLM2,
     * four for Gemma 3 (q8 left out; its 512-token
     * sliding-window rings do not wrap with these prompts, the rotating kind's 32-slot rings do);
     * under the sanitizers stories260K's two and SmolLM2's tq3 (with the prompt cache on only:
     * the same pass, plus the cache) */
    run_model("stories260K", path, 1 | 2, sanitize ? 1 : 2, 3);
    const char *models[] = {"smollm2", "gemma3"};
    const unsigned more = g_full ? 32 | 64 | 128 : 0;
    const unsigned mask[2] = {sanitize ? 4 : 31 | more, sanitize ? 0 : 1 | 2 | 4 | 16 | (more ? 8 | more : 0)};
    for (int i = 0; i < 2; i++) {
        if (!mask[i]) continue;
        if (steno_llm_resolve(models[i], path, sizeof path) != STENO_OK) {
            CHECK(0, "%s (the test script fetches it: bash scripts/fetch_llm_models.sh %s)", steno_errmsg(), models[i]);
            continue;
        }
        run_model(models[i], path, mask[i], sanitize ? 1 : 2, sanitize ? 2 : 3);
    }
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
