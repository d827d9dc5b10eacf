#include "whisper/longform/window_group.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

enum { M_RUNNABLE, M_STEP, M_DONE };

typedef struct member {
    whisper_batch *b;
    int index, state;
    whisper_fast_decoder *dec;
    /* the pending step */
    const int *tokens;
    int rows;
    float *logits;
    steno_status step_status;
    /* the job */
    whisper_batch_job job;
    void *arg;
    steno_status status;
    char msg[1024];
} member;

struct whisper_batch {
    whisper_fast_group *group;
    int max_members;
    member *m;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int turn; /* index of the member holding the baton; -1: the driver */
    /* the group step's arguments, [max_members] each */
    whisper_fast_decoder **ds;
    int *n_rows;
    const int **tokens;
    float **logits;
    long steps, rows;
};

steno_status whisper_batch_create(whisper_fast *f, int max_members, int max_rows, whisper_batch **out) {
    *out = NULL;
    if (max_members < 1 || max_rows < max_members)
        return steno_fail(STENO_E_INVALID_ARG, "batch: %d members, %d rows", max_members, max_rows);
    whisper_batch *b = calloc(1, sizeof *b);
    if (!b) return steno_fail(STENO_E_NOMEM, "out of memory");
    b->max_members = max_members;
    b->m = calloc((size_t)max_members, sizeof *b->m);
    b->ds = malloc(sizeof *b->ds * (size_t)max_members);
    b->n_rows = malloc(sizeof(int) * (size_t)max_members);
    b->tokens = malloc(sizeof *b->tokens * (size_t)max_members);
    b->logits = malloc(sizeof *b->logits * (size_t)max_members);
    if (!b->m || !b->ds || !b->n_rows || !b->tokens || !b->logits) {
        whisper_batch_free(b);
        return steno_fail(STENO_E_NOMEM, "out of memory");
    }
    steno_status st = whisper_fast_group_create(f, max_rows, &b->group);
    if (st != STENO_OK) {
        whisper_batch_free(b);
        return st;
    }
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    *out = b;
    return STENO_OK;
}

void whisper_batch_free(whisper_batch *b) {
    if (!b) return;
    if (b->group) {
        pthread_mutex_destroy(&b->mu);
        pthread_cond_destroy(&b->cv);
    }
    whisper_fast_group_free(b->group);
    free(b->m);
    free(b->ds);
    free(b->n_rows);
    free(b->tokens);
    free(b->logits);
    free(b);
}

/* Hands the baton to the driver and waits until it comes back to member x (mu held). */
static void yield_to_driver(member *x) {
    whisper_batch *b = x->b;
    b->turn = -1;
    pthread_cond_broadcast(&b->cv);
    while (b->turn != x->index) pthread_cond_wait(&b->cv, &b->mu);
}

/* The decoder's single-token step, on the member's thread: queued for the next group step. */
static steno_status step_hook(void *ctx, whisper_fast_decoder *d, const int *tokens, int B, float *logits) {
    (void)d;
    member *x = ctx;
    pthread_mutex_lock(&x->b->mu);
    x->tokens = tokens;
    x->rows = B;
    x->logits = logits;
    x->state = M_STEP;
    yield_to_driver(x);
    pthread_mutex_unlock(&x->b->mu);
    if (x->step_status != STENO_OK) return steno_fail(x->step_status, "%s", x->msg);
    return STENO_OK;
}

static void *member_main(void *arg) {
    member *x = arg;
    whisper_batch *b = x->b;
    pthread_mutex_lock(&b->mu);
    while (b->turn != x->index) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    steno_clear_error();
    x->status = x->job(x->arg);
    if (x->status != STENO_OK) snprintf(x->msg, sizeof x->msg, "%s", steno_errmsg());
    pthread_mutex_lock(&b->mu);
    x->state = M_DONE;
    b->turn = -1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

steno_status whisper_batch_run(whisper_batch *b, int n, whisper_fast_decoder *const *decs, whisper_batch_job job,
                               void *const *args, steno_status *st) {
    if (n < 1 || n > b->max_members)
        return steno_fail(STENO_E_INVALID_ARG, "batch: %d members (at most %d)", n, b->max_members);
    pthread_t *th = malloc(sizeof *th * (size_t)n);
    if (!th) return steno_fail(STENO_E_NOMEM, "out of memory");
    b->turn = -1;
    b->steps = b->rows = 0;
    int started = 0;
    steno_status result = STENO_OK;
    for (int i = 0; i < n; i++) {
        member *x = &b->m[i];
        memset(x, 0, sizeof *x);
        x->b = b;
        x->index = i;
        x->state = M_RUNNABLE;
        x->dec = decs[i];
        x->job = job;
        x->arg = args[i];
        whisper_fast_decoder_set_step_hook(decs[i], step_hook, x);
    }
    for (; started < n; started++)
        if (pthread_create(&th[started], NULL, member_main, &b->m[started]) != 0) break;
    if (started < n) { /* the started ones run to completion alone; the rest fail */
        result = steno_fail(STENO_E_NOMEM, "batch: could not start a thread");
        for (int i = started; i < n; i++) b->m[i].state = M_DONE, b->m[i].status = STENO_E_NOMEM;
    }
    pthread_mutex_lock(&b->mu);
    for (;;) {
        int waiting = 0;
        for (int i = 0; i < n; i++) {
            member *x = &b->m[i];
            if (x->state == M_RUNNABLE) { /* runs until its next step or its end */
                b->turn = i;
                pthread_cond_broadcast(&b->cv);
                while (b->turn != -1) pthread_cond_wait(&b->cv, &b->mu);
            }
            if (x->state == M_STEP) {
                b->ds[waiting] = x->dec;
                b->n_rows[waiting] = x->rows;
                b->tokens[waiting] = x->tokens;
                b->logits[waiting] = x->logits;
                waiting++;
            }
        }
        if (!waiting) break;
        /* the members wait on the condition variable: the group step has the pool to itself */
        const steno_status s = whisper_fast_group_step(b->group, b->ds, b->n_rows, waiting, b->tokens, b->logits);
        char msg[1024] = "";
        if (s != STENO_OK) snprintf(msg, sizeof msg, "%s", steno_errmsg());
        b->steps++;
        for (int i = 0; i < n; i++) {
            member *x = &b->m[i];
            if (x->state != M_STEP) continue;
            b->rows += x->rows;
            x->step_status = s;
            if (s != STENO_OK) snprintf(x->msg, sizeof x->msg, "%s", msg);
            x->state = M_RUNNABLE;
        }
    }
    pthread_mutex_unlock(&b->mu);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    free(th);
    for (int i = 0; i < n; i++) {
        whisper_fast_decoder_set_step_hook(decs[i], NULL, NULL);
        if (st) st[i] = b->m[i].status;
        if (b->m[i].status != STENO_OK && result == STENO_OK) result = steno_fail(b->m[i].status, "%s", b->m[i].msg);
    }
    return result;
}

void whisper_batch_stats(const whisper_batch *b, long *steps, long *rows) {
    *steps = b->steps;
    *rows = b->rows;
}
