/* Cross-request batching of decoder steps (whisper/decoder/step_batcher.h).
 *
 * Members: threads, each with its own whisper_fast share (a pool of one thread) and its own
 * decoder, decode one or two "requests" (a window — jfk's first, or the same frames reversed in
 * time — a 2-token prefill, then steps of 1 or 3 rows whose tokens follow from the logits) while
 * joining late (a different number of solo-length pauses before their first step), pausing mid-way
 * (as when they encode their next window) and leaving (whisper_xbatch_leave, or just finishing).
 * Every row's logits at every step must be bit-identical (a 64-bit hash of the bytes) to the same
 * request decoded alone without the batcher, whatever the company. Also:
 *  - a member that stops stepping without leaving (blocked: a cancelled request stuck elsewhere)
 *    stalls nobody: the others finish while it is still blocked (the main thread releases it only
 *    after joining them; a stall would hang the test until ctest's timeout);
 *  - an encoder pass through the batcher (whisper_xbatch_encode) equals whisper_fast_encode;
 *  - a bad step (a token out of range) fails its member before it joins a group;
 *  - the same with q8_0 weights (the group step reads quantized matrices and embedding in place),
 *    fewer members;
 *  - the counters show several rows a step (the steps did batch). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_timedjoin_np */
#endif
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "kernels/quant/quant.h"
#include "test_util.h"
#include "test_whisper.h"
#include "whisper/decoder/step_batcher.h"
#include "rng.h"

#define MAX_STEPS 16
#define MAX_ROWS 3

typedef struct request {
    int window;     /* 0: jfk, 1: reversed */
    int rows;       /* 1 or 3 */
    int steps;      /* single-token steps after the prefill */
    int pause_at;   /* before this step the member is away for a while (-1: never) */
    uint64_t hash[MAX_STEPS][MAX_ROWS];
} request;

typedef struct member_run {
    const whisper_model *m;
    whisper_fast *f; /* the member's share */
    whisper_xbatch *x;
    int index, join_delay_us, n_req, leave;
    request req[2];
    const float *xa[2];
    /* a blocked member: after block_after steps it waits for release */
    int block_after;
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    int *released;
    steno_status status;
} member_run;

static uint64_t hash_row(const float *x, int n) {
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = (const unsigned char *)x;
    for (size_t i = 0; i < sizeof(float) * (size_t)n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* One request on d (hooked or not): prefill, gather to rows, steps; hashes of every row's logits. */
static steno_status decode(const whisper_model *m, whisper_fast_decoder *d, const float *xa, request *r, float *logits,
                           const member_run *blk) {
    const int V = m->n_vocab, n_text = m->special.eot;
    const int pre[2] = {m->special.sot, m->special.no_timestamps};
    whisper_fast_decoder_set_audio(d, xa);
    steno_status st = whisper_fast_decoder_forward(d, pre, 2, logits);
    if (st != STENO_OK) return st;
    const int zeros[MAX_ROWS] = {0};
    if ((st = whisper_fast_decoder_reorder(d, zeros, r->rows)) != STENO_OK) return st;
    int tok[MAX_ROWS];
    for (int b = 0; b < r->rows; b++) tok[b] = argmax(logits, n_text) + b; /* rows differ from the start */
    for (int s = 0; s < r->steps; s++) {
        if (s == r->pause_at) usleep(30000); /* away: the rounds must not wait for it */
        if (blk && s == blk->block_after) {
            pthread_mutex_lock(blk->mu);
            while (!*blk->released) pthread_cond_wait(blk->cv, blk->mu);
            pthread_mutex_unlock(blk->mu);
        }
        if ((st = whisper_fast_decoder_step_rows(d, tok, r->rows, logits)) != STENO_OK) return st;
        for (int b = 0; b < r->rows; b++) {
            r->hash[s][b] = hash_row(logits + (size_t)b * V, V);
            tok[b] = argmax(logits + (size_t)b * V, n_text);
        }
    }
    return STENO_OK;
}

static void *member_main(void *arg) {
    member_run *a = arg;
    float *logits = malloc(sizeof(float) * MAX_ROWS * (size_t)a->m->n_vocab);
    usleep((useconds_t)a->join_delay_us);
    a->status = STENO_OK;
    for (int q = 0; q < a->n_req && a->status == STENO_OK; q++) {
        whisper_fast_decoder *d = NULL;
        /* the hook comes from the share (whisper_fast_set_step_hook), as in the server */
        a->status = whisper_fast_decoder_create_rows(a->f, MAX_ROWS, &d);
        if (a->status == STENO_OK)
            a->status = decode(a->m, d, a->xa[a->req[q].window], &a->req[q], logits, a->block_after >= 0 ? a : NULL);
        whisper_fast_decoder_free(d);
        if (a->leave) whisper_xbatch_leave(whisper_xbatch_member_at(a->x, a->index));
        if (q == 0 && a->n_req > 1) usleep(20000);
    }
    free(logits);
    return NULL;
}

static int join_timeout(pthread_t th, int seconds) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += seconds;
    return pthread_timedjoin_np(th, NULL, &ts);
}

/* n members on model m; member 0 blocks after 2 steps when with_blocker. */
static void scenario(const whisper_model *m, const char *what, int n, int with_blocker, const float *const *xa) {
    steno_pool *pool;
    whisper_fast *f;
    CHECK(steno_pool_create(2, &pool) == STENO_OK, "pool");
    CHECK(whisper_fast_create(m, VEC_F16, 0, pool, &f) == STENO_OK, "%s: fast create: %s", what, steno_errmsg());
    whisper_xbatch *x;
    CHECK(whisper_xbatch_create(f, 2, n, 4 * MAX_ROWS, &x) == STENO_OK, "%s: xbatch: %s", what, steno_errmsg());
    member_run *runs = calloc((size_t)n, sizeof *runs);
    steno_pool **pools = calloc((size_t)n, sizeof *pools);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    int released = 0;
    uint32_t seed = 12345;
    for (int i = 0; i < n; i++) {
        member_run *a = &runs[i];
        CHECK(steno_pool_create(1, &pools[i]) == STENO_OK, "member pool");
        CHECK(whisper_fast_share(f, pools[i], &a->f) == STENO_OK, "share");
        whisper_fast_set_step_hook(a->f, whisper_xbatch_step, whisper_xbatch_member_at(x, i));
        a->m = m, a->x = x, a->index = i, a->xa[0] = xa[0], a->xa[1] = xa[1];
        a->join_delay_us = (int)(rng_lcg_ansi(&seed) >> 16) % 40000;
        a->n_req = 1 + (i % 3 == 1);
        a->leave = i % 2;
        a->block_after = with_blocker && i == 0 ? 2 : -1;
        a->mu = &mu, a->cv = &cv, a->released = &released;
        for (int q = 0; q < a->n_req; q++) {
            request *r = &a->req[q];
            r->window = (i + q) % 2;
            r->rows = (i + q) % 4 == 3 ? 3 : 1;
            r->steps = 6 + (int)(rng_lcg_ansi(&seed) >> 16) % (MAX_STEPS - 6);
            r->pause_at = i % 3 == 2 ? r->steps / 2 : -1;
        }
    }
    /* the solo references: the same requests on a decoder of the model's own state, no hook */
    request *solo = calloc((size_t)n * 2, sizeof *solo);
    whisper_fast_decoder *d1;
    float *logits = malloc(sizeof(float) * MAX_ROWS * (size_t)m->n_vocab);
    CHECK(whisper_fast_decoder_create_rows(f, MAX_ROWS, &d1) == STENO_OK, "solo decoder");
    for (int i = 0; i < n; i++)
        for (int q = 0; q < runs[i].n_req; q++) {
            solo[2 * i + q] = runs[i].req[q];
            CHECK(decode(m, d1, xa[solo[2 * i + q].window], &solo[2 * i + q], logits, NULL) == STENO_OK, "solo: %s",
                  steno_errmsg());
        }
    whisper_fast_decoder_free(d1);

    for (int i = 0; i < n; i++) CHECK(pthread_create(&th[i], NULL, member_main, &runs[i]) == 0, "thread");
    int stalled = 0;
    for (int i = with_blocker; i < n; i++)
        if (join_timeout(th[i], 120) != 0) stalled = 1;
    CHECK(!stalled, "%s: members did not finish while member 0 was blocked (the batch waited for it)", what);
    if (stalled) { /* not recoverable: the threads still wait */
        fprintf(stderr, "FAIL: %s stalled\n", what);
        exit(1);
    }
    pthread_mutex_lock(&mu);
    released = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    if (with_blocker) CHECK(join_timeout(th[0], 120) == 0, "%s: the blocked member did not finish", what);

    int same = 0, total = 0;
    for (int i = 0; i < n; i++) {
        CHECK(runs[i].status == STENO_OK, "%s: member %d: status %d", what, i, (int)runs[i].status);
        for (int q = 0; q < runs[i].n_req; q++) {
            const request *r = &runs[i].req[q], *s = &solo[2 * i + q];
            for (int k = 0; k < r->steps; k++)
                for (int b = 0; b < r->rows; b++) same += r->hash[k][b] == s->hash[k][b], total++;
        }
    }
    CHECK(same == total, "%s: %d of %d step rows differ from the solo runs", what, total - same, total);
    whisper_xbatch_counters c;
    whisper_xbatch_stats(x, &c);
    CHECK(c.steps > 0 && c.rows > c.steps, "%s: the steps did not batch (%ld steps, %ld rows)", what, c.steps, c.rows);
    printf("%s: %d members, %d step rows equal to solo; %ld group steps (%.2f rows a step, %ld closed on the bound)\n",
           what, n, total, c.steps, (double)c.rows / (double)(c.steps ? c.steps : 1), c.timed_out);

    /* an encoder pass through the batcher's pool equals the member's own */
    if (!with_blocker) {
        const size_t xa_n = (size_t)whisper_fast_audio_ctx(f) * m->n_audio_state;
        float *mine = malloc(sizeof(float) * xa_n), *shared = malloc(sizeof(float) * xa_n);
        float *w = test_jfk_window(m);
        CHECK(whisper_fast_encode(runs[0].f, w, mine) == STENO_OK, "own encode");
        whisper_fast_set_encode_hook(runs[0].f, whisper_xbatch_encode, whisper_xbatch_member_at(x, 0));
        CHECK(whisper_fast_encode(runs[0].f, w, shared) == STENO_OK, "encode through the batcher");
        CHECK(memcmp(mine, shared, sizeof(float) * xa_n) == 0, "%s: the batcher's encoder pass differs", what);
        whisper_xbatch_stats(x, &c);
        CHECK(c.encodes == 1, "%s: %ld encoder passes counted", what, c.encodes);
        free(mine), free(shared), free(w);

        /* a bad step (token out of range) fails its own member at once, not a group */
        whisper_fast_decoder *d;
        CHECK(whisper_fast_decoder_create(runs[1].f, &d) == STENO_OK, "decoder");
        whisper_fast_decoder_set_audio(d, xa[0]);
        const int pre[2] = {m->special.sot, m->special.no_timestamps}, bad = m->n_vocab;
        CHECK(whisper_fast_decoder_forward(d, pre, 2, logits) == STENO_OK, "prefill");
        CHECK(whisper_fast_decoder_step_rows(d, &bad, 1, logits) == STENO_E_INVALID_ARG, "%s: a bad token accepted",
              what);
        whisper_xbatch_counters c2;
        whisper_xbatch_stats(x, &c2);
        CHECK(c2.steps == c.steps, "%s: a bad step reached the group", what);
        whisper_fast_decoder_free(d);
    }
    for (int i = 0; i < n; i++) whisper_fast_free(runs[i].f), steno_pool_free(pools[i]);
    whisper_xbatch_free(x);
    whisper_fast_free(f);
    steno_pool_free(pool);
    free(runs), free(pools), free(th), free(solo), free(logits);
}

static void encode_windows(const whisper_model *m, float **xa) {
    float *w1 = test_jfk_window(m);
    const int C = m->n_mels, F = 3000;
    float *w2 = malloc(sizeof(float) * C * F);
    for (int c = 0; c < C; c++)
        for (int t = 0; t < F; t++) w2[(size_t)c * F + t] = w1[(size_t)c * F + (F - 1 - t)];
    steno_pool *pool;
    whisper_fast *f;
    CHECK(steno_pool_create(2, &pool) == STENO_OK, "pool");
    CHECK(whisper_fast_create(m, VEC_F16, 0, pool, &f) == STENO_OK, "fast create");
    const size_t xa_n = (size_t)whisper_fast_audio_ctx(f) * m->n_audio_state;
    xa[0] = malloc(sizeof(float) * xa_n), xa[1] = malloc(sizeof(float) * xa_n);
    whisper_fast_encode(f, w1, xa[0]);
    whisper_fast_encode(f, w2, xa[1]);
    whisper_fast_free(f);
    steno_pool_free(pool);
    free(w1), free(w2);
}

int main(void) {
    const int small = getenv("STENO_SANITIZE") && strcmp(getenv("STENO_SANITIZE"), "1") == 0;
    whisper_model *m;
    if (whisper_model_load_q(test_model_dir(), 1, 0, &m) != STENO_OK) {
        fprintf(stderr, "FAIL: %s\n", steno_errmsg());
        return 1;
    }
    float *xa[2];
    encode_windows(m, xa);
    scenario(m, "f16", small ? 4 : 8, 0, (const float *const *)xa);
    scenario(m, "f16, a member blocked", small ? 3 : 4, 1, (const float *const *)xa);
    free(xa[0]), free(xa[1]);
    whisper_model_free(m);

    if (whisper_model_load_q(test_model_dir(), 0, STENO_T_Q8_0, &m) != STENO_OK) {
        fprintf(stderr, "FAIL: %s\n", steno_errmsg());
        return 1;
    }
    encode_windows(m, xa);
    scenario(m, "q8_0", small ? 2 : 4, 0, (const float *const *)xa);
    free(xa[0]), free(xa[1]);
    whisper_model_free(m);
    return test_summary("test_whisper_xbatch");
}
