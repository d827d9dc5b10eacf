"""bench_stats.py — the statistics the benchmark drivers share (standard library only).

median_ci(xs, level=0.95): a distribution-free confidence interval for the median of xs, from
order statistics (the sign test's interval: the k-th smallest and k-th largest values, k the
largest with P(Binomial(n, 1/2) < k) <= (1 - level) / 2). It assumes only that the values are
independent draws of one distribution — the paired ratios of interleaved repetitions, where the
machine's slow drift cancels within each pair. Returns (low, high), or None when n is too small
for the level (n < 6 at 95 %).
"""
import math


def median_ci(xs, level=0.95):
    xs = sorted(xs)
    n = len(xs)
    alpha = (1.0 - level) / 2.0
    k, tail = 0, 0.0
    while k < n:
        nxt = tail + math.comb(n, k) / 2.0 ** n  # P(B <= k)
        if nxt > alpha:
            break
        tail, k = nxt, k + 1
    if k == 0:
        return None
    return xs[k - 1], xs[n - k]
