/* generate.c — steno_llm_generate: the prompt, then sample / emit / evaluate one token at a time
 * until an end-of-generation token, n_predict, the callback or a full context stops it. */
#include <stdlib.h>
#include <time.h>

#include "core/error.h"
#include "llm/model.h"
#include "text/llm_vocab.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

steno_status steno_llm_generate(steno_llm_ctx *c, steno_sampler *s, const int *prompt, int n_prompt, int n_predict,
                                steno_token_cb cb, void *user, steno_gen_stats *stats) {
    const steno_llm *m = c->m;
    const int nvocab = m->hp.n_vocab;
    steno_gen_stats st0 = {0};
    float *logits = malloc((size_t)nvocab * sizeof(float));
    if (!logits) return steno_fail(STENO_E_NOMEM, "generate: out of memory");
    double t0 = now_s();
    steno_status st = steno_llm_eval(c, prompt, n_prompt, logits, 0);
    double t1 = now_s();
    st0.n_prompt = n_prompt;
    st0.prompt_seconds = t1 - t0;
    int prev = n_prompt > 0 ? prompt[n_prompt - 1] : -1;
    char piece[256];
    st0.stop_reason = n_predict == 0 ? STENO_STOP_N_PREDICT : STENO_STOP_EOG;
    for (int i = 0; st == STENO_OK && (n_predict < 0 || i < n_predict); i++) {
        int tok = steno_sampler_sample(s, logits, NULL, NULL);
        if (steno_vocab_is_eog(m->vocab, tok)) break;
        st0.n_generated++;
        int pl = steno_vocab_piece(m->vocab, tok, prev, 0, piece, (int)sizeof piece);
        if (pl < 0) pl = 0;
        prev = tok;
        if (cb && cb(user, tok, piece, pl)) {
            st0.stop_reason = STENO_STOP_CALLBACK;
            break;
        }
        if (n_predict >= 0 && i + 1 >= n_predict) {
            st0.stop_reason = STENO_STOP_N_PREDICT;
            break;
        }
        if (c->n_past + 1 > c->p.n_ctx) {
            st0.stop_reason = STENO_STOP_CTX_FULL;
            break;
        }
        st = steno_llm_eval(c, &tok, 1, logits, 0);
    }
    if (st != STENO_OK) st0.stop_reason = STENO_STOP_ERROR;
    st0.decode_seconds = now_s() - t1;
    free(logits);
    if (stats) *stats = st0;
    return st;
}
