/* sched.c — model ownership, the bounded job queue, one worker per slot, job lifetime; see sched.h. */
#include "sched/job.h"

#include "sched/generate_job.h"
#include "sched/transcribe_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"

double sched_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

sched_params sched_default_params(void) {
    sched_params p;
    memset(&p, 0, sizeof p);
    p.whisper_opts = steno_whisper_default_options();
    p.n_parallel = 1;
    p.max_queue = 64;
    p.whisper_batch = 1;
    p.prompt_cache_bytes = (size_t)256 << 20;
    return p;
}

const steno_whisper *sched_whisper(const steno_sched *s) { return s->whisper; }
const steno_llm *sched_llm(const steno_sched *s) { return s->llm; }
int sched_n_ctx(const steno_sched *s) { return s->n_ctx; }

void sched_whisper_batch_stats(steno_sched *s, sched_whisper_stats *st) {
    whisper_xbatch_counters c = {0};
    if (s->xbatch) whisper_xbatch_stats(s->xbatch, &c);
    st->steps = c.steps;
    st->rows = c.rows;
    st->encodes = c.encodes;
    st->step_seconds = c.step_seconds;
    st->encode_seconds = c.encode_seconds;
}
int sched_n_parallel(const steno_sched *s) { return s->p.n_parallel; }

void sched_publish_cache_stats(steno_sched *s) {
    prompt_cache_stats st = {0};
    if (s->pcache) prompt_cache_get_stats(s->pcache, &st);
    pthread_mutex_lock(&s->mu);
    s->cache_stats = (sched_cache_stats){st.entries, st.bytes, st.hits, st.misses, st.stored, st.evicted};
    pthread_mutex_unlock(&s->mu);
}

void sched_prompt_cache_stats(steno_sched *s, sched_cache_stats *st) {
    pthread_mutex_lock(&s->mu);
    *st = s->cache_stats;
    pthread_mutex_unlock(&s->mu);
}

void sched_load(steno_sched *s, int *queued, int *running) {
    pthread_mutex_lock(&s->mu);
    *queued = s->q[0].n_queued + s->q[1].n_queued;
    *running = s->q[0].n_running + s->q[1].n_running;
    pthread_mutex_unlock(&s->mu);
}

void sched_totals(steno_sched *s, unsigned long long *completed, unsigned long long *cancelled,
                  unsigned long long *failed) {
    pthread_mutex_lock(&s->mu);
    *completed = s->n_completed;
    *cancelled = s->n_cancelled;
    *failed = s->n_failed;
    pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------------------------------------------- job life */

void job_event_free(sched_event *ev) {
    if (!ev) return;
    free(ev->text);
    free(ev->piece);
    free(ev);
}

int job_push_event(sched_job *j, sched_event *ev) {
    pthread_mutex_lock(&j->mu);
    if (j->n_events == j->cap_events) {
        const int cap = j->cap_events ? 2 * j->cap_events : 64;
        sched_event **e = realloc(j->events, sizeof *e * (size_t)cap);
        if (!e) {
            pthread_mutex_unlock(&j->mu);
            job_event_free(ev);
            return -1;
        }
        j->events = e;
        j->cap_events = cap;
    }
    j->events[j->n_events++] = ev;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return 0;
}

int job_should_stop(sched_job *j) {
    if (atomic_load(&j->cancel)) return 1;
    if (j->deadline > 0 && sched_now() > j->deadline) {
        j->out.deadline_passed = 1;
        return 1;
    }
    return 0;
}

static void job_free(sched_job *j) {
    for (int i = 0; i < j->n_events; i++) job_event_free(j->events[i]);
    free(j->events);
    steno_result_free(j->out.result);
    free(j->out.text);
    if (j->kind == JOB_TRANSCRIBE) transcribe_job_free_part(transcribe_job_of(j));
    else generate_job_free_part(generate_job_of(j));
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

/* Every reference is counted under the scheduler-independent job lock, so a job outlives the
 * scheduler when its submitter still holds it. */
static void job_unref(sched_job *j) {
    pthread_mutex_lock(&j->mu);
    const int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left == 0) job_free(j);
}

void sched_job_release(sched_job *j) {
    if (j) job_unref(j);
}

static void job_finish(sched_job *j);

/* A queued job that is cancelled leaves the queue at once: a client that gave up must not hold
 * a place that max_queue counts (its 429 would turn others away). A running job stops at its
 * next check. */
void sched_job_cancel(sched_job *j) {
    if (!j) return;
    atomic_store(&j->cancel, 1);
    steno_sched *s = j->owner;
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    job_queue *jq = &s->q[j->kind];
    sched_job *prev = NULL, *q = jq->head;
    while (q && q != j) {
        prev = q;
        q = q->next;
    }
    if (q) {
        if (prev) prev->next = j->next;
        else jq->head = j->next;
        if (jq->tail == j) jq->tail = prev;
        j->next = NULL;
        jq->n_queued--;
        s->n_cancelled++;
    }
    pthread_mutex_unlock(&s->mu);
    if (!q) return;
    j->out.status = STENO_E_ABORTED;
    j->out.cancelled = 1;
    snprintf(j->out.errmsg, sizeof j->out.errmsg, "cancelled while queued");
    job_finish(j);
    job_unref(j); /* the queue's reference */
}

static void job_finish(sched_job *j) {
    pthread_mutex_lock(&j->mu);
    j->state = SCHED_DONE;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

int sched_job_wait(sched_job *j, int have, int timeout_ms, int *done) {
    pthread_mutex_lock(&j->mu);
    if (j->n_events <= have && j->state != SCHED_DONE && timeout_ms > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += timeout_ms / 1000;
        ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (j->n_events <= have && j->state != SCHED_DONE)
            if (pthread_cond_timedwait(&j->cv, &j->mu, &ts) != 0) break;
    }
    const int n = j->n_events;
    *done = j->state == SCHED_DONE;
    pthread_mutex_unlock(&j->mu);
    return n;
}

const sched_event *sched_job_event(sched_job *j, int i) {
    pthread_mutex_lock(&j->mu);
    const sched_event *ev = i >= 0 && i < j->n_events ? j->events[i] : NULL;
    pthread_mutex_unlock(&j->mu);
    return ev;
}

sched_job_state sched_job_get_state(sched_job *j) {
    pthread_mutex_lock(&j->mu);
    const sched_job_state st = j->state;
    pthread_mutex_unlock(&j->mu);
    return st;
}

const sched_outcome *sched_job_outcome(sched_job *j) {
    return sched_job_get_state(j) == SCHED_DONE ? &j->out : NULL;
}

/* ---------------------------------------------------------------------------------- the workers */

typedef struct worker_arg {
    steno_sched *s;
    int slot;
} worker_arg;

static void run_job(steno_sched *s, sched_slot *slot, sched_job *j) {
    steno_clear_error();
    if (job_should_stop(j)) {
        j->out.status = STENO_E_ABORTED;
        j->out.cancelled = 1;
        snprintf(j->out.errmsg, sizeof j->out.errmsg, "%s", j->out.deadline_passed ? "deadline passed" : "cancelled");
        return;
    }
    transcribe_job_run(s->whisper, slot, transcribe_job_of(j));
    if (j->out.status == STENO_E_ABORTED || atomic_load(&j->cancel) || j->out.deadline_passed) j->out.cancelled = 1;
    if (j->out.status != STENO_OK && !j->out.errmsg[0])
        snprintf(j->out.errmsg, sizeof j->out.errmsg, "%s", steno_errmsg());
}

sched_job *sched_take(steno_sched *s, job_kind kind, int wait) {
    job_queue *q = &s->q[kind];
    pthread_cond_t *cv = kind == JOB_TRANSCRIBE ? &s->cv : &s->tcv;
    pthread_mutex_lock(&s->mu);
    while (wait && !q->head && !s->stopping) pthread_cond_wait(cv, &s->mu);
    sched_job *j = q->head;
    if (j) {
        q->head = j->next;
        if (!q->head) q->tail = NULL;
        j->next = NULL;
        q->n_queued--;
        q->n_running++;
        if (s->stopping) atomic_store(&j->cancel, 1); /* read under the lock cancel_all takes */
    }
    pthread_mutex_unlock(&s->mu);
    return j;
}

size_t sched_peek_need(steno_sched *s) {
    pthread_mutex_lock(&s->mu);
    const size_t n = s->q[JOB_GENERATE].head ? generate_job_of(s->q[JOB_GENERATE].head)->kv_need : 0;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void sched_job_started(steno_sched *s, sched_job *j) {
    pthread_mutex_lock(&j->mu);
    j->state = SCHED_RUNNING;
    pthread_mutex_unlock(&j->mu);
    j->t_start = sched_now();
    j->out.queue_seconds = j->t_start - j->t_submit;
}

void sched_job_ended(steno_sched *s, sched_job *j) {
    j->out.run_seconds = sched_now() - j->t_start;
    pthread_mutex_lock(&s->mu);
    s->q[j->kind].n_running--;
    if (j->out.cancelled) s->n_cancelled++;
    else if (j->out.status != STENO_OK) s->n_failed++;
    else s->n_completed++;
    pthread_mutex_unlock(&s->mu);
    job_finish(j);
    job_unref(j);
}

static void *worker_main(void *arg) {
    worker_arg *a = arg;
    steno_sched *s = a->s;
    const int k = a->slot;
    free(a);
    for (;;) {
        sched_job *j = sched_take(s, JOB_TRANSCRIBE, 1);
        if (!j) return NULL; /* stopping with nothing queued */
        pthread_mutex_lock(&s->mu);
        s->running[k] = j;
        if (s->stopping) atomic_store(&j->cancel, 1); /* cancel_all may have run since the take */
        pthread_mutex_unlock(&s->mu);
        sched_job_started(s, j);
        run_job(s, &s->slots[k], j);
        pthread_mutex_lock(&s->mu);
        s->running[k] = NULL;
        pthread_mutex_unlock(&s->mu);
        sched_job_ended(s, j);
    }
}

/* -------------------------------------------------------------------------------- life of sched */

steno_status sched_new(const sched_params *params, steno_sched **out) {
    *out = NULL;
    sched_params p = params ? *params : sched_default_params();
    if (p.n_parallel <= 0) p.n_parallel = 1;
    if (p.n_parallel > 256) return steno_fail(STENO_E_INVALID_ARG, "parallel: %d slots (at most 256)", p.n_parallel);
    /* the rows' drafter is prompt lookup; a draft model per row (its own cache, its own batched
     * pass) is not built: refused rather than silently replaced by ngram */
    if (p.spec.kind != STENO_DRAFT_NONE && p.spec.kind != STENO_DRAFT_NGRAM)
        return steno_fail(STENO_E_UNSUPPORTED, "steno serve --draft-kind: only none and ngram (the batched rows have no "
                                               "draft-model pass)");
    if (p.max_queue < 0) p.max_queue = 0;
    if (p.prefill_chunk <= 0) p.prefill_chunk = 64;
    if (p.prefill_chunk > 4096 - 256) p.prefill_chunk = 4096 - 256;
    if (p.n_threads <= 0) {
        const long nc = sysconf(_SC_NPROCESSORS_ONLN);
        p.n_threads = nc > 0 ? (int)(nc / p.n_parallel) : 1;
        if (p.n_threads < 1) p.n_threads = 1;
    }
    steno_sched *s = calloc(1, sizeof *s);
    if (!s) return steno_fail(STENO_E_NOMEM, "out of memory");
    s->p = p;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->tcv, NULL);
    steno_status st = STENO_OK;
    s->slots = calloc((size_t)p.n_parallel, sizeof *s->slots);
    s->workers = calloc((size_t)p.n_parallel, sizeof *s->workers);
    s->running = calloc((size_t)p.n_parallel, sizeof *s->running);
    s->rows_slot = calloc((size_t)p.n_parallel, sizeof *s->rows_slot);
    s->rows = calloc((size_t)p.n_parallel, sizeof *s->rows);
    if (!s->slots || !s->workers || !s->running || !s->rows_slot || !s->rows) {
        st = steno_fail(STENO_E_NOMEM, "out of memory");
        goto fail;
    }
    if (p.whisper_path) {
        steno_whisper_options o = p.whisper_opts;
        o.n_threads = p.n_threads;
        if ((st = steno_whisper_load_ex(p.whisper_path, &o, &s->whisper)) != STENO_OK) goto fail;
        for (int k = 0; k < p.n_parallel; k++)
            if ((st = steno_whisper_state_new(s->whisper, p.n_threads, &s->slots[k].ws)) != STENO_OK) goto fail;
        if (p.whisper_batch && p.n_parallel > 1) {
            const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
            int nt = p.n_threads * p.n_parallel;
            if (ncpu > 0 && nt > ncpu) nt = p.n_threads > ncpu ? p.n_threads : (int)ncpu;
            steno_whisper_state **ws = malloc(sizeof *ws * (size_t)p.n_parallel);
            if (!ws) {
                st = steno_fail(STENO_E_NOMEM, "out of memory");
                goto fail;
            }
            for (int k = 0; k < p.n_parallel; k++) ws[k] = s->slots[k].ws;
            st = whisper_xbatch_attach(s->whisper, ws, p.n_parallel, nt, &s->xbatch);
            free(ws);
            if (st != STENO_OK) goto fail;
            for (int k = 0; s->xbatch && k < p.n_parallel; k++) s->slots[k].xm = whisper_xbatch_member_at(s->xbatch, k);
        }
    }
    if (p.llm_path) {
        if ((st = steno_llm_load(p.llm_path, NULL, &s->llm)) != STENO_OK) goto fail;
        steno_llm_info info;
        steno_llm_get_info(s->llm, &info);
        s->n_ctx = p.n_ctx > 0 ? p.n_ctx : (info.n_ctx_train > 0 && info.n_ctx_train < 4096 ? info.n_ctx_train : 4096);
        /* the rows only hold caches (n_batch 1: no scratch to speak of, no threads); the
         * executor runs every pass: prefill chunks of prefill_chunk prompt tokens (64 by default:
         * measured on 2 cores, a 2 000-token prompt reaches its first token as fast as with 256
         * while the running streams' inter-token gap during it drops from 2.7 s to 0.7 s) plus
         * one decode token per row */
        steno_llm_ctx_params cp = steno_llm_ctx_default_params();
        cp.n_threads = 1;
        cp.n_batch = 1;
        cp.n_ctx = s->n_ctx;
        cp.compute = p.llm_compute;
        for (int k = 0; k < p.n_parallel; k++)
            if ((st = steno_llm_ctx_new(s->llm, &cp, &s->rows_slot[k].lc)) != STENO_OK) goto fail;
        steno_llm_ctx_params ep = steno_llm_ctx_default_params();
        const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        ep.n_threads = p.n_threads * p.n_parallel;
        if (ncpu > 0 && ep.n_threads > ncpu) ep.n_threads = p.n_threads > ncpu ? p.n_threads : (int)ncpu;
        if (p.n_threads_batch > 0) ep.n_threads = p.n_threads_batch;
        ep.n_ctx = s->n_ctx;
        ep.compute = p.llm_compute;
        ep.n_batch = p.prefill_chunk + p.n_parallel; /* one decode token per row, and a draft with speculation */
        if (p.spec.kind != STENO_DRAFT_NONE) ep.n_batch += p.n_parallel * SCHED_MAX_DRAFT;
        if ((st = steno_llm_ctx_new(s->llm, &ep, &s->exec)) != STENO_OK) goto fail;
        if (p.kv_budget_bytes) { /* the least one request needs: its row at one step, the others empty */
            const size_t least = steno_llm_kv_bytes_at(s->rows_slot[0].lc, 1, p.prefill_chunk) +
                                 (size_t)(p.n_parallel - 1) * steno_llm_kv_bytes_at(s->rows_slot[0].lc, 0, 1);
            if (p.kv_budget_bytes < least) {
                st = steno_fail(STENO_E_INVALID_ARG,
                                "--kv-budget %zu: this model's KV caches need at least %zu bytes for one request "
                                "beside %d empty rows (--parallel %d)",
                                p.kv_budget_bytes, least, p.n_parallel - 1, p.n_parallel);
                goto fail;
            }
        }
        if (p.prompt_cache_bytes == 0 && p.prompt_cache_dir) {
            st = steno_fail(STENO_E_INVALID_ARG, "--prompt-cache-dir %s needs a prompt cache (--prompt-cache-bytes is 0)",
                            p.prompt_cache_dir);
            goto fail;
        }
        if (p.prompt_cache_bytes > 0) {
            char cfg[4096];
            steno_llm_state_config(s->rows_slot[0].lc, cfg, sizeof cfg);
            prompt_cache_params pp = {p.prompt_cache_bytes, p.prompt_cache_dir, p.llm_path, cfg, 0, p.log, p.log_user};
            if (!(s->pcache = prompt_cache_new(&pp))) {
                st = steno_fail(STENO_E_INVALID_ARG, "prompt cache%s%s: cannot be set up (see the log)",
                                p.prompt_cache_dir ? " in " : "", p.prompt_cache_dir ? p.prompt_cache_dir : "");
                goto fail;
            }
            sched_publish_cache_stats(s);
        }
        if (pthread_create(&s->engine, NULL, batch_engine_main, s) != 0) {
            st = steno_fail(STENO_E_NOMEM, "scheduler: cannot start the batch engine");
            goto fail;
        }
        s->engine_started = 1;
    }
    for (int k = 0; s->whisper && k < p.n_parallel; k++) {
        worker_arg *a = malloc(sizeof *a);
        if (!a) {
            st = steno_fail(STENO_E_NOMEM, "out of memory");
            goto fail;
        }
        a->s = s;
        a->slot = k;
        if (pthread_create(&s->workers[k], NULL, worker_main, a) != 0) {
            free(a);
            st = steno_fail(STENO_E_NOMEM, "scheduler: cannot start a worker thread");
            goto fail;
        }
        s->n_workers++;
    }
    *out = s;
    return STENO_OK;
fail:
    sched_free(s);
    return st;
}

void sched_cancel_all(steno_sched *s) {
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    for (int kind = 0; kind < 2; kind++)
        for (sched_job *j = s->q[kind].head; j; j = j->next) atomic_store(&j->cancel, 1);
    for (int k = 0; s->running && k < s->p.n_parallel; k++)
        if (s->running[k]) atomic_store(&s->running[k]->cancel, 1);
    for (int k = 0; s->rows && k < s->p.n_parallel; k++)
        if (s->rows[k].j) atomic_store(&s->rows[k].j->base.cancel, 1);
    pthread_cond_broadcast(&s->cv);
    pthread_cond_broadcast(&s->tcv);
    pthread_mutex_unlock(&s->mu);
}

void sched_free(steno_sched *s) {
    if (!s) return;
    sched_cancel_all(s);
    for (int k = 0; k < s->n_workers; k++) pthread_join(s->workers[k], NULL);
    if (s->engine_started) pthread_join(s->engine, NULL);
    /* with no worker or engine started, jobs may still sit in the queues */
    for (int kind = 0; kind < 2; kind++)
        while (s->q[kind].head) {
            sched_job *j = s->q[kind].head;
            s->q[kind].head = j->next;
            j->out.status = STENO_E_ABORTED;
            j->out.cancelled = 1;
            job_finish(j);
            job_unref(j);
        }
    for (int k = 0; s->slots && k < s->p.n_parallel; k++) steno_whisper_state_free(s->slots[k].ws);
    whisper_xbatch_free(s->xbatch); /* after the states (their hooks point into it), before the model */
    for (int k = 0; s->rows_slot && k < s->p.n_parallel; k++) {
        steno_llm_ctx_free(s->rows_slot[k].lc);
        free(s->rows_slot[k].cached);
    }
    steno_llm_ctx_free(s->exec);
    prompt_cache_free(s->pcache);
    free(s->rows_slot);
    free(s->rows);
    steno_whisper_free(s->whisper);
    steno_llm_free(s->llm);
    free(s->slots);
    free(s->workers);
    free(s->running);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->tcv);
    free(s);
}

/* ------------------------------------------------------------------------------------ admission */

static steno_status submit(steno_sched *s, sched_job *j, double deadline_s, sched_job **out) {
    j->t_submit = sched_now();
    j->deadline = deadline_s > 0 ? j->t_submit + deadline_s : 0;
    pthread_mutex_lock(&s->mu);
    job_queue *q = &s->q[j->kind];
    /* a job that finds a free slot (or row) never waits; max_queue counts only the ones that must */
    if (s->stopping || q->n_queued + q->n_running >= s->p.n_parallel + s->p.max_queue) {
        const int stopping = s->stopping;
        pthread_mutex_unlock(&s->mu);
        job_free(j);
        return stopping ? steno_fail(STENO_E_UNSUPPORTED, "the server is shutting down")
                        : steno_fail(SCHED_E_FULL, "%d requests are already waiting", s->p.max_queue);
    }
    j->refs = 2; /* the submitter's and the queue's */
    j->owner = s;
    if (q->tail) q->tail->next = j;
    else q->head = j;
    q->tail = j;
    q->n_queued++;
    pthread_cond_signal(j->kind == JOB_TRANSCRIBE ? &s->cv : &s->tcv);
    pthread_mutex_unlock(&s->mu);
    *out = j;
    return STENO_OK;
}

static sched_job *job_alloc(job_kind kind) {
    sched_job *j = calloc(1, kind == JOB_TRANSCRIBE ? sizeof(transcribe_job) : sizeof(generate_job));
    if (!j) return NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    atomic_init(&j->cancel, 0);
    j->kind = kind;
    return j;
}

steno_status sched_submit_transcribe(steno_sched *s, const sched_transcribe_req *r, double deadline_s,
                                     sched_job **out) {
    *out = NULL;
    if (!r || !r->audio) return steno_fail(STENO_E_INVALID_ARG, "transcribe: bad request");
    sched_job *j = job_alloc(JOB_TRANSCRIBE);
    if (!j) {
        steno_audio_close(r->audio);
        free(r->audio_bytes);
        return steno_fail(STENO_E_NOMEM, "out of memory");
    }
    transcribe_job_of(j)->audio = r->audio; /* taken here, freed with the job whatever happens next */
    transcribe_job_of(j)->audio_bytes = r->audio_bytes;
    if (!s->whisper) {
        job_free(j);
        return steno_fail(STENO_E_UNSUPPORTED, "no Whisper model is loaded (steno serve --whisper-model)");
    }
    steno_status st = transcribe_job_init(transcribe_job_of(j), r);
    if (st != STENO_OK) {
        job_free(j);
        return st;
    }
    return submit(s, j, deadline_s, out);
}

steno_status sched_submit_generate(steno_sched *s, const sched_generate_req *r, double deadline_s, sched_job **out) {
    *out = NULL;
    if (!s->llm) return steno_fail(STENO_E_UNSUPPORTED, "no LLM is loaded (steno serve --llm-model)");
    if (!r || r->n_prompt <= 0 || !r->prompt || r->max_tokens <= 0 || r->n_stop < 0 || r->top_logprobs < 0 ||
        r->top_logprobs > SCHED_MAX_TOP)
        return steno_fail(STENO_E_INVALID_ARG, "generate: bad request");
    if (r->n_prompt >= s->n_ctx)
        return steno_fail(STENO_E_INVALID_ARG, "the prompt has %d tokens; the context holds %d", r->n_prompt, s->n_ctx);
    /* a token out of range would fail the whole batched pass, every row in it */
    steno_llm_info info;
    steno_llm_get_info(s->llm, &info);
    for (int i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= info.n_vocab)
            return steno_fail(STENO_E_INVALID_ARG, "prompt token %d is %d: not in the vocabulary (0..%d)", i,
                              r->prompt[i], info.n_vocab - 1);
    const int most = r->n_prompt + r->max_tokens < s->n_ctx ? r->n_prompt + r->max_tokens : s->n_ctx;
    const size_t need = steno_llm_kv_bytes_at(s->rows_slot[0].lc, most, s->p.prefill_chunk);
    if (s->p.kv_budget_bytes) {
        /* alone, beside the other rows given back to their empty size */
        const size_t others = (size_t)(s->p.n_parallel - 1) * steno_llm_kv_bytes_at(s->rows_slot[0].lc, 0, 1);
        if (need + others > s->p.kv_budget_bytes)
            return steno_fail(SCHED_E_TOO_BIG,
                              "the request may need %zu bytes of KV cache (%d prompt + %d max_tokens tokens%s), more "
                              "than the server's --kv-budget of %zu bytes allows; lower max_tokens or shorten the "
                              "prompt",
                              need, r->n_prompt, r->max_tokens,
                              most < r->n_prompt + r->max_tokens ? ", up to the context's end" : "",
                              s->p.kv_budget_bytes);
    }
    sched_job *j = job_alloc(JOB_GENERATE);
    if (!j) return steno_fail(STENO_E_NOMEM, "out of memory");
    steno_status st = generate_job_init(generate_job_of(j), r);
    if (st != STENO_OK) {
        job_free(j);
        return st;
    }
    generate_job_of(j)->kv_need = need;
    return submit(s, j, deadline_s, out);
}
