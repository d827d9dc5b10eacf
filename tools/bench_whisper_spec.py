"""bench_whisper_spec.py — Whisper speculative decoding against plain greedy decoding
(docs/PERFORMANCE.md "Whisper speculative decoding").

Runs `steno transcribe --draft-kind KIND` (none = plain, with the decoder's counters) on long120
(one process) and on a set of dev clips (one process for all), every configuration once per
repetition, the configurations' order rotated each repetition (interleaved), and prints a markdown
table of medians: decoder tokens/s by wall time and by CPU time (the process's CPU seconds in the
decoder: steadier than wall time on a shared machine), the process's wall time, the acceptance
rate, the ratio of decoder tokens/s to plain's, and the paired ratio (the median over repetitions of
each run's decoder tokens/s over the same repetition's plain run) with its 95 % confidence interval
(distribution-free, tools/bench_stats.py; --reps 6 or more), and the in-run accounting of the
decoder lines (docs/WHISPER.md "Stats": the speculative rounds against the same run's plain steps,
over all files of the run; median and interval over repetitions). The tokens of every run are
checked equal to plain's (the bench refuses to report a drafter that changed them).

usage: python3 tools/bench_whisper_spec.py [--steno build/steno] [--model base] [--threads 1]
                                           [--reps 3] [--shared /work/shared] [--configs a,b]
Standard library only.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import sys
import time

from bench_stats import median_ci

CONFIGS = [("plain", ["--draft-kind", "none"]),
           ("ngram", ["--draft-kind", "ngram"]),
           ("quant q8_0", ["--draft-kind", "quant"]),
           ("quant q4_0", ["--draft-kind", "quant", "--draft-weights", "q4_0"]),
           ("layers (half)", ["--draft-kind", "layers"]),
           ("quant q8_0, 8 fixed", ["--draft-kind", "quant", "--num-draft-tokens", "8"]),
           ("quant q4_0, 8 fixed", ["--draft-kind", "quant", "--draft-weights", "q4_0", "--num-draft-tokens", "8"])]
DEV = ["jfk.wav", "ls_test-clean_1221-135766-0001.wav", "ls_dev-clean_1272-141231-0002.flac",
       "ls_test-other_1688-142285-0000.flac", "ljspeech_LJ001-0001.flac", "picovoice_diarization_test.wav",
       "asterisk_en_demo-congrats.wav", "picovoice_leopard_test_es.wav", "picovoice_leopard_test_de.wav"]
LINE = re.compile(r"decoder: (\d+) tokens in ([\d.]+) s \([\d.]+ tokens/s\), ([\d.]+) s of CPU"
                  r"(?:; speculation \([^)]*\): (\d+) of (\d+) drafted)?")
# the in-run accounting (docs/WHISPER.md "Stats"): rounds N, target passes M (plain steps M − N),
# the rounds' seconds and tokens, the mean plain step
INRUN = re.compile(r"in (\d+) rounds; (\d+) target passes; drafting and verify passes ([\d.]+) s for (\d+) tokens"
                   r"(?:, plain steps ([\d.]+) ms each)?")


def run(a, model, files, extra):
    with tempfile.TemporaryDirectory() as out:
        cmd = [a.steno, "transcribe", "--model", model, "--threads", str(a.threads), "-f", "json", "-o", out,
               "--verbose", "False"] + extra + files
        t0 = time.time()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wall = time.time() - t0
        err = p.stderr.decode()
        if p.returncode != 0:
            raise SystemExit("failed: %s\n%s" % (" ".join(cmd), err[-2000:]))
        toks, sec, cpu, acc, dr = 0, 0.0, 0.0, 0, 0
        plain_n, plain_s, round_s, round_t = 0, 0.0, 0.0, 0
        for m in INRUN.finditer(err):
            if m.group(5) is not None:
                n = int(m.group(2)) - int(m.group(1))
                plain_n += n
                plain_s += n * float(m.group(5)) / 1e3
            round_s += float(m.group(3))
            round_t += int(m.group(4))
        # F = (plain seconds + K · mean plain step) / (plain seconds + rounds' seconds), over all files
        inrun = (plain_s + round_t * plain_s / plain_n) / (plain_s + round_s) if plain_n else None
        for m in LINE.finditer(err):
            toks += int(m.group(1))
            sec += float(m.group(2))
            cpu += float(m.group(3))
            acc += int(m.group(4) or 0)
            dr += int(m.group(5) or 0)
        tokens = []
        for f in files:
            with open(os.path.join(out, os.path.splitext(os.path.basename(f))[0] + ".json")) as fh:
                tokens.append([t for s in json.load(fh)["segments"] for t in s["tokens"]])
        return {"tokens": toks, "sec": sec, "cpu": cpu, "acc": acc, "drafted": dr, "wall": wall, "out": tokens,
                "inrun": inrun}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steno", default="build/steno")
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/steno/models/base"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--shared", default=os.environ.get("STENO_SHARED", "/work/shared"))
    ap.add_argument("--configs", help="comma-separated subset of the drafter names (plain always runs), "
                    "e.g. 'ngram,quant q8_0'")
    a = ap.parse_args()
    global CONFIGS
    if a.reps < 1:
        print("bench_whisper_spec: --reps %d: must be at least 1" % a.reps, file=sys.stderr)
        raise SystemExit(2)
    if not (os.path.isfile(a.steno) and os.access(a.steno, os.X_OK)):
        print("bench_whisper_spec: --steno %s: no such executable (build it: cmake --build build)" % a.steno,
              file=sys.stderr)
        raise SystemExit(2)
    if a.configs is not None:
        names = [n for n, _ in CONFIGS]
        parts, keep = a.configs.split(","), []
        while parts:  # names may hold a comma ("quant q8_0, 8 fixed"): rejoin what makes a name
            cur = parts.pop(0).strip()
            while parts and any(n == cur + "," + parts[0] or n.startswith(cur + "," + parts[0] + ",")
                                for n in names):
                cur += "," + parts.pop(0)
            keep.append(cur)
        unknown = [k for k in keep if k not in names]
        if unknown or not keep:
            print("bench_whisper_spec: unknown configuration(s) %s; known: %s" % (unknown, "; ".join(names)),
                  file=sys.stderr)
            raise SystemExit(2)
        CONFIGS = [c for c in CONFIGS if c[0] == "plain" or c[0] in keep]
    audio = os.path.join(a.shared, "audio")
    sets = [("long120", [os.path.join(audio, "tedlium_long_120s.flac")]),
            ("dev clips (%d)" % len(DEV), [os.path.join(audio, f) for f in DEV])]
    res = {}
    for rep in range(a.reps):
        order = CONFIGS[rep % len(CONFIGS):] + CONFIGS[:rep % len(CONFIGS)]
        for name, files in sets:
            for cname, extra in order:
                r = run(a, a.model, files, extra)
                res.setdefault((name, cname), []).append(r)
                print("rep %d %s %s: %d tokens, %.2f s decoder, %.2f s CPU, %.2f s wall, %d of %d drafts accepted" % (
                    rep, name, cname, r["tokens"], r["sec"], r["cpu"], r["wall"], r["acc"], r["drafted"]), flush=True)
    print()
    print("| input | drafter | decoder tok/s (wall) | × plain | decoder tok/s (CPU) | × plain | paired × plain "
          "(median, min–max) | 95 % CI of the paired median | process wall s | accepted / drafted | in-run × plain "
          "steps (median, 95 % CI) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, _ in sets:
        plain = res[(name, "plain")]
        p_w = statistics.median(r["tokens"] / r["sec"] for r in plain)
        p_c = statistics.median(r["tokens"] / r["cpu"] for r in plain)
        for cname, _ in CONFIGS:
            rs = res[(name, cname)]
            for r in rs:
                if r["out"] != plain[0]["out"]:
                    raise SystemExit("%s %s: tokens differ from plain decoding's" % (name, cname))
            w = statistics.median(r["tokens"] / r["sec"] for r in rs)
            c = statistics.median(r["tokens"] / r["cpu"] for r in rs)
            wall = statistics.median(r["wall"] for r in rs)
            # each repetition's decoder tok/s (wall) over that repetition's plain run: a drift of
            # the machine's speed between repetitions cancels
            pr = [(r["tokens"] / r["sec"]) / (q["tokens"] / q["sec"]) for r, q in zip(rs, plain)]
            ci = median_ci(pr)
            acc = "%d / %d (%.0f %%)" % (rs[0]["acc"], rs[0]["drafted"],
                                         100.0 * rs[0]["acc"] / rs[0]["drafted"]) if rs[0]["drafted"] else "—"
            fs = [r["inrun"] for r in rs if r["inrun"] is not None]
            fci = median_ci(fs) if len(fs) >= 6 else None
            inrun = "—" if not fs else "%.3f%s" % (statistics.median(fs), " (%.3f–%.3f)" % fci if fci else "")
            print("| %s | %s | %.1f | %.2f | %.1f | %.2f | %.3f (%.2f–%.2f) | %s | %.1f | %s | %s |" % (
                name, cname, w, w / p_w, c, c / p_c, statistics.median(pr), min(pr), max(pr),
                "%.3f–%.3f" % ci if ci else "— (reps < 6)", wall, acc, inrun))


if __name__ == "__main__":
    main()
