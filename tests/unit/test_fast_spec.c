/* The speculative verify pass and rollback of the fast decoder (whisper/decoder/spec/fast_verify.h).
 *
 * tiny.en, jfk window, 2 threads, f16 and f32 weights, logit screen off and on: after the prompt
 * <|startoftranscript|><|notimestamps|>, 11 greedy tokens are fed to a verify pass at once; row j of
 * its logits must be bit-identical to a single-token step of token j on a decoder fed the prompt
 * and tokens 0..j−1 one at a time. Then the verifying decoder rolls back to keep 2 of them and
 * verifies 3 other tokens (a rejected round followed by the next): again bit-identical to single
 * steps over the accepted history. The drafters' decoder (quant q8_0 and q4_0 copies, the first
 * 2 layers) runs over the same window and proposes tokens in the vocabulary; the quant q8_0 draft
 * agrees with the target's greedy token at the first position; a drafter synced from the target's
 * cache (whisper_fast_draft_sync) drafts the token it drafts after running the tokens itself (the
 * layers drafter: logits within 1e-3 of the largest). Refusals: a verify past
 * n_text_ctx, 0 draft layers, more layers than the model has. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "kernels/quant/wq.h"
#include "test_util.h"
#include "test_whisper.h"
#include "whisper/fast.h"
#include "whisper/decoder/spec/fast_verify.h"

#define NT 11 /* 12 verified positions: more than one chunk of FAST_SCREEN_MAX (9) screened together */

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Single steps of hist [n] after the prompt on d; logits of the last into out. */
static void reference(whisper_fast_decoder *d, const int *prompt, int np, const int *hist, int n, float *out) {
    whisper_fast_decoder_reset(d);
    whisper_fast_decoder_forward(d, prompt, np, out);
    for (int i = 0; i < n; i++) whisper_fast_decoder_forward(d, &hist[i], 1, out);
}

static void scenario(const whisper_model *m, vec_dtype dt, int screen, const float *window) {
    const int V = m->n_vocab, eot = m->special.eot;
    const char *name = dt == VEC_F16 ? (screen ? "f16 screened" : "f16") : "f32";
    steno_pool *pool;
    whisper_fast *f;
    whisper_fast_decoder *dv, *d1;
    CHECK(steno_pool_create(2, &pool) == STENO_OK, "pool");
    CHECK(whisper_fast_create(m, dt, 0, pool, &f) == STENO_OK, "fast create: %s", steno_errmsg());
    CHECK(whisper_fast_decoder_create(f, &dv) == STENO_OK && whisper_fast_decoder_create(f, &d1) == STENO_OK, "dec");
    float *xa = malloc(sizeof(float) * m->n_audio_ctx * m->n_audio_state);
    float *logits = malloc(sizeof(float) * (size_t)V * (NT + 1)), *ref = malloc(sizeof(float) * V);
    float *allow = calloc((size_t)V, sizeof(float)); /* every token allowed: the screen's mask */
    whisper_fast_encode(f, window, xa);
    whisper_fast_decoder_set_audio(dv, xa);
    whisper_fast_decoder_set_audio(d1, xa);
    if (screen) {
        whisper_fast_decoder_set_screen(dv, allow);
        whisper_fast_decoder_set_screen(d1, allow);
    }
    const int prompt[2] = {m->special.sot, m->special.no_timestamps};
    /* greedy text tokens from single steps */
    int toks[NT];
    whisper_fast_decoder_forward(d1, prompt, 2, ref);
    for (int i = 0; i < NT; i++) {
        toks[i] = argmax(ref, eot);
        whisper_fast_decoder_forward(d1, &toks[i], 1, ref);
    }
    /* verify: the prompt's last token and the 6 tokens, as spec.c feeds them */
    whisper_fast_decoder_reset(dv);
    whisper_fast_decoder_forward(dv, prompt, 1, ref);
    int feed[NT + 1] = {prompt[1]};
    memcpy(feed + 1, toks, sizeof toks);
    CHECK(whisper_fast_decoder_verify(dv, feed, NT + 1, logits) == STENO_OK, "%s verify: %s", name, steno_errmsg());
    CHECK(whisper_fast_decoder_n_past(dv) == NT + 2, "%s n_past %d", name, whisper_fast_decoder_n_past(dv));
    for (int j = 0; j <= NT; j++) { /* the first prompt token as the prefill, every later one a single step */
        reference(d1, prompt, 1, feed, j + 1, ref);
        CHECK(memcmp(ref, logits + (size_t)j * V, sizeof(float) * V) == 0, "%s: verified position %d differs from "
              "its single step", name, j);
    }
    /* a rejected round: keep the prompt and 2 tokens, then 3 others */
    whisper_fast_decoder_rollback(dv, 2 + 2);
    int other[3] = {toks[4], toks[0], toks[5]};
    CHECK(whisper_fast_decoder_verify(dv, other, 3, logits) == STENO_OK, "%s verify after rollback", name);
    int hist[6] = {prompt[1], toks[0], toks[1]};
    for (int j = 0; j < 3; j++) {
        hist[3 + j] = other[j];
        reference(d1, prompt, 1, hist, 4 + j, ref);
        CHECK(memcmp(ref, logits + (size_t)j * V, sizeof(float) * V) == 0, "%s: after the rollback, position %d "
              "differs from its single step", name, j);
    }
    /* refusal: past the context */
    whisper_fast_decoder_rollback(dv, 2);
    int *big = calloc((size_t)m->n_text_ctx, sizeof(int));
    CHECK(whisper_fast_decoder_verify(dv, big, m->n_text_ctx, logits) == STENO_E_INVALID_ARG, "%s: a verify past "
          "n_text_ctx was accepted", name);
    free(big);

    /* drafters */
    /* q8_0 and q4_0 keep only their x8 copies; q5_1 has none and keeps its ggml rows (the rows kernels) */
    const int types[4] = {STENO_T_Q8_0, STENO_T_Q4_0, STENO_T_Q5_1, 0};
    for (int k = 0; k < 4; k++) {
        whisper_fast_draft *r;
        const int layers = types[k] ? m->n_text_layer : 2;
        CHECK(whisper_fast_draft_create(f, layers, types[k], &r) == STENO_OK, "%s draft create: %s", name,
              steno_errmsg());
        whisper_fast_draft_set_cross(r, dv);
        CHECK(whisper_fast_draft_forward(r, prompt, 2, ref) == STENO_OK, "%s draft forward", name);
        const int t = argmax(ref, V);
        CHECK(t >= 0 && t < V && isfinite(ref[t]), "%s draft %d: no token", name, k);
        if (types[k] == STENO_T_Q8_0) CHECK(argmax(ref, eot) == toks[0], "%s: the q8_0 draft's first token %d, the "
                                            "target's %d", name, argmax(ref, eot), toks[0]);
        CHECK(whisper_fast_draft_forward(r, &toks[0], 1, ref) == STENO_OK && whisper_fast_draft_n_past(r) == 3,
              "%s draft step", name);
        whisper_fast_draft_rollback(r, 1);
        CHECK(whisper_fast_draft_n_past(r) == 1, "%s draft rollback", name);
        /* sync: the target's cache of <sot> <notimestamps> t0 t1 copied in, then t2 run, against the
         * drafter running all five itself */
        whisper_fast_decoder_reset(d1);
        whisper_fast_decoder_forward(d1, prompt, 2, ref);
        whisper_fast_decoder_forward(d1, toks, 3, ref);
        const int seq5[5] = {prompt[0], prompt[1], toks[0], toks[1], toks[2]};
        whisper_fast_draft_rollback(r, 0);
        CHECK(whisper_fast_draft_forward(r, seq5, 5, ref) == STENO_OK, "%s draft forward of 5", name);
        float *own = malloc(sizeof(float) * V);
        memcpy(own, ref, sizeof(float) * V);
        whisper_fast_draft_rollback(r, 1);
        CHECK(whisper_fast_draft_sync(r, d1, 6) == -1 && whisper_fast_draft_n_past(r) == 1,
              "%s: a sync past the target's cache was accepted", name);
        CHECK(whisper_fast_draft_sync(r, d1, 4) == 0 && whisper_fast_draft_n_past(r) == 4, "%s draft sync", name);
        CHECK(whisper_fast_draft_forward(r, &toks[2], 1, ref) == STENO_OK && whisper_fast_draft_n_past(r) == 5,
              "%s draft step after sync", name);
        CHECK(argmax(ref, eot) == argmax(own, eot), "%s draft %d: after sync token %d, own forward %d", name, k,
              argmax(ref, eot), argmax(own, eot));
        if (!types[k]) { /* the target's own first layers: the same keys and values, up to the GEMM's rounding */
            double worst = 0, top = 0;
            for (int i = 0; i < V; i++) {
                worst = fmax(worst, fabs((double)ref[i] - own[i]));
                top = fmax(top, fabs((double)own[i]));
            }
            CHECK(worst <= 1e-3 * top, "%s layers draft: synced logits differ by %g (max |logit| %g)", name, worst, top);
        }
        free(own);
        whisper_fast_draft_free(r);
    }
    whisper_fast_draft *bad = NULL;
    CHECK(whisper_fast_draft_create(f, 0, 0, &bad) == STENO_E_INVALID_ARG && !bad, "%s: 0 layers accepted", name);
    CHECK(whisper_fast_draft_create(f, m->n_text_layer + 1, 0, &bad) == STENO_E_INVALID_ARG && !bad,
          "%s: too many layers accepted", name);
    free(xa), free(logits), free(ref), free(allow);
    whisper_fast_decoder_free(dv);
    whisper_fast_decoder_free(d1);
    whisper_fast_free(f);
    steno_pool_free(pool);
}

int main(void) {
    whisper_model *m;
    if (whisper_model_load(test_model_dir(), &m) != STENO_OK) {
        fprintf(stderr, "FAIL: %s\n", steno_errmsg());
        return 1;
    }
    float *window = test_jfk_window(m);
    if (!window) return test_summary("test_fast_spec");
    scenario(m, VEC_F16, 0, window);
    scenario(m, VEC_F16, 1, window);
    scenario(m, VEC_F32, 0, window);
    free(window);
    whisper_model_free(m);
    return test_summary("test_fast_spec");
}
