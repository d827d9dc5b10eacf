/* Decoder rows for beam search: the KV-cache gather and the batched row step.
 *
 * Fast path (f16 weights, 2 threads): a 4-row decoder is fed <|startoftranscript|> on row 0,
 * gathered to all rows, stepped with four different tokens, then gathered with a duplicated and
 * a dropped source ({2, 0, 2, 1}), stepped, compacted to two rows ({3, 1}) and stepped again.
 * After each step, row i's logits must be bit-identical to a single-row decoder that was fed row
 * i's whole history one token at a time — i.e. stepping row i after a reorder equals stepping its
 * source row, and the batched step reads the same sums in the same order as the single-row step.
 * The faithful path (float32, OpenBLAS sgemm over the rows) gets the same sequence of gathers;
 * there the batch goes through other BLAS kernels than the single row, so its logits must agree
 * within 1e-3 (absolute) and give the same argmax.
 * Also: bad row counts and sources are refused with STENO_E_INVALID_ARG. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "test_util.h"
#include "test_whisper.h"
#include "whisper/fast.h"
#include "whisper/faithful.h"

#define ROWS 4
#define MAX_HIST 8

typedef struct history {
    int tok[MAX_HIST];
    int n;
} history;

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* The k best text tokens of logits (distinct), for feeding plausible different tokens. */
static void top_tokens(const float *logits, int n_text, int k, int *out) {
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int t = 0; t < n_text; t++) {
            int taken = 0;
            for (int q = 0; q < j; q++) taken |= out[q] == t;
            if (!taken && (best < 0 || logits[t] > logits[best])) best = t;
        }
        out[j] = best;
    }
}

/* Single-row reference: the history fed one token at a time; logits of the last. */
static void fast_reference(whisper_fast_decoder *d1, const history *h, float *logits) {
    whisper_fast_decoder_reset(d1);
    for (int i = 0; i < h->n; i++) whisper_fast_decoder_forward(d1, &h->tok[i], 1, logits);
}

static void faithful_reference(whisper_decoder *d1, const history *h, float *logits) {
    whisper_decoder_reset(d1);
    for (int i = 0; i < h->n; i++) whisper_decoder_forward(d1, &h->tok[i], 1, logits, 0);
}

typedef struct rows_api {
    void *dec, *ref;
    steno_status (*step)(void *d, const int *tokens, int B, float *logits);
    steno_status (*reorder)(void *d, const int *src, int B);
    void (*reference)(void *d1, const history *h, float *logits);
    int exact; /* bit-identical, or within 1e-3 and the same argmax */
    const char *name;
} rows_api;

static steno_status fast_step(void *d, const int *t, int B, float *l) { return whisper_fast_decoder_step_rows(d, t, B, l); }
static steno_status fast_reorder(void *d, const int *s, int B) { return whisper_fast_decoder_reorder(d, s, B); }
static void fast_ref(void *d, const history *h, float *l) { fast_reference(d, h, l); }
static steno_status faith_step(void *d, const int *t, int B, float *l) { return whisper_decoder_step_rows(d, t, B, l); }
static steno_status faith_reorder(void *d, const int *s, int B) { return whisper_decoder_reorder(d, s, B); }
static void faith_ref(void *d, const history *h, float *l) { faithful_reference(d, h, l); }

/* Compares rows 0..B-1 of logits [B][V] with the reference of each row's history. */
static void check_rows(const rows_api *a, const history *hist, int B, const float *logits, int V, float *ref,
                       const char *stage) {
    for (int i = 0; i < B; i++) {
        a->reference(a->ref, &hist[i], ref);
        const float *row = logits + (size_t)i * V;
        if (a->exact) {
            CHECK(memcmp(row, ref, sizeof(float) * V) == 0, "%s %s: row %d differs from its single-row history", a->name,
                  stage, i);
        } else {
            float worst = 0.0f;
            for (int t = 0; t < V; t++) worst = fmaxf(worst, fabsf(row[t] - ref[t]));
            CHECK(worst < 1e-3f, "%s %s: row %d differs from its single-row history by %g", a->name, stage, i, worst);
            CHECK(argmax(row, V) == argmax(ref, V), "%s %s: row %d argmax differs", a->name, stage, i);
        }
    }
}

/* The scenario of the header on one path; dec has ROWS rows and was given the window's audio.
 * prefill: feeds <|startoftranscript|> to row 0 and returns its logits in logits[0]. */
static void scenario(const rows_api *a, int sot, int n_text, int V, float *logits, float *ref,
                     steno_status (*prefill)(void *d, const int *t, float *l)) {
    history hist[ROWS], next[ROWS];
    CHECK(prefill(a->dec, &sot, logits) == STENO_OK, "%s prefill: %s", a->name, steno_errmsg());
    int t0[ROWS], zeros[ROWS] = {0};
    top_tokens(logits, n_text, ROWS, t0);
    CHECK(a->reorder(a->dec, zeros, ROWS) == STENO_OK, "%s reorder to all rows", a->name);
    for (int i = 0; i < ROWS; i++) hist[i] = (history){{sot, t0[i]}, 2};
    CHECK(a->step(a->dec, t0, ROWS, logits) == STENO_OK, "%s step 1: %s", a->name, steno_errmsg());
    check_rows(a, hist, ROWS, logits, V, ref, "step 1");

    const int src2[ROWS] = {2, 0, 2, 1}; /* row 2 twice, row 3 dropped */
    int t1[ROWS];
    for (int i = 0; i < ROWS; i++) {
        t1[i] = argmax(logits + (size_t)src2[i] * V, n_text) + i; /* different tokens for the twins */
        next[i] = hist[src2[i]];
        next[i].tok[next[i].n++] = t1[i];
    }
    memcpy(hist, next, sizeof hist);
    CHECK(a->reorder(a->dec, src2, ROWS) == STENO_OK, "%s reorder {2,0,2,1}", a->name);
    CHECK(a->step(a->dec, t1, ROWS, logits) == STENO_OK, "%s step 2: %s", a->name, steno_errmsg());
    check_rows(a, hist, ROWS, logits, V, ref, "step 2 after {2,0,2,1}");

    const int src3[2] = {3, 1};
    int t2[2];
    for (int i = 0; i < 2; i++) {
        t2[i] = argmax(logits + (size_t)src3[i] * V, n_text);
        next[i] = hist[src3[i]];
        next[i].tok[next[i].n++] = t2[i];
    }
    memcpy(hist, next, sizeof(history) * 2);
    CHECK(a->reorder(a->dec, src3, 2) == STENO_OK, "%s reorder {3,1}", a->name);
    CHECK(a->step(a->dec, t2, 2, logits) == STENO_OK, "%s step 3: %s", a->name, steno_errmsg());
    check_rows(a, hist, 2, logits, V, ref, "step 3 after {3,1}");

    /* refusals */
    const int bad[2] = {0, ROWS};
    CHECK(a->reorder(a->dec, bad, 2) == STENO_E_INVALID_ARG, "%s: a source out of range was accepted", a->name);
    CHECK(a->reorder(a->dec, bad, ROWS + 1) == STENO_E_INVALID_ARG, "%s: too many rows were accepted", a->name);
    CHECK(a->step(a->dec, t0, ROWS + 1, logits) == STENO_E_INVALID_ARG, "%s: a step of too many rows", a->name);
}

static steno_status fast_prefill(void *d, const int *t, float *l) { return whisper_fast_decoder_forward(d, t, 1, l); }
static steno_status faith_prefill(void *d, const int *t, float *l) { return whisper_decoder_forward(d, t, 1, l, 0); }

int main(void) {
    whisper_model *m;
    if (whisper_model_load(test_model_dir(), &m) != STENO_OK) {
        fprintf(stderr, "FAIL: %s\n", steno_errmsg());
        return 1;
    }
    float *window = test_jfk_window(m);
    if (!window) return test_summary("test_fast_rows");
    const int V = m->n_vocab, sot = m->special.sot, n_text = m->special.eot;
    float *xa = malloc(sizeof(float) * m->n_audio_ctx * m->n_audio_state);
    float *logits = malloc(sizeof(float) * (size_t)V * ROWS), *ref = malloc(sizeof(float) * V);

    /* fast path */
    steno_pool *pool;
    whisper_fast *f;
    whisper_fast_decoder *d4, *d1;
    CHECK(steno_pool_create(2, &pool) == STENO_OK, "pool");
    CHECK(whisper_fast_create(m, VEC_F16, 0, pool, &f) == STENO_OK, "fast create: %s", steno_errmsg());
    CHECK(whisper_fast_decoder_create_rows(f, ROWS, &d4) == STENO_OK, "rows create");
    CHECK(whisper_fast_decoder_rows(d4) == ROWS, "rows");
    CHECK(whisper_fast_decoder_create(f, &d1) == STENO_OK, "decoder create");
    whisper_fast_decoder *bad;
    CHECK(whisper_fast_decoder_create_rows(f, 0, &bad) == STENO_E_INVALID_ARG && !bad, "0 rows accepted");
    whisper_fast_encode(f, window, xa);
    whisper_fast_decoder_set_audio(d4, xa);
    whisper_fast_decoder_set_audio(d1, xa);
    int tok = sot;
    CHECK(whisper_fast_decoder_step_rows(d4, &tok, 1, logits) == STENO_E_INVALID_ARG,
          "a row step before any prefill was accepted");
    rows_api fa = {d4, d1, fast_step, fast_reorder, fast_ref, 1, "fast"};
    scenario(&fa, sot, n_text, V, logits, ref, fast_prefill);
    whisper_fast_decoder_free(d4);
    whisper_fast_decoder_free(d1);
    whisper_fast_free(f);
    steno_pool_free(pool);

    /* faithful path */
    whisper_decoder r4, r1;
    CHECK(whisper_decoder_init_rows(&r4, m, ROWS) == STENO_OK, "faithful rows init: %s", steno_errmsg());
    CHECK(whisper_decoder_init(&r1, m) == STENO_OK, "faithful init");
    CHECK(whisper_encode(m, window, xa) == STENO_OK, "encode");
    whisper_decoder_set_audio(&r4, xa);
    whisper_decoder_set_audio(&r1, xa);
    rows_api fb = {&r4, &r1, faith_step, faith_reorder, faith_ref, 0, "faithful"};
    scenario(&fb, sot, n_text, V, logits, ref, faith_prefill);
    whisper_decoder_free(&r4);
    whisper_decoder_free(&r1);

    free(xa), free(logits), free(ref), free(window);
    whisper_model_free(m);
    return test_summary("test_fast_rows");
}
