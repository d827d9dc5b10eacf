/* sched.h — the scheduler: it owns the loaded models and runs requests on them as jobs.
 *
 * One steno_sched holds the weights once (a steno_whisper and/or a steno_llm, read-only).
 * Transcriptions: N slots (--parallel N), each a steno_whisper_state (encoder activations,
 * decoder caches, a thread pool); a worker thread per slot takes the oldest queued
 * transcription and runs it. Generations: continuous batching (continuous_batch.c) — one engine thread
 * holds N rows, each a steno_llm_ctx's KV caches; every step it admits queued generations into
 * free rows (the row whose cached tokens share the longest prefix with the prompt) and runs one
 * steno_llm_eval_batch over all running rows: one token per decoding row plus whole prompt chunks
 * (prefill_chunk tokens at most per step) of the rows still reading their prompts, so a long
 * prompt joins without stalling the streams for more than one chunk. Each row's tokens are
 * bit-identical to its solo run (steno_llm_eval_batch's guarantee). No job owns a model.
 * Admission is a bounded queue per kind: sched_submit refuses (SCHED_E_FULL) when max_queue jobs
 * of that kind already wait, so a server can answer 429 instead of queueing without end.
 *
 * A job is reference-counted: the submitter holds one reference and the scheduler one while the
 * job is queued or running, so a client that leaves (sched_job_cancel, then sched_job_release)
 * never frees what a worker still writes. Jobs report progress as events (segments of a
 * transcription, tokens of a generation) appended under the job's lock; a consumer waits for new
 * events with sched_job_wait and reads them by index (events never move once appended).
 * Cancellation is cooperative: a transcription stops before its next 30-s window, a generation
 * before its next token step (or prompt chunk).
 *
 * Thread-safety: every function may be called from any thread, except sched_free (once, after all
 * submitters are done). */
#ifndef STENO_SCHED_H
#define STENO_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "steno.h"
#include "steno_llm.h"

typedef struct steno_sched steno_sched;
typedef struct sched_job sched_job;

typedef struct sched_params {
    const char *whisper_path;    /* CTranslate2 model directory, or NULL: no speech endpoints */
    steno_whisper_options whisper_opts; /* n_threads is ignored: n_threads below */
    const char *llm_path;        /* GGUF / llama2.c file, or NULL: no text endpoints */
    int n_threads;               /* threads per slot; <= 0: online CPUs / n_parallel (at least 1) */
    int n_parallel;              /* slots, jobs running at once (default 1) */
    int max_queue;               /* jobs that may wait for a slot (default 64); more are refused */
    int n_ctx;                   /* LLM positions per slot (default min(4096, training context)) */
    int prefill_chunk;           /* prompt tokens a generation feeds one pass (<= 0: 64) */
    int n_threads_batch;         /* threads of the batched generation pass (<= 0: n_threads x
                                    n_parallel, at most the online CPUs) */
    size_t kv_budget_bytes;      /* KV-cache bytes of all generation rows together (0: no cap):
                                    a generation is admitted when the bytes its row may grow to
                                    (prompt + max_tokens tokens) fit beside the running rows' and
                                    the idle rows' (which give theirs back when needed), refused
                                    (SCHED_E_TOO_BIG) when it could never fit */
    steno_spec_params spec;      /* speculative decoding of generations (kind NONE: off); the
                                    text is the same either way (steno_llm_generate_spec) */
    steno_llm_compute llm_compute; /* arithmetic of every generation (GGML default; FAST: the Lab fast
                                    path, steno_llm.h) */
    int whisper_batch;           /* 1 (default): with n_parallel > 1 on the fast path, the slots'
                                    single-token decoder steps run as rows of one batched step
                                    (whisper/decoder/step_batcher.h) on n_threads x n_parallel threads (at most
                                    the online CPUs); 0: each slot steps alone */
    size_t prompt_cache_bytes;   /* RAM for saved prompt states (prompt_cache.h); 0: none */
    const char *prompt_cache_dir;/* where they persist across restarts, or NULL */
    void (*log)(void *user, const char *msg); /* operator messages (NULL: stderr) */
    void *log_user;
} sched_params;

sched_params sched_default_params(void);

/** Loads the models and starts one worker per slot. Errors: those of steno_whisper_load_ex,
 *  steno_llm_load and steno_llm_ctx_new (the message names the model), STENO_E_NOMEM. */
steno_status sched_new(const sched_params *p, steno_sched **out);
/** Cancels queued and running jobs, joins the workers, frees the models. Jobs still referenced by
 *  their submitters stay valid until released. */
void sched_free(steno_sched *s);
/** Refuses new jobs from now on and cancels every queued and running one (shutdown's last step
 *  before the connections close); sched_free still joins the workers. */
void sched_cancel_all(steno_sched *s);

const steno_whisper *sched_whisper(const steno_sched *s); /* NULL when none was loaded */
const steno_llm *sched_llm(const steno_sched *s);         /* NULL when none was loaded */
int sched_n_ctx(const steno_sched *s);
int sched_n_parallel(const steno_sched *s);

/** Monotonic seconds (CLOCK_MONOTONIC), the clock of every deadline here. */
double sched_now(void);

/** Jobs waiting for a slot / running now. */
void sched_load(steno_sched *s, int *queued, int *running);
/** The prompt cache's counters (zeros without one): entries and bytes held; restores that found
 *  an entry (hits) or none (misses); entries stored and evicted since start. */
typedef struct sched_cache_stats {
    int entries;
    size_t bytes;
    unsigned long long hits, misses, stored, evicted;
} sched_cache_stats;
void sched_prompt_cache_stats(steno_sched *s, sched_cache_stats *st);

/** The slots' batched Whisper work since start (sched_params.whisper_batch; zeros without): decoder
 *  steps run together and the rows they computed in all, encoder passes run on the shared pool,
 *  and the seconds spent in each. */
typedef struct sched_whisper_stats {
    long steps, rows, encodes;
    double step_seconds, encode_seconds;
} sched_whisper_stats;
void sched_whisper_batch_stats(steno_sched *s, sched_whisper_stats *st);

/** Jobs finished since start: completed, cancelled (client gone, deadline, shutdown), failed. */
void sched_totals(steno_sched *s, unsigned long long *completed, unsigned long long *cancelled,
                  unsigned long long *failed);

/* ------------------------------------------------------------------------------------------ jobs */

typedef enum sched_job_state { SCHED_QUEUED = 0, SCHED_RUNNING = 1, SCHED_DONE = 2 } sched_job_state;

typedef enum sched_event_kind {
    SCHED_EV_SEGMENT = 0, /* a transcription segment: text, start, end */
    SCHED_EV_TOKEN = 1    /* a generated token: token, logprob, top; text = the bytes released */
} sched_event_kind;

#define SCHED_MAX_TOP 20 /* top log-probabilities per token (OpenAI's top_logprobs limit) */

typedef struct sched_event {
    sched_event_kind kind;
    char *text;           /* UTF-8, owned by the job (NUL-terminated; may be "") */
    double start, end;    /* SEGMENT: seconds */
    int token;            /* TOKEN */
    float logprob;        /* TOKEN: natural log of the token's probability */
    char *piece;          /* TOKEN: the token's own bytes (may be an incomplete UTF-8 sequence) */
    int piece_len;
    int n_top;
    steno_token_logprob top[SCHED_MAX_TOP];
} sched_event;

/** Transcription request: the audio as a steno_audio (opened over audio_bytes, which it reads
 *  window by window: a queued job holds the upload, not its decoded samples). Submitting takes
 *  both in every case (on failure they are freed at once); every string is copied. */
typedef struct sched_transcribe_req {
    steno_audio *audio;
    void *audio_bytes; /* malloc'd; what audio was opened over (freed after it) */
    steno_transcribe_params params; /* on_segment/should_abort/user are the job's own; the strings
                                       and arrays it points to are copied */
} sched_transcribe_req;

/** Generation request (completions and chat completions). */
typedef struct sched_generate_req {
    const int *prompt;    /* tokens, copied */
    int n_prompt;
    int max_tokens;       /* tokens to generate at most (> 0) */
    steno_sampler_params sampler; /* logit_bias copied */
    const char *const *stop; /* stop strings (copied), matched on the decoded text */
    int n_stop;
    int top_logprobs;     /* 0..SCHED_MAX_TOP: alternatives reported per token */
    int logprobs;         /* 1: each token event carries its log-probability (a log-sum-exp over
                             the vocabulary per token: skipped when 0, the event's logprob is 0) */
} sched_generate_req;

typedef enum sched_finish { SCHED_FINISH_STOP = 0, SCHED_FINISH_LENGTH = 1 } sched_finish;

/** What a finished job holds; valid until the job is released. */
typedef struct sched_outcome {
    steno_status status;   /* STENO_OK, or the failure (message in errmsg) */
    char errmsg[512];
    int cancelled;         /* stopped by sched_job_cancel or its deadline */
    int deadline_passed;
    double queue_seconds, run_seconds;
    /* transcription */
    steno_result *result;  /* owned by the job */
    /* generation */
    char *text;            /* the released text (stop string excluded) */
    int n_prompt, n_cached, n_generated;
    sched_finish finish;
    int spec_on;           /* speculative decoding ran (sched_params.spec): */
    int spec_drafted, spec_accepted, spec_passes; /* draft tokens proposed and kept; passes that
                                                     produced this row's tokens */
} sched_outcome;

/** Queues a job. deadline_s: seconds from now after which the job is cancelled (<= 0: none).
 *  On success *out holds the caller's reference. Errors: STENO_E_UNSUPPORTED (the model is not
 *  loaded), STENO_E_INVALID_ARG, STENO_E_NOMEM, and SCHED_E_FULL when max_queue jobs wait. */
#define SCHED_E_FULL ((steno_status)100)
/** A generation that needs more KV-cache bytes than --kv-budget allows, even alone. */
#define SCHED_E_TOO_BIG ((steno_status)101)
steno_status sched_submit_transcribe(steno_sched *s, const sched_transcribe_req *r, double deadline_s,
                                     sched_job **out);
steno_status sched_submit_generate(steno_sched *s, const sched_generate_req *r, double deadline_s, sched_job **out);

/** Waits up to timeout_ms for an event past index *have or for the job's end. Returns the number
 *  of events now appended (>= *have) and sets *done when the job has finished; the events
 *  0..return-1 may then be read with sched_job_event. */
int sched_job_wait(sched_job *j, int have, int timeout_ms, int *done);
const sched_event *sched_job_event(sched_job *j, int i);
sched_job_state sched_job_get_state(sched_job *j);
/** The outcome of a finished job (NULL before it has finished). */
const sched_outcome *sched_job_outcome(sched_job *j);
/** Asks the job to stop (idempotent); a queued job is dropped without running. */
void sched_job_cancel(sched_job *j);
void sched_job_release(sched_job *j);

#endif
