#!/usr/bin/env python3
"""bench_spec.py — speculative decoding against plain decoding, `steno generate`, interleaved.

Workloads (chat prompts, greedy, -n tokens):
  summary  repeat-and-summarize a paragraph (the answer repeats input text: prompt lookup's case)
  free     free generation (a story)
  code     write a short function, then the same function again with a change
For each workload and each mode (plain; ngram adaptive and k=4; with --draft-layers K, layers
adaptive; with --draft PATH, a draft model adaptive — tools/gguf_draft.py makes one) the runs are
interleaved (plain, ngram, ..., then rotated) for --reps rounds; the table gives the median decode
tok/s from steno's stderr line and the ratio to plain, the best run's (on a shared machine the
least disturbed run is the steadier estimate of the uncontended speed), the paired ratio (the
median over repetitions of a mode's tok/s divided by the plain run of the same repetition: the
modes of one repetition run back to back, in an order rotated each repetition, so a drift of the
machine's speed between repetitions cancels) with its 95 % confidence interval (distribution-free,
tools/bench_stats.py; it needs --reps 6 or more), plus the acceptance.
Every speculative text must equal the plain one (checked; a difference is an error).

Usage: python3 tools/bench_spec.py [--steno build/steno] [--model smollm2] [--threads 2] [--reps 3]
                                   [-n 160] [--draft-layers K] [--draft DRAFT.gguf] [--modes a,b]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

from bench_stats import median_ci

WORKLOADS = {
    "summary": "Repeat the following paragraph word for word, then summarize it in one sentence.\n\n"
               "The library opens at nine in the morning and closes at six in the evening. Books may be "
               "borrowed for three weeks and renewed twice. Children under twelve must be accompanied by an "
               "adult. The reading room on the second floor is reserved for quiet study, and the computers in "
               "the basement can be booked for one hour at a time.",
    "free": "Write a short story about a fox who learns to swim.",
    "code": "Write a Python function that returns the n-th Fibonacci number iteratively. Then write the same "
            "function again, renamed to fib2, with a docstring.",
}
MODES = {"plain": [], "ngram-adaptive": ["--draft-kind", "ngram"],
         "ngram-k4": ["--draft-kind", "ngram", "--num-draft-tokens", "4"]}


def chat_prompt(model, text):
    if "gemma" in model:
        return f"<start_of_turn>user\n{text}<end_of_turn>\n<start_of_turn>model\n"
    return f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"


def run(args, model, text, extra):
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write(chat_prompt(model, text))
        f.flush()
        p = subprocess.run([args.steno, "generate", "-m", model, "-f", f.name, "--special", "--temp", "0", "-n",
                            str(args.n), "-t", str(args.threads)] + extra, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"steno generate failed: {p.stderr}")
    tps = float(re.search(r"decode: \d+ tokens in [\d.]+ s \(([\d.]+) tok/s\)", p.stderr).group(1))
    m = re.search(r"(\d+) of (\d+) drafted tokens accepted", p.stderr)
    return p.stdout, tps, (int(m.group(1)), int(m.group(2))) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("--steno", default="build/steno")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("-n", type=int, default=160)
    ap.add_argument("--draft-layers", type=int, default=0, help="add the mode layers-adaptive with K layers")
    ap.add_argument("--draft", help="add the mode model-adaptive with this draft model")
    ap.add_argument("--modes", help="comma-separated subset of the modes (plain always runs)")
    args = ap.parse_args()

    def usage(msg):  # one line, exit 2, as steno's own usage errors
        print(f"bench_spec.py: {msg}", file=sys.stderr)
        sys.exit(2)

    if args.reps < 1:
        usage(f"--reps {args.reps}: must be at least 1")
    if args.n < 1:
        usage(f"-n {args.n}: must be at least 1")
    if not (os.path.isfile(args.steno) and os.access(args.steno, os.X_OK)):
        usage(f"--steno {args.steno}: no such executable (build it: cmake --build build)")
    if args.draft_layers < 0:
        usage(f"--draft-layers {args.draft_layers}: must be at least 1")
    if args.draft_layers:
        MODES["layers-adaptive"] = ["--draft-kind", "layers", "--draft-layers", str(args.draft_layers)]
    if args.draft:
        if not os.path.isfile(args.draft):
            usage(f"--draft {args.draft}: no such file")
        MODES["model-adaptive"] = ["--draft-model", args.draft]
    if args.modes:
        want = [m.strip() for m in args.modes.split(",") if m.strip()]
        needs = {"layers-adaptive": "--draft-layers K", "model-adaptive": "--draft PATH"}
        for m in want:
            if m in needs and m not in MODES:
                usage(f"--modes {m}: needs {needs[m]}")
            if m not in MODES:
                usage(f"--modes {m}: unknown mode; known: {', '.join(list(MODES) + [k for k in needs if k not in MODES])}")
        for m in list(MODES):
            if m != "plain" and m not in want:
                del MODES[m]
    print(f"| workload | mode | decode tok/s (median of {args.reps}) | vs plain | best run | vs plain's best "
          f"| paired ratio (median, min–max) | 95 % CI of the paired median | drafts accepted |")
    print("|---|---|---|---|---|---|---|---|---|")
    for w, text in WORKLOADS.items():
        tps = {m: [] for m in MODES}
        acc = {}
        ref = None
        names = list(MODES)
        for rep in range(args.reps):
            r = rep % len(names)
            for m in names[r:] + names[:r]:
                out, t, a = run(args, args.model, text, MODES[m])
                if ref is None:
                    ref = out
                elif out != ref:
                    sys.exit(f"{w} {m}: the text differs from the first run's (plain decoding's tokens)")
                tps[m].append(t)
                if a:
                    acc[m] = a
        base, top = statistics.median(tps["plain"]), max(tps["plain"])
        for m in MODES:
            med = statistics.median(tps[m])
            a = acc.get(m)
            pr = [t / b for t, b in zip(tps[m], tps["plain"])]
            ci = median_ci(pr)
            print(f"| {w} | {m} | {med:.1f} | {med / base:.2f}x | {max(tps[m]):.1f} | {max(tps[m]) / top:.2f}x | "
                  f"{statistics.median(pr):.3f}x ({min(pr):.2f}–{max(pr):.2f}) | "
                  f"{f'{ci[0]:.3f}–{ci[1]:.3f}' if ci else '- (reps < 6)'} | "
                  f"{f'{a[0]} / {a[1]} ({100 * a[0] / max(a[1], 1):.0f} %)' if a else '-'} |")


if __name__ == "__main__":
    main()
