/* job.h — the inside of a sched_job and a slot, shared by sched.c (queue, workers, lifetime) and
 * the job kinds (transcribe_job.c, generate_job.c). Not part of the scheduler's interface. */
#ifndef STENO_SCHED_JOB_H
#define STENO_SCHED_JOB_H

#include <pthread.h>
#include <stdatomic.h>

#include "sched/prompt_cache.h"
#include "whisper/decoder/step_batcher.h"
#include "sched/sched.h"
#include "text/stop_text.h"

typedef enum job_kind { JOB_TRANSCRIBE = 0, JOB_GENERATE = 1 } job_kind;

#define SCHED_MAX_DRAFT 32 /* draft tokens per row and pass at most (a ring's default reserve) */

/* One slot: the mutable state a running job uses. cached holds the tokens now in ctx's KV caches
 * (the prefix a later generation on this slot may reuse). */
typedef struct sched_slot {
    steno_whisper_state *ws; /* NULL without a Whisper model */
    steno_llm_ctx *lc;       /* NULL without an LLM */
    int *cached;
    int n_cached, cap_cached;
    whisper_xbatch_member *xm; /* the slot's place in s->xbatch, or NULL */
} sched_slot;

struct sched_job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;                 /* under mu */
    sched_job_state state;    /* under mu */
    atomic_int cancel;
    double t_submit, t_start, deadline; /* monotonic seconds; deadline 0: none */
    sched_event **events;     /* under mu; each event is immutable once appended */
    int n_events, cap_events;
    sched_outcome out;        /* written by the worker, read after SCHED_DONE */
    job_kind kind;
    steno_sched *owner;       /* the scheduler whose queue holds it (set by submit) */
    sched_job *next;          /* the queue */
    /* JOB_TRANSCRIBE */
    steno_audio *audio;       /* owned, with the bytes it reads */
    void *audio_bytes;
    steno_transcribe_params tp;
    void *owned[16];          /* copies of the params' strings and arrays */
    int n_owned;
    /* JOB_GENERATE */
    int *prompt;
    int n_prompt, max_tokens;
    steno_sampler_params sp;
    char **stop;
    int n_stop, top_logprobs;
    int logprobs; /* 1: token events carry their log-probability (sched_generate_req.logprobs) */
    size_t kv_need;           /* KV bytes its row may grow to (prompt + max_tokens tokens) */
};

/** Appends ev (malloc'd, ownership taken) and wakes the waiters. Returns 0, -1 when out of memory
 *  (ev is then freed). */
int job_push_event(sched_job *j, sched_event *ev);
/** Non-zero when the job was cancelled or its deadline has passed (records which). */
int job_should_stop(sched_job *j);
void job_event_free(sched_event *ev);

/* A transcription: runs j on slot, writing j->out (status, result). */
void transcribe_job_run(const steno_whisper *w, sched_slot *slot, sched_job *j);

/* A generation: one row of the batch engine (batch.c), stepped by generate_job.c's functions. */
typedef struct gen_row {
    const steno_llm *m;
    sched_slot *slot;  /* the row's context and the tokens it holds */
    sched_job *j;      /* NULL: the row is free */
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
steno_status gen_row_start(gen_row *r, const steno_llm *m, sched_slot *slot, sched_job *j, prompt_cache *pc,
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
/** Ends the row's job: flushes the held-back text into j->out.text, frees the per-job state. */
void gen_row_finish(gen_row *r);
/** Copies the request's data into j (the params' strings and arrays). Errors: STENO_E_NOMEM. */
steno_status transcribe_job_init(sched_job *j, const sched_transcribe_req *r);
steno_status generate_job_init(sched_job *j, const sched_generate_req *r);
void job_payload_free(sched_job *j);

/* A queue of jobs of one kind, under the scheduler's lock. */
typedef struct job_queue {
    sched_job *head, *tail;
    int n_queued, n_running;
} job_queue;

struct steno_sched {
    sched_params p;
    steno_whisper *whisper;
    steno_llm *llm;
    int n_ctx;
    sched_slot *slots;   /* [n_parallel]: the Whisper states of the transcription workers */
    pthread_t *workers;
    int n_workers;       /* started */
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* a transcription was queued, or shutdown */
    pthread_cond_t tcv;  /* a generation was queued, or shutdown */
    job_queue q[2];      /* by job_kind */
    unsigned long long n_completed, n_cancelled, n_failed;
    int stopping;
    sched_job **running; /* [n_parallel]: the job each worker runs, for sched_free's cancel */
    /* the batch engine (batch.c): generation rows stepped together */
    sched_slot *rows_slot; /* [n_parallel]: each row's LLM context and cached tokens */
    gen_row *rows;         /* [n_parallel] */
    steno_llm_ctx *exec;   /* the pass's scratch and thread pool */
    prompt_cache *pcache;  /* saved states of evicted rows (NULL: none); the engine's only */
    sched_cache_stats cache_stats; /* under mu: its counters, published by the engine */
    pthread_t engine;
    int engine_started;
    whisper_xbatch *xbatch; /* the slots' decoder steps batched (NULL: each slot alone) */
};

/** The batch engine's thread (batch.c): admits queued generations into free rows and steps the
 *  running ones until shutdown. */
void *batch_engine_main(void *arg);
/** Takes the oldest queued job of kind into the running count, or NULL (none queued, or
 *  stopping and wait = 0). With wait, blocks while none is queued and not stopping. */
sched_job *sched_take(steno_sched *s, job_kind kind, int wait);
/** The kv_need of the oldest queued generation; 0 when none is queued. */
size_t sched_peek_need(steno_sched *s);
/** Accounts a job taken by sched_take as ended (completed, cancelled or failed), marks it done
 *  and drops the scheduler's reference. */
void sched_job_ended(steno_sched *s, sched_job *j);
/** Marks a job taken by sched_take as running (its queue time). */
void sched_job_started(steno_sched *s, sched_job *j);
/** Copies the prompt cache's counters where sched_prompt_cache_stats reads them (engine thread). */
void sched_publish_cache_stats(steno_sched *s);

#endif
