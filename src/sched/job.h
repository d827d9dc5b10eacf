/* job.h — what every sched_job holds (state, events, outcome, queue link) and the scheduler's
 * inside, shared by sched.c (queue, workers, lifetime) and the job kinds. Each kind extends
 * sched_job with its own part: sched/transcribe_job.h, sched/generate_job.h; this header needs
 * neither, so a kind's code sees only its own. Not part of the scheduler's interface. */
#ifndef STENO_SCHED_JOB_H
#define STENO_SCHED_JOB_H

#include <pthread.h>
#include <stdatomic.h>

#include "sched/sched.h"

typedef enum job_kind { JOB_TRANSCRIBE = 0, JOB_GENERATE = 1 } job_kind;

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
    /* the kind's part follows (transcribe_job, generate_job: sched_job is their first member) */
};

/** Appends ev (malloc'd, ownership taken) and wakes the waiters. Returns 0, -1 when out of memory
 *  (ev is then freed). */
int job_push_event(sched_job *j, sched_event *ev);
/** Non-zero when the job was cancelled or its deadline has passed (records which). */
int job_should_stop(sched_job *j);
void job_event_free(sched_event *ev);

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
    struct sched_slot *slots; /* [n_parallel]: the Whisper states of the transcription workers */
    pthread_t *workers;
    int n_workers;       /* started */
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* a transcription was queued, or shutdown */
    pthread_cond_t tcv;  /* a generation was queued, or shutdown */
    job_queue q[2];      /* by job_kind */
    unsigned long long n_completed, n_cancelled, n_failed;
    int stopping;
    sched_job **running; /* [n_parallel]: the job each worker runs, for sched_free's cancel */
    /* the batch engine (continuous_batch.c): generation rows stepped together */
    struct gen_slot *rows_slot; /* [n_parallel]: each row's LLM context and cached tokens */
    struct gen_row *rows;       /* [n_parallel] */
    steno_llm_ctx *exec;   /* the pass's scratch and thread pool */
    struct prompt_cache *pcache; /* saved states of evicted rows (NULL: none); the engine's only */
    sched_cache_stats cache_stats; /* under mu: its counters, published by the engine */
    pthread_t engine;
    int engine_started;
    struct whisper_xbatch *xbatch; /* the slots' decoder steps batched (NULL: each slot alone) */
};

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
