#include "core/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"

#define SPIN_ITERS 20000 /* the caller's wait: spins before each sched_yield */
/* A worker spins this long for the next job before it sleeps on the condition variable. Between
 * two jobs of a decode step the caller runs norms, RoPE and one row's attention: 20–100 µs
 * there were each a futex sleep and wake-up (~7–10 µs on the development VM, 18 per Gemma 3
 * token) when the spin was 20 000 loads (~15 µs). */
#define WORKER_SPIN_NS 200000LL

static long long mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

struct steno_pool {
    int n_threads;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint generation; /* bumped once per job */
    /* (job << 32) | next task index: a worker claims a task with one compare-and-swap that also
     * checks the job, so a worker arriving late from one job can never take a task index of the
     * next job with the previous job's view of it */
    atomic_ullong claim;
    unsigned job;
    atomic_int pending;     /* tasks not yet finished */
    atomic_int stop;
    steno_task_fn fn;
    void *ctx;
    atomic_int n_tasks;
};

#define CLAIM_CLOSED 0xffffffffull

static void drain(steno_pool *p) {
    unsigned long long v = atomic_load(&p->claim);
    const unsigned long long job = v >> 32;
    for (;;) {
        const int n = atomic_load_explicit(&p->n_tasks, memory_order_relaxed);
        if ((v >> 32) != job || (v & 0xffffffffull) >= (unsigned long long)n) return;
        /* n may belong to a newer job than v, but then the claim word has moved on (it is
         * closed before n changes) and this compare-and-swap fails */
        if (!atomic_compare_exchange_weak(&p->claim, &v, v + 1)) continue; /* v reloaded */
        const int t = (int)(v & 0xffffffffull);
        p->fn(p->ctx, t, n);
        atomic_fetch_sub(&p->pending, 1);
        v = atomic_load(&p->claim);
    }
}

static void *worker(void *arg) {
    steno_pool *p = arg;
    unsigned seen = 0;
    for (;;) {
        unsigned spins = 0;
        long long t0 = 0;
        while (atomic_load_explicit(&p->generation, memory_order_acquire) == seen && !atomic_load(&p->stop)) {
            cpu_relax();
            if ((++spins & 63) != 0) continue; /* the clock every 64 pauses */
            const long long t = mono_ns();
            if (!t0) t0 = t;
            if (t - t0 < WORKER_SPIN_NS) continue;
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = atomic_load(&p->generation);
        drain(p);
    }
}

steno_status steno_pool_create(int n_threads, steno_pool **out) {
    *out = NULL;
    if (n_threads <= 0) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = nc > 0 ? (int)nc : 1;
    }
    steno_pool *p = calloc(1, sizeof *p);
    if (!p) return steno_fail(STENO_E_NOMEM, "thread pool: out of memory");
    p->n_threads = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof *p->threads);
        if (!p->threads) {
            steno_pool_free(p);
            return steno_fail(STENO_E_NOMEM, "thread pool: out of memory");
        }
        for (int i = 0; i < n_threads - 1; i++) {
            if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
                p->n_threads = i + 1; /* the threads started so far, plus the caller */
                steno_pool_free(p);
                return steno_fail(STENO_E_NOMEM, "thread pool: cannot start thread %d", i + 1);
            }
        }
    }
    *out = p;
    return STENO_OK;
}

void steno_pool_free(steno_pool *p) {
    if (!p) return;
    atomic_store(&p->stop, 1);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; p->threads && i < p->n_threads - 1; i++) pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}

int steno_pool_threads(const steno_pool *p) { return p ? p->n_threads : 1; }

void steno_pool_run(steno_pool *p, steno_task_fn fn, void *ctx, int n_tasks) {
    if (n_tasks <= 0) return;
    if (!p || p->n_threads == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++) fn(ctx, t, n_tasks);
        return;
    }
    /* Close the claim word under the new job's number before touching fn/ctx/n_tasks: a worker
     * still holding the previous job's claim value can then no longer win a compare-and-swap and
     * run a task index of the new job with the old count (the race CI caught on a busy 2-core box) */
    const unsigned long long job = (unsigned long long)(++p->job & 0xffffffffu) << 32;
    atomic_store(&p->claim, job | CLAIM_CLOSED);
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->n_tasks, n_tasks);
    atomic_store(&p->pending, n_tasks);
    atomic_store(&p->claim, job);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    drain(p);
    int spins = 0;
    while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) {
        if (++spins > SPIN_ITERS) sched_yield();
    }
}
