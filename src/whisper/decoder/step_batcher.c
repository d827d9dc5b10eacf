/* step_batcher.c — cross-request batching of decoder steps: the rendezvous of step_batcher.h. */
#include "whisper/decoder/step_batcher.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "whisper/handle.h"

enum { X_OUT, X_RUN, X_WAIT, X_STEP, X_AWAY };

struct whisper_xbatch_member {
    whisper_xbatch *x;
    int state; /* under x->mu */
    /* the pending step */
    whisper_fast_decoder *d;
    const int *tokens;
    int rows;
    float *logits;
    int done;
    steno_status status;
    char msg[512];
};

struct whisper_xbatch {
    steno_pool *pool;
    whisper_fast *f; /* a share of the weights over pool */
    whisper_fast_group *group;
    int max_members, max_rows;
    whisper_xbatch_member *m;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stepping;     /* a group step runs on pool (its leader has released mu) */
    int encoding;     /* an encoder pass runs on pool */
    int enc_waiting;  /* encoder passes waiting for pool: they go before the next step */
    double round_t0;  /* when the oldest waiting submission came; 0: none waits */
    double last_step; /* seconds the last group step took */
    int next;         /* the member the next round starts collecting from (rows may not all fit) */
    /* the group step's arguments, [max_members] each */
    whisper_fast_decoder **ds;
    int *n_rows;
    const int **tokens;
    float **logits;
    whisper_xbatch_member **in;
    long steps, rows, timed_out, encodes;
    double step_s, encode_s; /* seconds spent in them */
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

steno_status whisper_xbatch_create(const whisper_fast *src, int n_threads, int max_members, int max_rows,
                                   whisper_xbatch **out) {
    *out = NULL;
    if (max_members < 1 || max_rows < 1 || n_threads < 1)
        return steno_fail(STENO_E_INVALID_ARG, "xbatch: %d members, %d rows, %d threads", max_members, max_rows,
                          n_threads);
    whisper_xbatch *x = calloc(1, sizeof *x);
    if (!x) return steno_fail(STENO_E_NOMEM, "out of memory");
    x->max_members = max_members;
    x->max_rows = max_rows;
    x->m = calloc((size_t)max_members, sizeof *x->m);
    x->ds = malloc(sizeof *x->ds * (size_t)max_members);
    x->n_rows = malloc(sizeof(int) * (size_t)max_members);
    x->tokens = malloc(sizeof *x->tokens * (size_t)max_members);
    x->logits = malloc(sizeof *x->logits * (size_t)max_members);
    x->in = malloc(sizeof *x->in * (size_t)max_members);
    steno_status st = STENO_OK;
    if (!x->m || !x->ds || !x->n_rows || !x->tokens || !x->logits || !x->in)
        st = steno_fail(STENO_E_NOMEM, "out of memory");
    if (st == STENO_OK) st = steno_pool_create(n_threads, &x->pool);
    if (st == STENO_OK) st = whisper_fast_share(src, x->pool, &x->f);
    if (st == STENO_OK) st = whisper_fast_group_create(x->f, max_rows, &x->group);
    if (st != STENO_OK) {
        whisper_xbatch_free(x);
        return st;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&x->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&x->mu, NULL);
    for (int i = 0; i < max_members; i++) x->m[i].x = x, x->m[i].state = X_OUT;
    *out = x;
    return STENO_OK;
}

void whisper_xbatch_free(whisper_xbatch *x) {
    if (!x) return;
    if (x->group) {
        pthread_mutex_destroy(&x->mu);
        pthread_cond_destroy(&x->cv);
    }
    whisper_fast_group_free(x->group);
    whisper_fast_free(x->f);
    steno_pool_free(x->pool);
    free(x->m);
    free(x->ds);
    free(x->n_rows);
    free(x->tokens);
    free(x->logits);
    free(x->in);
    free(x);
}

whisper_xbatch_member *whisper_xbatch_member_at(whisper_xbatch *x, int i) {
    return i >= 0 && i < x->max_members ? &x->m[i] : NULL;
}

/* Runs one group step over the waiting members (mu held on entry and on return; released while
 * the step computes). timed: the round closed on its bound, so the members still running are
 * counted as away from now on. */
static void lead(whisper_xbatch *x, int timed) {
    int n = 0, R = 0;
    for (int k = 0; k < x->max_members; k++) {
        whisper_xbatch_member *mb = &x->m[(x->next + k) % x->max_members];
        if (timed && mb->state == X_RUN) mb->state = X_AWAY;
        if (mb->state != X_WAIT || R + mb->rows > x->max_rows) continue;
        mb->state = X_STEP;
        x->in[n] = mb;
        x->ds[n] = mb->d;
        x->n_rows[n] = mb->rows;
        x->tokens[n] = mb->tokens;
        x->logits[n] = mb->logits;
        R += mb->rows;
        n++;
    }
    x->next = (x->next + 1) % x->max_members;
    x->stepping = 1;
    x->steps++;
    x->rows += R;
    x->timed_out += timed;
    pthread_mutex_unlock(&x->mu);
    const double t0 = now_s();
    const steno_status st = whisper_fast_group_step(x->group, x->ds, x->n_rows, n, x->tokens, x->logits);
    const double dt = now_s() - t0;
    char msg[512] = "";
    if (st != STENO_OK) snprintf(msg, sizeof msg, "%s", steno_errmsg());
    pthread_mutex_lock(&x->mu);
    for (int i = 0; i < n; i++) {
        whisper_xbatch_member *mb = x->in[i];
        mb->status = st;
        memcpy(mb->msg, msg, sizeof msg);
        mb->done = 1;
        mb->state = X_RUN;
    }
    x->last_step = dt;
    x->step_s += dt;
    x->stepping = 0;
    x->round_t0 = 0;
    for (int k = 0; k < x->max_members; k++) /* left over (rows did not fit): a new round, now */
        if (x->m[k].state == X_WAIT) x->round_t0 = now_s();
    pthread_cond_broadcast(&x->cv);
}

/* A member's step alone on its own pool: more rows than a group step holds. */
static steno_status step_alone(whisper_fast_decoder *d, const int *tokens, int B, float *logits, void *ctx) {
    whisper_fast_decoder_set_step_hook(d, NULL, NULL);
    const steno_status st = whisper_fast_decoder_step_rows(d, tokens, B, logits);
    whisper_fast_decoder_set_step_hook(d, whisper_xbatch_step, ctx);
    return st;
}

steno_status whisper_xbatch_step(void *member, whisper_fast_decoder *d, const int *tokens, int B, float *logits) {
    whisper_xbatch_member *mb = member;
    whisper_xbatch *x = mb->x;
    if (B > x->max_rows) return step_alone(d, tokens, B, logits, member);
    /* a bad step fails its own member here, never the others it would have been grouped with */
    const steno_status chk = whisper_fast_group_check(x->group, d, (int)(mb - x->m), B, tokens);
    if (chk != STENO_OK) return chk;
    pthread_mutex_lock(&x->mu);
    mb->d = d;
    mb->tokens = tokens;
    mb->rows = B;
    mb->logits = logits;
    mb->done = 0;
    mb->state = X_WAIT;
    if (x->round_t0 == 0) x->round_t0 = now_s();
    pthread_cond_broadcast(&x->cv); /* this may complete the round another member waits on */
    while (!mb->done) {
        if (x->stepping || x->encoding || x->enc_waiting) { /* pool busy, or an encoder pass goes first */
            pthread_cond_wait(&x->cv, &x->mu);
            continue;
        }
        int running = 0;
        for (int k = 0; k < x->max_members; k++) running += x->m[k].state == X_RUN;
        const double deadline = x->round_t0 + 1e-3 + 0.5 * x->last_step;
        const int timed = now_s() >= deadline;
        if (!running || timed) {
            lead(x, running > 0);
            continue;
        }
        struct timespec ts;
        const double whole = (double)(long long)deadline;
        ts.tv_sec = (time_t)whole;
        ts.tv_nsec = (long)((deadline - whole) * 1e9);
        pthread_cond_timedwait(&x->cv, &x->mu, &ts);
    }
    const steno_status st = mb->status;
    char msg[512];
    memcpy(msg, mb->msg, sizeof msg);
    pthread_mutex_unlock(&x->mu);
    return st == STENO_OK ? STENO_OK : steno_fail(st, "%s", msg);
}

void whisper_xbatch_leave(whisper_xbatch_member *mb) {
    whisper_xbatch *x = mb->x;
    pthread_mutex_lock(&x->mu);
    if (mb->state == X_RUN || mb->state == X_AWAY) mb->state = X_OUT;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

steno_status whisper_xbatch_encode(void *member, const float *mel, float *xa) {
    whisper_xbatch *x = ((whisper_xbatch_member *)member)->x;
    pthread_mutex_lock(&x->mu);
    x->enc_waiting++;
    while (x->stepping || x->encoding) pthread_cond_wait(&x->cv, &x->mu);
    x->enc_waiting--;
    x->encoding = 1;
    pthread_mutex_unlock(&x->mu);
    const double t0 = now_s();
    const steno_status st = whisper_fast_encode(x->f, mel, xa);
    const double dt = now_s() - t0;
    pthread_mutex_lock(&x->mu);
    x->encoding = 0;
    x->encodes++;
    x->encode_s += dt;
    if (x->round_t0 != 0) x->round_t0 = now_s(); /* the waiting round's bound starts again */
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
    return st;
}

void whisper_xbatch_stats(whisper_xbatch *x, whisper_xbatch_counters *c) {
    pthread_mutex_lock(&x->mu);
    c->steps = x->steps;
    c->rows = x->rows;
    c->timed_out = x->timed_out;
    c->encodes = x->encodes;
    c->step_seconds = x->step_s;
    c->encode_seconds = x->encode_s;
    pthread_mutex_unlock(&x->mu);
}

steno_status whisper_xbatch_attach(const steno_whisper *w, steno_whisper_state *const *ws, int n, int n_threads,
                                   whisper_xbatch **out) {
    *out = NULL;
    const whisper_model *m;
    whisper_fast *src;
    int nt;
    whisper_handle_parts(w, NULL, &m, &src, &nt);
    if (!src) return STENO_OK;
    whisper_xbatch *x;
    steno_status st = whisper_xbatch_create(src, n_threads, n, 8 * n, &x);
    if (st != STENO_OK) return st;
    for (int i = 0; i < n; i++) {
        whisper_fast *f;
        whisper_handle_parts(w, ws[i], &m, &f, &nt);
        whisper_fast_set_step_hook(f, whisper_xbatch_step, &x->m[i]);
        whisper_fast_set_encode_hook(f, whisper_xbatch_encode, &x->m[i]);
    }
    *out = x;
    return STENO_OK;
}
