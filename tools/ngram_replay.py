#!/usr/bin/env python3
"""ngram_replay.py — replay steno's prompt-lookup drafter (`--draft-kind ngram`) over a greedy
decode offline, to compare lookup policies without timing noise.

At temperature 0 the output is plain decoding's whatever the drafter does, so a policy's rounds
follow from the prompt's and the output's tokens alone: at each step the lookup
(src/llm/spec/speculative.c, steno_spec_ngram_draft: the longest suffix of --ngram-max down to
--ngram-min tokens with an earlier occurrence, its latest one proposing at most CAP·g tokens) and
the adaptive length (steno_spec_len_init/_next/_update, the backoff of steno_llm_generate_spec)
decide the draft; the output decides how much of it holds. The cost model counts a target pass as
1 plus R per drafted position (R = the measured extra time of a verified position over a plain
step: ~0.22 for Gemma 3 270M on 2 threads, the git history of docs/PERFORMANCE.md), so the speed-up is the
tokens over the passes' cost. Its accepted/drafted counts equal spec_bench's where the adaptive
length's cost rule (cost.h, which follows measured times) does not stop drafting — e.g. on
Gemma 3, not on stories260K, whose verify passes cost more than its drafts can save.

Input: files written by bench/spec_bench.c with STENO_SPEC_BENCH_TOKENS=FILE (a line "P" + the
prompt's token ids, a line "G" + plain decoding's).

  STENO_SPEC_BENCH_TOKENS=/tmp/t.txt /tmp/spec_bench MODEL 2 128 1 PROMPT.txt plain
  python3 tools/ngram_replay.py /tmp/t.txt --min 1 2 3 --cap 2 3
"""
import argparse
import itertools
import math


def load(path):
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise SystemExit("%s: %s" % (path, e.strerror or e))
    rows = {}
    for no, ln in enumerate(lines, 1):
        if ln[:1] not in ("P", "G"):
            continue
        try:
            rows[ln[0]] = [int(t) for t in ln[1:].split()]
        except ValueError:
            raise SystemExit("%s:%d: a P or G line holds token ids (whole numbers) only" % (path, no))
    if "P" not in rows or "G" not in rows:
        raise SystemExit("%s: needs a P line and a G line (bench/spec_bench.c STENO_SPEC_BENCH_TOKENS)" % path)
    if not rows["P"] or len(rows["G"]) < 2:
        raise SystemExit("%s: needs a prompt and at least 2 generated tokens to replay (has %d and %d)"
                         % (path, len(rows["P"]), len(rows["G"])))
    return rows["P"], rows["G"]


def lookup(hist, gmin, gmax, k, cap):
    """steno_spec_ngram_draft: (draft, g)."""
    n = len(hist)
    for g in range(min(gmax, n - 1), max(gmin, 1) - 1, -1):
        suf = hist[n - g:]
        for j in range(n - g - 1, -1, -1):
            if hist[j:j + g] == suf:
                d = hist[j + g:j + g + min(k, cap * g)]
                if d:
                    return d, g
    return [], 0


def replay(prompt, out, gmin=2, gmax=4, cap=3, kmax=8, r=0.22):
    """Speed-up over plain decoding under the cost model, drafted, accepted, rounds."""
    n, i, cost = len(out), 1, 0.0  # the first token comes from the prompt's pass
    k, misses, pause, backoff = (4 if kmax > 4 else kmax), 0, 0, 16
    drafted = accepted = rounds = 0
    while i < n:
        kk = 0 if pause > 0 else k
        if pause > 0:
            pause -= 1
            if pause == 0:
                k = 1
        kk = min(kk, n - i)
        d, _ = lookup(prompt + out[:i], gmin, gmax, kk, cap) if kk > 0 else ([], 0)
        cost += 1 + r * len(d)
        if not d:
            i += 1
            continue
        j = 0
        while j < len(d) and i + j < n and d[j] == out[i + j]:
            j += 1
        rounds, drafted, accepted = rounds + 1, drafted + len(d), accepted + j
        i += j + 1  # the accepted drafts and the target's own token after them
        if j == len(d):
            k = min(k + 2, kmax)
        elif 2 * j >= len(d):  # kept at least half: paid
            misses = 0
        else:
            misses += 1
            if misses >= 2:
                k, misses = k // 2, 0
                if k == 0:
                    pause = 16
        if j > 0:  # spec/backoff.h
            backoff = 16
        elif pause == 16 and k == 0:
            pause, backoff = backoff, min(2 * backoff, 512)
    return n / cost, drafted, accepted, rounds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--min", type=int, nargs="+", default=[1, 2], help="--ngram-min values")
    ap.add_argument("--max", type=int, nargs="+", default=[4], help="--ngram-max values")
    ap.add_argument("--cap", type=int, nargs="+", default=[2, 3], help="draft tokens per matched token")
    ap.add_argument("--kmax", type=int, default=8, help="--num-draft-tokens (adaptive up to it)")
    ap.add_argument("-r", type=float, default=0.22, help="a verified position's cost, in plain steps")
    a = ap.parse_args()
    if min(a.min) < 1 or min(a.max) < 1 or min(a.cap) < 1 or not 1 <= a.kmax <= 64 or not a.r >= 0:
        ap.error("--min, --max and --cap take whole numbers >= 1, --kmax 1..64, -r a cost >= 0")
    if not any(lo <= hi for lo in a.min for hi in a.max):
        ap.error("no --min value is at or below a --max value")
    data = [(f, load(f)) for f in a.files]
    logs = {}
    for f, (p, g) in data:
        print("%s: %d prompt tokens, %d generated" % (f, len(p), len(g)))
        for gmin, gmax, cap in itertools.product(a.min, a.max, a.cap):
            if gmin > gmax:
                continue
            s, dr, ac, rd = replay(p, g, gmin, gmax, cap, a.kmax, a.r)
            logs.setdefault((gmin, gmax, cap), []).append(math.log(s))
            print("  min %d max %d cap %dg: %.3fx  %d / %d drafts accepted in %d rounds" % (gmin, gmax, cap, s, ac, dr, rd))
    if len(data) > 1:
        for (gmin, gmax, cap), v in logs.items():
            print("geometric mean, min %d max %d cap %dg: %.3fx" % (gmin, gmax, cap, math.exp(sum(v) / len(v))))


if __name__ == "__main__":
    main()
