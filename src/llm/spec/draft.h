/* draft.h — the model drafters of speculative decoding (speculative.c): a draft model with its
 * own context — a separate model over the same vocabulary (STENO_DRAFT_MODEL), or a view of the
 * target's first k layers with its final norm and output head (STENO_DRAFT_LAYERS, self-
 * speculation) — that proposes greedy continuations of the sequence so far and keeps its KV cache
 * in step with the accepted tokens (rolled back to the longest prefix it shares with them). */
#ifndef STENO_LLM_SPEC_DRAFT_H
#define STENO_LLM_SPEC_DRAFT_H

#include "spec/verdict.h"
#include "llm/model.h"

typedef struct llm_drafter {
    steno_llm *view;     /* LAYERS: a shallow copy of the target with n_layer = k (owns nothing
                            but itself); NULL for MODEL */
    const steno_llm *dm; /* the draft model (view or p->draft_model) */
    steno_llm_ctx *dc;   /* its context; runs on the target's thread pool */
    float *logits;       /* [n_vocab] */
    int base;            /* the tokens of the sequence dc held when the last draft began */
    int *fed;            /* the draft tokens dc holds after base ([n_fed]) */
    int n_fed, cap;
    float *q;            /* sampled drafts (rejection verification at temperature > 0): the
                            draft's distribution at each drafted position, [cap + 1][n_vocab] */
    uint64_t rng;        /* the draws from q (splitmix64) */
} llm_drafter;

/** Opens the drafter of p (kind MODEL or LAYERS) for target c: a context over the draft model with
 *  c's parameters, but plain (unquantized) caches — the draft's cache only shapes proposals, never
 *  the output. Errors: STENO_E_INVALID_ARG (no draft model, a vocabulary that differs from the
 *  target's: the message names the first differing token; a layer count out of range),
 *  STENO_E_NOMEM. */
steno_status llm_drafter_open(llm_drafter *d, steno_llm_ctx *c, const steno_spec_params *p);
void llm_drafter_close(llm_drafter *d);

/** Up to k draft tokens into draft after hist[0..nh) (its cache is fed what it lacks of hist, then
 *  its own proposals); returns the count, or -1 with *st set on an error. Keeps k - 1 proposals in
 *  its cache for llm_drafter_sync. s NULL: greedy (the draft's argmax at each step). s given: each
 *  token drawn from the distribution s's chain makes of the draft's logits (steno_sampler_dist:
 *  temperature, truncation, the target's penalties; s itself unchanged), recorded in d->q row by
 *  row for steno_sampler_verify. */
int llm_drafter_draft(llm_drafter *d, const int *hist, int nh, int k, int *draft, steno_sampler *s, steno_status *st);

/** Evaluates the prompt (n tokens) in the draft's empty context: prompt work, timed with the
 *  target's prompt rather than the first round's draft. */
steno_status llm_drafter_prefill(llm_drafter *d, const int *prompt, int n);

/** After verification: hist[0..nh) is the sequence; the draft's cache keeps its longest prefix
 *  and drops the rest (rollback, no recomputation). */
steno_status llm_drafter_sync(llm_drafter *d, const int *hist, int nh);

/** The key under which adaptive speculation records this drafter's costs (spec/verdict.h):
 *  the target's shape and weight bytes, the draft's, the kind and verification, c's thread count,
 *  compute mode and cache kind. */
void llm_drafter_verdict_key(const llm_drafter *d, const steno_llm_ctx *c, const steno_spec_params *p,
                             int key[STENO_SPEC_VKEY]);

#endif
