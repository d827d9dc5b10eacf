"""test_bench_stats.py — tools/bench_stats.py's confidence interval of a median, which the
benchmark drivers (bench_spec.py, bench_whisper_spec.py) print and docs/PERFORMANCE.md quotes.

Contract checked:
  * for n = 1..80 values the interval's ranks (k, n + 1 − k) are the sign test's: the exact
    binomial probability that the median lies outside them is at most 5 %, and one rank further in
    it would be more (so the interval is the narrowest such one); below n = 6 there is none (None);
  * the interval is taken from the sorted values whatever their input order;
  * a known case: n = 20 gives the 6th and 15th smallest values.
Standard library only. Each case prints PASS/FAIL; the last line is "N passed, N failed".
"""

import math
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from bench_stats import median_ci  # noqa: E402

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    if ok:
        passed += 1
    else:
        failed += 1


def below(n, k):  # P(Binomial(n, 1/2) < k): the median is below the k-th smallest value
    return sum(math.comb(n, i) for i in range(k)) / 2.0 ** n


bad = []
for n in range(1, 81):
    xs = list(range(n))  # the value is its rank − 1
    ci = median_ci(xs)
    if ci is None:
        if 2 * below(n, 1) <= 0.05:  # even the widest interval [min, max] would do
            bad.append("n=%d: None, but [min, max] covers %.4f" % (n, 1 - 2 * below(n, 1)))
        continue
    k = ci[0] + 1
    if ci[1] != n - k:
        bad.append("n=%d: ranks %d and %d are not symmetric" % (n, k, ci[1] + 1))
    elif 2 * below(n, k) > 0.05:
        bad.append("n=%d: rank %d covers only %.4f" % (n, k, 1 - 2 * below(n, k)))
    elif k + 1 <= (n + 1) // 2 and 2 * below(n, k + 1) <= 0.05:
        bad.append("n=%d: rank %d would also cover 95 %%" % (n, k + 1))
check("ranks are the sign test's for n = 1..80 (None below 6)", not bad and median_ci(list(range(5))) is None
      and median_ci(list(range(6))) == (0, 5), "; ".join(bad[:5]))

rng = random.Random(7)
vals = [rng.random() for _ in range(37)]
shuffled = vals[:]
rng.shuffle(shuffled)
check("order of the input does not matter", median_ci(vals) == median_ci(shuffled) == median_ci(sorted(vals)))
check("n = 20: the 6th and 15th smallest", median_ci([float(i) for i in range(1, 21)]) == (6.0, 15.0),
      str(median_ci([float(i) for i in range(1, 21)])))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
