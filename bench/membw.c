/* membw.c — a STREAM-like memory bandwidth probe (after John McCalpin's STREAM: Copy a[i] = b[i],
 * Triad a[i] = b[i] + s·c[i]) on arrays far larger than the last-level cache, with 1..T threads
 * (pthreads, static partition, each thread first-touches its own slice).
 *
 * Bytes counted as STREAM counts them: Copy 2·8 bytes per element, Triad 3·8 (write-allocate
 * traffic not counted). The best of --reps timed passes is reported, in GB/s (10^9 bytes/s).
 * Whisper's decoder step at batch 1 reads every weight once per token, so this bounds how fast a
 * memory-bound GEMV can go: tokens/s <= bandwidth / bytes of weights.
 *
 * Build and run:
 *   cc -O2 -march=native -pthread bench/membw.c -o /tmp/membw && /tmp/membw [MiB-per-array] [threads]
 * (defaults: 256 MiB per array, threads 1 and 2).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct job {
    double *a, *b, *c;
    size_t lo, hi;
    int op; /* 0 init, 1 copy, 2 triad */
    pthread_barrier_t *bar;
    int reps;
    double *times; /* per rep, written by thread 0 */
} job;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *worker(void *p) {
    job *j = p;
    for (size_t i = j->lo; i < j->hi; i++) j->a[i] = 1.0, j->b[i] = 2.0, j->c[i] = 0.5;
    for (int op = 1; op <= 2; op++) {
        for (int r = 0; r < j->reps; r++) {
            pthread_barrier_wait(j->bar);
            double t0 = now();
            if (op == 1) {
                for (size_t i = j->lo; i < j->hi; i++) j->a[i] = j->b[i];
            } else {
                const double s = 3.0;
                for (size_t i = j->lo; i < j->hi; i++) j->a[i] = j->b[i] + s * j->c[i];
            }
            pthread_barrier_wait(j->bar);
            if (j->lo == 0) j->times[(op - 1) * j->reps + r] = now() - t0;
        }
    }
    return NULL;
}

static void run(size_t n, int nt, int reps) {
    double *a = aligned_alloc(64, n * sizeof(double)), *b = aligned_alloc(64, n * sizeof(double)),
           *c = aligned_alloc(64, n * sizeof(double));
    double *times = calloc((size_t)2 * reps, sizeof(double));
    pthread_t *th = calloc((size_t)nt, sizeof *th);
    job *jobs = calloc((size_t)nt, sizeof *jobs);
    if (!a || !b || !c || !times || !th || !jobs) {
        fprintf(stderr, "membw: out of memory\n");
        exit(1);
    }
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nt);
    for (int t = 0; t < nt; t++) {
        jobs[t] = (job){a, b, c, n * (size_t)t / (size_t)nt, n * (size_t)(t + 1) / (size_t)nt, 0,
                        &bar, reps, times};
        pthread_create(&th[t], NULL, worker, &jobs[t]);
    }
    for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
    double best[2] = {1e30, 1e30};
    for (int op = 0; op < 2; op++)
        for (int r = 1; r < reps; r++) /* the first pass of each kernel is a warm-up */
            if (times[op * reps + r] < best[op]) best[op] = times[op * reps + r];
    double check = 0;
    for (size_t i = 0; i < n; i += 4096) check += a[i];
    printf("threads %d: copy %6.2f GB/s   triad %6.2f GB/s   (%zu MiB/array, best of %d; check %g)\n",
           nt, 2.0 * 8 * (double)n / best[0] / 1e9, 3.0 * 8 * (double)n / best[1] / 1e9,
           n * sizeof(double) >> 20, reps - 1, check);
    pthread_barrier_destroy(&bar);
    free(a), free(b), free(c), free(times), free(th), free(jobs);
}

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
    int max_t = argc > 2 ? atoi(argv[2]) : 2;
    if (mib < 1 || max_t < 1) {
        fprintf(stderr, "usage: membw [MiB-per-array] [max-threads]\n");
        return 2;
    }
    size_t n = mib * (1u << 20) / sizeof(double);
    for (int t = 1; t <= max_t; t++) run(n, t, 11);
    return 0;
}
