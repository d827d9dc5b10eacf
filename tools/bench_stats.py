"""bench_stats.py — the statistics the benchmark drivers share (standard library only).

median_ci(xs, level=0.95): a distribution-free confidence interval for the median of xs, from
order statistics (the sign test's interval: the k-th smallest and k-th largest values, k the
largest with P(Binomial(n, 1/2) < k) <= (1 - level) / 2). It assumes only that the values are
independent draws of one distribution — the paired ratios of interleaved repetitions, where the
machine's slow drift cancels within each pair. Returns (low, high), or None when n is too small
for the level (n < 6 at 95 %). ValueError for a level outside (0, 1) or a NaN value.
"""
import math
from fractions import Fraction


def median_ci(xs, level=0.95):
    if not 0.0 < level < 1.0:
        raise ValueError("level %r: must be within (0, 1)" % (level,))
    if any(math.isnan(x) for x in xs):
        raise ValueError("median_ci: a NaN among the values")
    xs = sorted(xs)
    n = len(xs)
    # in integers (counts of the 2^n sign patterns): exact, and no float overflow for large n
    alpha = Fraction(1.0 - level) / 2
    k, tail = 0, 0
    while k < n:
        nxt = tail + math.comb(n, k)  # 2^n · P(B <= k)
        if Fraction(nxt, 2 ** n) > alpha:
            break
        tail, k = nxt, k + 1
    if k == 0:
        return None
    return xs[k - 1], xs[n - k]
