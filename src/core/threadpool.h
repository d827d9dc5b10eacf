/* threadpool.h — one pool of worker threads per context. steno_pool_run splits n_tasks task
 * indices over the workers and the calling thread and returns when all have run. Workers spin
 * briefly between jobs (a decoder step issues dozens of small jobs) and then sleep on a
 * condition variable, so an idle pool costs no CPU. Which thread runs a task never changes a
 * result: callers give each task a disjoint slice of the output. */
#ifndef STENO_CORE_THREADPOOL_H
#define STENO_CORE_THREADPOOL_H

#include "steno.h"

typedef struct steno_pool steno_pool;

typedef void (*steno_task_fn)(void *ctx, int task, int n_tasks);

/** Creates a pool that runs jobs on n_threads threads in all (the caller plus n_threads − 1
 *  workers). n_threads <= 0 means the number of online CPUs. Errors: STENO_E_NOMEM. */
steno_status steno_pool_create(int n_threads, steno_pool **out);
void steno_pool_free(steno_pool *p);
int steno_pool_threads(const steno_pool *p);

/** Runs fn(ctx, i, n_tasks) for every i in [0, n_tasks); blocks until all are done. Not
 *  reentrant: one job at a time per pool. Allocates nothing. */
void steno_pool_run(steno_pool *p, steno_task_fn fn, void *ctx, int n_tasks);

#endif
