/* Rows of several decoders in one step (fast.h whisper_fast_group_step, batched transcription).
 *
 * Two windows (jfk.wav's first window, and the same window with its frames reversed in time) are
 * encoded; decoder A (1 row) gets window 1 and a 1-token prefill, decoder B (3 rows) gets window 2
 * and a 2-token prefill, so the decoders sit at different positions over different cross K/V.
 * Three group steps follow: {A, B}, {A, B} after B's rows are gathered {2, 0, 0}, then {B} alone
 * (A has "finished"). After each, every row's logits must be bit-identical to a single-row decoder
 * fed the same prefill and then that row's tokens one at a time (whisper_fast_decoder_forward,
 * T = 1, no screen) over the same window. Also: the step hook receives forward(T = 1) and
 * step_rows calls (and not prefills), and a group step of more rows than the group holds, or with
 * a token out of range, is refused with STENO_E_INVALID_ARG. */
#include <string.h>

#include "core/error.h"
#include "test_util.h"
#include "test_whisper.h"
#include "whisper/fast.h"

#define MAX_HIST 8

typedef struct history {
    int tok[MAX_HIST];
    int n, n_prefill;
} history;

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* The prefill as one forward of n_prefill tokens, then each further token alone. */
static void reference(whisper_fast_decoder *d1, const float *xa, const history *h, float *logits) {
    whisper_fast_decoder_set_audio(d1, xa);
    whisper_fast_decoder_forward(d1, h->tok, h->n_prefill, logits);
    for (int i = h->n_prefill; i < h->n; i++) whisper_fast_decoder_forward(d1, &h->tok[i], 1, logits);
}

static void check_row(whisper_fast_decoder *d1, const float *xa, const history *h, const float *row, float *ref, int V,
                      const char *what) {
    reference(d1, xa, h, ref);
    CHECK(memcmp(row, ref, sizeof(float) * V) == 0, "%s: differs from the single-row decoder", what);
}

typedef struct hook_log {
    int calls, rows;
} hook_log;

static steno_status log_hook(void *ctx, whisper_fast_decoder *d, const int *tokens, int B, float *logits) {
    (void)d, (void)tokens, (void)logits;
    hook_log *h = ctx;
    h->calls++;
    h->rows += B;
    return STENO_OK;
}

int main(void) {
    whisper_model *m;
    if (whisper_model_load(test_model_dir(), &m) != STENO_OK) {
        fprintf(stderr, "FAIL: %s\n", steno_errmsg());
        return 1;
    }
    float *w1 = test_jfk_window(m);
    if (!w1) return test_summary("test_fast_group");
    const int C = m->n_mels, F = 3000, V = m->n_vocab, n_text = m->special.eot;
    const size_t xa_n = (size_t)m->n_audio_ctx * m->n_audio_state;
    float *w2 = malloc(sizeof(float) * C * F);
    for (int c = 0; c < C; c++)
        for (int t = 0; t < F; t++) w2[(size_t)c * F + t] = w1[(size_t)c * F + (F - 1 - t)];
    float *xa1 = malloc(sizeof(float) * xa_n), *xa2 = malloc(sizeof(float) * xa_n);
    float *la = malloc(sizeof(float) * V), *lb = malloc(sizeof(float) * V * 3), *ref = malloc(sizeof(float) * V);

    steno_pool *pool;
    whisper_fast *f;
    whisper_fast_decoder *da, *db, *d1;
    whisper_fast_group *g;
    CHECK(steno_pool_create(2, &pool) == STENO_OK, "pool");
    CHECK(whisper_fast_create(m, VEC_F16, 0, pool, &f) == STENO_OK, "fast create: %s", steno_errmsg());
    CHECK(whisper_fast_decoder_create(f, &da) == STENO_OK, "decoder A");
    CHECK(whisper_fast_decoder_create_rows(f, 3, &db) == STENO_OK, "decoder B");
    CHECK(whisper_fast_decoder_create(f, &d1) == STENO_OK, "reference decoder");
    CHECK(whisper_fast_group_create(f, 4, &g) == STENO_OK, "group");
    whisper_fast_encode(f, w1, xa1);
    whisper_fast_encode(f, w2, xa2);
    whisper_fast_decoder_set_audio(da, xa1);
    whisper_fast_decoder_set_audio(db, xa2);

    const int sot = m->special.sot, nots = m->special.no_timestamps;
    history ha = {{sot}, 1, 1}, hb[3];
    whisper_fast_decoder_forward(da, ha.tok, 1, la);
    const int pre_b[2] = {sot, nots};
    whisper_fast_decoder_forward(db, pre_b, 2, lb);
    const int zeros[3] = {0, 0, 0};
    CHECK(whisper_fast_decoder_reorder(db, zeros, 3) == STENO_OK, "B gathered to 3 rows");
    for (int i = 0; i < 3; i++) hb[i] = (history){{sot, nots}, 2, 2};

    /* step 1: A's best token, B's three rows three different tokens */
    int ta = argmax(la, n_text), tb[3] = {argmax(lb, n_text), 220, 264};
    ha.tok[ha.n++] = ta;
    for (int i = 0; i < 3; i++) hb[i].tok[hb[i].n++] = tb[i];
    whisper_fast_decoder *ds[2] = {da, db};
    int n_rows[2] = {1, 3};
    const int *toks[2] = {&ta, tb};
    float *logits[2] = {la, lb};
    CHECK(whisper_fast_group_step(g, ds, n_rows, 2, toks, logits) == STENO_OK, "group step 1: %s", steno_errmsg());
    check_row(d1, xa1, &ha, la, ref, V, "step 1, A");
    for (int i = 0; i < 3; i++) check_row(d1, xa2, &hb[i], lb + (size_t)i * V, ref, V, "step 1, a row of B");

    /* step 2: B gathered {2, 0, 0} */
    const int src[3] = {2, 0, 0};
    history nb[3];
    for (int i = 0; i < 3; i++) nb[i] = hb[src[i]];
    CHECK(whisper_fast_decoder_reorder(db, src, 3) == STENO_OK, "B reorder {2,0,0}");
    ta = argmax(la, n_text);
    ha.tok[ha.n++] = ta;
    for (int i = 0; i < 3; i++) {
        tb[i] = argmax(lb + (size_t)src[i] * V, n_text) + i;
        nb[i].tok[nb[i].n++] = tb[i];
    }
    memcpy(hb, nb, sizeof hb);
    CHECK(whisper_fast_group_step(g, ds, n_rows, 2, toks, logits) == STENO_OK, "group step 2: %s", steno_errmsg());
    check_row(d1, xa1, &ha, la, ref, V, "step 2, A");
    for (int i = 0; i < 3; i++) check_row(d1, xa2, &hb[i], lb + (size_t)i * V, ref, V, "step 2, a row of B");

    /* step 3: A has finished; B's first two rows alone */
    for (int i = 0; i < 2; i++) {
        tb[i] = argmax(lb + (size_t)i * V, n_text);
        hb[i].tok[hb[i].n++] = tb[i];
    }
    whisper_fast_decoder *ds3[1] = {db};
    int n3[1] = {2};
    const int *toks3[1] = {tb};
    float *logits3[1] = {lb};
    CHECK(whisper_fast_group_step(g, ds3, n3, 1, toks3, logits3) == STENO_OK, "group step 3: %s", steno_errmsg());
    for (int i = 0; i < 2; i++) check_row(d1, xa2, &hb[i], lb + (size_t)i * V, ref, V, "step 3, a row of B");

    /* step 4: ten rows (A and nine rows of a new decoder E over window 2): at
     * VEC_PANEL_MIN_INPUTS rows or more the products come from the weights' panels, the same bits */
    {
        whisper_fast_decoder *de;
        whisper_fast_group *g10;
        CHECK(whisper_fast_decoder_create_rows(f, 9, &de) == STENO_OK, "decoder E");
        CHECK(whisper_fast_group_create(f, 10, &g10) == STENO_OK, "group of 10");
        whisper_fast_decoder_set_audio(de, xa2);
        float *le = malloc(sizeof(float) * V * 9);
        whisper_fast_decoder_forward(de, pre_b, 2, le);
        const int z9[9] = {0};
        CHECK(whisper_fast_decoder_reorder(de, z9, 9) == STENO_OK, "E gathered to 9 rows");
        history he[9];
        int te[9];
        for (int i = 0; i < 9; i++) {
            he[i] = (history){{sot, nots}, 2, 2};
            te[i] = argmax(le, n_text) + 3 * i;
            he[i].tok[he[i].n++] = te[i];
        }
        ta = argmax(la, n_text);
        ha.tok[ha.n++] = ta;
        whisper_fast_decoder *ds4[2] = {da, de};
        int n4[2] = {1, 9};
        const int *toks4[2] = {&ta, te};
        float *logits4[2] = {la, le};
        CHECK(whisper_fast_group_step(g10, ds4, n4, 2, toks4, logits4) == STENO_OK, "group step 4: %s",
              steno_errmsg());
        check_row(d1, xa1, &ha, la, ref, V, "step 4, A");
        for (int i = 0; i < 9; i++) check_row(d1, xa2, &he[i], le + (size_t)i * V, ref, V, "step 4, a row of E");
        free(le);
        whisper_fast_group_free(g10);
        whisper_fast_decoder_free(de);
    }

    /* refusals */
    int five[2] = {2, 3};
    CHECK(whisper_fast_group_step(g, ds, five, 2, toks, logits) == STENO_E_INVALID_ARG, "5 rows in a group of 4");
    int badtok = V;
    const int *tbad[2] = {&badtok, tb};
    CHECK(whisper_fast_group_step(g, ds, n_rows, 2, tbad, logits) == STENO_E_INVALID_ARG, "a token out of range");

    /* the hook takes single-token steps, not prefills */
    hook_log log = {0, 0};
    whisper_fast_decoder_set_step_hook(da, log_hook, &log);
    whisper_fast_decoder_set_audio(da, xa1);
    whisper_fast_decoder_forward(da, pre_b, 2, la);
    CHECK(log.calls == 0, "a prefill reached the hook");
    whisper_fast_decoder_forward(da, &ta, 1, la);
    CHECK(log.calls == 1 && log.rows == 1, "forward(T = 1) did not reach the hook");
    whisper_fast_decoder_set_step_hook(db, log_hook, &log);
    CHECK(whisper_fast_decoder_step_rows(db, tb, 3, lb) == STENO_OK && log.calls == 2 && log.rows == 4,
          "step_rows did not reach the hook");
    whisper_fast_decoder_set_step_hook(da, NULL, NULL);
    whisper_fast_decoder_set_step_hook(db, NULL, NULL);

    whisper_fast_group_free(g);
    whisper_fast_decoder_free(da);
    whisper_fast_decoder_free(db);
    whisper_fast_decoder_free(d1);
    whisper_fast_free(f);
    steno_pool_free(pool);
    free(w1), free(w2), free(xa1), free(xa2), free(la), free(lb), free(ref);
    whisper_model_free(m);
    return test_summary("test_fast_group");
}
