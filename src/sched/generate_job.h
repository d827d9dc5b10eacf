/* generate_job.h — a text generation as a scheduler job: its part of the job (prompt, sampling,
 * stop strings), the batch engine's rows and their slots. Not part of the scheduler's interface. */
#ifndef STENO_SCHED_GENERATE_JOB_H
#define STENO_SCHED_GENERATE_JOB_H

#include "sched/job.h"
#include "sched/prompt_cache.h"
#include "text/stop_text.h"

#define SCHED_MAX_DRAFT 32 /* draft tokens per row and pass at most (a ring's default reserve) */

/* A batch engine row's slot: its context and the tokens now in its KV caches (the prefix a later
 * generation on this row may reuse). */
typedef struct gen_slot {
    steno_llm_ctx *lc;
    int *cached;
    int n_cached, cap_cached;
} gen_slot;

/* A JOB_GENERATE job. */
typedef struct generate_job {
    sched_job base; /* first: a sched_job of kind JOB_GENERATE is a generate_job */
    int *prompt;
    int n_prompt, max_tokens;
    steno_sampler_params sp;
    char **stop;
    int n_stop, top_logprobs;
    int logprobs;   /* 1: token events carry their log-probability (sched_generate_req.logprobs) */
    size_t kv_need; /* KV bytes its row may grow to (prompt + max_tokens tokens) */
} generate_job;

static inline generate_job *generate_job_of(sched_job *j) { return (generate_job *)j; }

/** Copies the request's data into j (prompt, stop strings, logit biases). Errors: STENO_E_NOMEM. */
steno_status generate_job_init(generate_job *j, const sched_generate_req *r);
/** Frees what the job owns (not j itself). */
void generate_job_free_part(generate_job *j);

/* A generation: one row of the batch engine (continuous_batch.c), stepped by generate_job.c's functions. */
typedef struct gen_row {
    const steno_llm *m;
    gen_slot *slot;    /* the row's context and the tokens it holds */
    generate_job *j;   /* NULL: the row is free */
    int n_vocab, n_ctx;
    /* per job (gen_row_start clears them) */
    steno_sampler *smp;
    steno_stop_text st;
    int st_live;
    char *text;        /* the released text so far */
    size_t text_len;
    float *logits;     /* [n_vocab]: written by the pass that ends the prompt or decodes */
    int pos;           /* prompt tokens in the caches */
    int prev;          /* the last token (for its piece's leading space) */
    int pending;       /* the sampled token the next pass evaluates */
    /* speculative decoding (sched_params.spec): the draft fed after pending this pass */
    int ng;
    steno_spec_len sl;
    int backoff; /* spec/backoff.h */
    int draft[SCHED_MAX_DRAFT];
    int blk[SCHED_MAX_DRAFT + 1];
} gen_row;

/** Starts j on the row (r->j already set to j): sampler, stop strings, the reused prefix — the
 *  row's own cached tokens, or pc's entry when it shares more (the row's tokens that the prompt does
 *  not continue are saved into pc first). On failure j->out.status is set and gen_row_finish must
 *  still be called. */
steno_status gen_row_start(gen_row *r, const steno_llm *m, gen_slot *slot, generate_job *j, prompt_cache *pc,
                           const steno_spec_params *spec);
/** What the row feeds the next pass: at most chunk prompt tokens (the prompt from the reused
 *  prefix on), or its pending token followed by a draft (spec, r->ng tokens: the pass must then
 *  produce the logits of every token); *logits is the row's buffer when the pass must produce them
 *  (the prompt's end, a decode step), else NULL. Returns the token count. */
int gen_row_next(gen_row *r, int chunk, const steno_spec_params *spec, const int **tokens, float **logits);
/** Records that the pass evaluated the n tokens gen_row_next gave. */
steno_status gen_row_evaluated(gen_row *r, int n);
/** Records a failed pass: the row's caches are reset (nothing in them can be trusted). */
steno_status gen_row_failed(gen_row *r, steno_status st);
/** Samples the next token from the row's logits, emits it, applies the stop conditions; after a
 *  verify block, samples position after position while the draft holds (as plain decoding would)
 *  and rolls the rejected drafts back. Returns 1 when the generation has ended (finish set; or
 *  status on a failure), 0 when it goes on. */
int gen_row_sample(gen_row *r);
/** Ends the row's job: flushes the held-back text into j->base.out.text, frees the per-job state. */
void gen_row_finish(gen_row *r);
/** The batch engine's thread (continuous_batch.c): admits queued generations into free rows and
 *  steps the running ones until shutdown. */
void *batch_engine_main(void *arg);

#endif
