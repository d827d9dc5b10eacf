/* job.h — the inside of a sched_job and a slot, shared by sched.c (queue, workers, lifetime) and
 * the job kinds (transcribe_job.c, generate_job.c). Not part of the scheduler's interface. */
#ifndef STENO_SCHED_JOB_H
#define STENO_SCHED_JOB_H

#include <pthread.h>
#include <stdatomic.h>

#include "sched/sched.h"

typedef enum job_kind { JOB_TRANSCRIBE = 0, JOB_GENERATE = 1 } job_kind;

/* One slot: the mutable state a running job uses. cached holds the tokens now in ctx's KV caches
 * (the prefix a later generation on this slot may reuse). */
typedef struct sched_slot {
    steno_whisper_state *ws; /* NULL without a Whisper model */
    steno_llm_ctx *lc;       /* NULL without an LLM */
    int *cached;
    int n_cached, cap_cached;
} sched_slot;

struct sched_job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;                 /* under the scheduler's lock */
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
    float *samples;
    size_t n_samples;
    steno_transcribe_params tp;
    void *owned[16];          /* copies of the params' strings and arrays */
    int n_owned;
    /* JOB_GENERATE */
    int *prompt;
    int n_prompt, max_tokens;
    steno_sampler_params sp;
    char **stop;
    int n_stop, top_logprobs;
};

/** Appends ev (malloc'd, ownership taken) and wakes the waiters. Returns 0, -1 when out of memory
 *  (ev is then freed). */
int job_push_event(sched_job *j, sched_event *ev);
/** Non-zero when the job was cancelled or its deadline has passed (records which). */
int job_should_stop(sched_job *j);
void job_event_free(sched_event *ev);

/* the job kinds: run j on slot, writing j->out (status, result or text) */
void transcribe_job_run(const steno_whisper *w, sched_slot *slot, sched_job *j);
void generate_job_run(const steno_llm *m, sched_slot *slot, sched_job *j);
/** Copies the request's data into j (the params' strings and arrays). Errors: STENO_E_NOMEM. */
steno_status transcribe_job_init(sched_job *j, const sched_transcribe_req *r);
steno_status generate_job_init(sched_job *j, const sched_generate_req *r);
void job_payload_free(sched_job *j);

#endif
