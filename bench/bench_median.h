/* bench_median.h — the medians and confidence intervals of the in-process benches (spec_bench.c,
 * whisper_spec_bench.c): the same rule as tools/bench_stats.py median_ci. Header-only (each bench
 * is one translation unit compiled by hand). */
#ifndef STENO_BENCH_MEDIAN_H
#define STENO_BENCH_MEDIAN_H

#include <math.h>

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the sign test's 95 % interval for the median of n sorted values: ranks k and n + 1 − k */
static int ci_rank(int n) {
    double tail = 0.0;
    int k = 0;
    while (k < n) {
        /* C(n, k) / 2^n, in logs against overflow */
        const double c = exp(lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) - n * log(2.0));
        if (tail + c > 0.025) break;
        tail += c;
        k++;
    }
    return k; /* 0: too few values */
}

#endif
