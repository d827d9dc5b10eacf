/* llm_step_bench.c — the continuous-batching decode step alone: steno_llm_eval_batch over B rows
 * of one token each, each row feeding its own greedy token (a steno_sampler at temperature 0, as
 * the server's), without HTTP or tokenization, so that the step's cost at B rows can be set
 * against B = 1 (issue #12's "8 streams ≥ 4× one stream" is this ratio plus the server's
 * per-token work).
 *
 * Each repetition runs STEPS steps at every B of the list, interleaved (B = 1, 8, 1, 8, …), every
 * row restarting from its prompt; prints per B the median over repetitions of ms per step and
 * tokens/s, tokens/s ÷ B = 1's, and the fastest repetition's ms per step (on a shared VM the
 * minimum is the steadier reading).
 *
 *   cc -O2 -std=c17 -Iinclude -Isrc bench/llm_step_bench.c build/libsteno.a \
 *      $(pkg-config --libs openblas libavformat libavcodec libswresample libavutil libcjson libpcre2-8 zlib) \
 *      -lm -lpthread -o /tmp/llm_step_bench
 *   /tmp/llm_step_bench smollm2 fast 2 64 5 1,8,16      # MODEL ggml|fast THREADS STEPS REPS B-LIST */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "steno_llm.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}


#define MAXB 64

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: %s MODEL ggml|fast THREADS STEPS REPS B1,B2,...\n", argv[0]);
        return 2;
    }
    const int threads = atoi(argv[3]), steps = atoi(argv[4]), reps = atoi(argv[5]);
    int bl[16], nbl = 0, bmax = 1;
    for (char *s = argv[6]; *s && nbl < 16;) {
        bl[nbl] = atoi(s);
        if (bl[nbl] < 1 || bl[nbl] > MAXB) return fprintf(stderr, "B out of 1..%d\n", MAXB), 2;
        if (bl[nbl] > bmax) bmax = bl[nbl];
        nbl++;
        while (*s && *s != ',') s++;
        if (*s) s++;
    }
    char path[4096];
    steno_llm *m;
    if (steno_llm_resolve(argv[1], path, sizeof path) || steno_llm_load(path, NULL, &m))
        return fprintf(stderr, "%s: cannot load\n", argv[1]), 1;
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    const int nv = info.n_vocab;
    steno_llm_ctx_params cp = steno_llm_ctx_default_params();
    cp.n_threads = threads;
    cp.n_ctx = 1024;
    cp.compute = strcmp(argv[2], "fast") == 0 ? STENO_LLM_COMPUTE_FAST : STENO_LLM_COMPUTE_GGML;
    steno_llm_ctx *c[MAXB], *exec;
    if (steno_llm_ctx_new(m, &cp, &exec)) return fprintf(stderr, "ctx\n"), 1;
    float *lg = malloc(sizeof(float) * (size_t)nv * bmax);
    int prompt[MAXB][8], tok[MAXB];
    steno_sampler *smp[MAXB];
    steno_sampler_params sp = steno_sampler_default_params();
    sp.temperature = 0;
    for (int r = 0; r < bmax; r++) {
        if (steno_llm_ctx_new(m, &cp, &c[r]) || steno_sampler_new(&sp, nv, &smp[r])) return fprintf(stderr, "ctx\n"), 1;
        for (int i = 0; i < 8; i++) prompt[r][i] = 1 + (r * 131 + i * 977) % (nv - 1);
    }
    double *ms = malloc(sizeof(double) * (size_t)nbl * reps);
    steno_llm_seq seq[MAXB];
    for (int rep = -1; rep < reps; rep++) /* rep −1 warms the weights and the buffers */
        for (int bi = 0; bi < nbl; bi++) {
            const int B = bl[bi];
            for (int r = 0; r < B; r++) {
                steno_llm_reset(c[r]);
                if (steno_llm_eval(c[r], prompt[r], 8, lg + (size_t)r * nv, 0)) return fprintf(stderr, "eval\n"), 1;
                tok[r] = steno_sampler_sample(smp[r], lg + (size_t)r * nv, NULL, NULL);
            }
            const double t0 = now_s();
            for (int s = 0; s < steps; s++) {
                for (int r = 0; r < B; r++) seq[r] = (steno_llm_seq){c[r], &tok[r], 1, lg + (size_t)r * nv, 0};
                if (steno_llm_eval_batch(exec, seq, B)) return fprintf(stderr, "eval_batch\n"), 1;
                for (int r = 0; r < B; r++) tok[r] = steno_sampler_sample(smp[r], lg + (size_t)r * nv, NULL, NULL);
            }
            if (rep >= 0) ms[bi * reps + rep] = (now_s() - t0) * 1e3 / steps;
        }
    printf("%s %s, %d threads, %d steps, median of %d\n| B | ms/step | tok/s | vs B=1 |\n|---:|---:|---:|---:|\n",
           argv[1], argv[2], threads, steps, reps);
    double base = 0;
    for (int bi = 0; bi < nbl; bi++) {
        qsort(ms + bi * reps, (size_t)reps, sizeof(double), cmp_d);
        const double med = ms[bi * reps + reps / 2], tps = bl[bi] * 1e3 / med;
        if (bl[bi] == 1) base = tps;
        printf("| %d | %.3f | %.1f | %s%.2fx | %.3f |\n", bl[bi], med, tps, base > 0 ? "" : "?", base > 0 ? tps / base : 0.0,
               ms[bi * reps]);
    }
    for (int r = 0; r < bmax; r++) {
        steno_llm_ctx_free(c[r]);
        steno_sampler_free(smp[r]);
    }
    steno_llm_ctx_free(exec);
    steno_llm_free(m);
    free(lg);
    free(ms);
    return 0;
}
