#!/usr/bin/env python3
"""bench_llama_bench.py — steno against llama.cpp's own `llama-bench`, interleaved (issue #13).

For each GGUF file and thread count, each repetition runs, one after the other:
  llama.cpp  `llama-bench -m FILE -t T -p 512 -n 128 -r 1 -o json` (pp512 and tg128 at depth 0)
             and `llama-bench -m FILE -t T -p 0 -n 128 -d 2048 -r 1 -o json` (tg128 at depth 2048);
  steno      `steno generate -m FILE -t T -f P512 -n 1` (prompt tok/s of a ~512-token prompt),
             `steno generate -m FILE -t T -p "Once" -n 128 --ignore-eos --temp 0` (decode tok/s),
             `steno generate -m FILE -t T -f P2048 -n 128 --ignore-eos --temp 0 -c 2304` (decode
             tok/s after a ~2 048-token prompt);
and the STREAM-like probe bench/membw.c (built here) right before each steno d0 decode run, so the
decode rows can be read as a fraction of the machine's bandwidth at that moment (a greedy step reads
every weight once: file bytes × tok/s; the tied output head is counted once, as the file holds it
once). The column is the median over repetitions of each run's own ratio: this VM's bandwidth
drifts by ±10 % from minute to minute, and a triad taken minutes away from the decode it divides
read that drift as the engine's.
Prints one table (medians, ratios > 1: steno faster) in the Markdown of docs/PERFORMANCE.md.

The prompts are English text built here from a fixed word list; steno reports its own token count
(printed), llama-bench uses 512 random token ids. llama-bench's decode runs from random tokens,
steno's greedy from "Once"; both run exactly 128 steps (--ignore-eos).

  python3 tools/bench_llama_bench.py --steno build/steno \\
      --llama-bench /path/to/llama.cpp/build/bin/llama-bench \\
      --model ~/.cache/steno/models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf --threads 1 2 --reps 3

Nothing here is used by the tests (tests never assert timings).
"""

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

WORDS = ("the a of to and in that is was he for it with as his on be at by this had not are but from or "
         "have an they which one you were her all she there would their we him been has when who will "
         "more no if out so said what up its about into than them can only other new some could time "
         "these two may then do first any my now such like our over man me even most made after also "
         "did many before must through back years where much your way well down should because each "
         "just those people river garden window morning letter village winter music doctor market").split()

LINE = re.compile(r"prompt: (\d+) tokens in ([\d.]+) s \(([\d.]+) tok/s\); decode: (\d+) tokens in ([\d.]+) s "
                  r"\(([\d.]+) tok/s\)")


def text(n_words, seed):
    rnd = random.Random(seed)
    return " ".join(rnd.choice(WORDS) for _ in range(n_words))


def run_steno(steno, model, threads, args):
    cmd = [steno, "generate", "-m", model, "-t", str(threads), "--temp", "0"] + args
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    m = LINE.search(r.stderr)
    if r.returncode != 0 or not m:
        sys.exit(f"bench_llama_bench: {' '.join(cmd)} failed: {r.stderr.strip()[-400:]}")
    return int(m.group(1)), float(m.group(3)), int(m.group(4)), float(m.group(6))


def run_llama(bench, model, threads, args):
    cmd = [bench, "-m", model, "-t", str(threads), "-r", "1", "-o", "json"] + args
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    if r.returncode != 0:
        sys.exit(f"bench_llama_bench: {' '.join(cmd)} failed: {r.stderr.strip()[-400:]}")
    out = {}
    for t in json.loads(r.stdout):
        key = ("pp" if t["n_prompt"] > 0 else "tg") + str(t["n_prompt"] or t["n_gen"]) + \
              (f"@d{t['n_depth']}" if t.get("n_depth") else "")
        out[key] = t["avg_ts"]
    return out


def build_membw(source_dir):
    exe = os.path.join(tempfile.gettempdir(), "steno_membw")
    subprocess.run(["cc", "-O2", "-march=native", "-pthread", os.path.join(source_dir, "bench", "membw.c"), "-o", exe],
                   check=True)
    return exe


def membw(exe, threads):
    r = subprocess.run([exe, "256", str(threads)], capture_output=True, text=True, check=True)
    # lines such as "threads 2: copy 25.1 GB/s, triad 27.3 GB/s"
    vals = re.findall(r"[Tt]riad[^0-9]*([\d.]+)", r.stdout)
    return float(vals[-1]) if vals else float("nan"), r.stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steno", required=True)
    ap.add_argument("--llama-bench", required=True)
    ap.add_argument("--model", action="append", required=True, help="GGUF file (repeatable)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-depth", action="store_true", help="skip the 2 048-token depth rows")
    ap.add_argument("--compute", nargs="+", default=["ggml", "fast"], help="steno --compute modes to run (default: ggml fast)")
    a = ap.parse_args()
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tmp = tempfile.mkdtemp(prefix="steno-llbench-")
    p512, p2048 = os.path.join(tmp, "p512.txt"), os.path.join(tmp, "p2048.txt")
    with open(p512, "w") as f:
        f.write(text(511, 1))
    with open(p2048, "w") as f:
        f.write(text(2047, 2))
    rows = []
    exe = build_membw(src)
    for th in a.threads:
        for model in a.model:
            size = os.path.getsize(model) / 1e9
            S = {cm: {"pp": [], "tg": [], "tgd": [], "bw": [], "frac": []} for cm in a.compute}
            L = {"pp": [], "tg": [], "tgd": []}
            n_p = n_d = 0
            for rep in range(a.reps):
                for cm in a.compute:
                    c = ["--compute", cm]
                    n_p, pp, _, _ = run_steno(a.steno, model, th, c + ["-f", p512, "-n", "1", "-b", "512"])
                    S[cm]["pp"].append(pp)
                    bw, _ = membw(exe, th)
                    _, _, ng, tg = run_steno(a.steno, model, th, c + ["-p", "Once", "-n", "128", "--ignore-eos"])
                    S[cm]["tg"].append(tg)
                    S[cm]["bw"].append(bw)
                    S[cm]["frac"].append(size * tg / bw if bw == bw else 0)
                lb = run_llama(a.llama_bench, model, th, ["-p", "512", "-n", "128"])
                L["pp"].append(lb["pp512"])
                L["tg"].append(lb["tg128"])
                if not a.no_depth:
                    for cm in a.compute:
                        n_d, _, _, tgd = run_steno(a.steno, model, th, ["--compute", cm, "-f", p2048, "-n", "128",
                                                                       "--ignore-eos", "-c", "2304", "-b", "512"])
                        S[cm]["tgd"].append(tgd)
                    lb = run_llama(a.llama_bench, model, th, ["-p", "0", "-n", "128", "-d", "2048"])
                    L["tgd"].append(lb["tg128@d2048"])
                print(f"{os.path.basename(model)} t={th} rep {rep}: " +
                      " ".join(f"steno-{cm} {S[cm]['pp'][-1]:.1f}/{S[cm]['tg'][-1]:.1f}/{S[cm]['tgd'][-1] if S[cm]['tgd'] else 0:.1f}"
                               f" (triad {S[cm]['bw'][-1]:.1f} GB/s, {100 * S[cm]['frac'][-1]:.0f} %)"
                               for cm in a.compute) +
                      f"  llama {L['pp'][-1]:.1f}/{L['tg'][-1]:.1f}/{L['tgd'][-1] if L['tgd'] else 0:.1f}", file=sys.stderr)
            lmed = {k: statistics.median(L[k]) if L[k] else 0 for k in L}
            for cm in a.compute:
                med = {k: (statistics.median(S[cm][k]) if S[cm][k] else 0, lmed[k]) for k in L}
                rows.append((os.path.basename(model) + f" ({cm})", th, n_p, n_d, med,
                             statistics.median(S[cm]["frac"]), statistics.median(S[cm]["bw"])))
    print("| model | threads | prompt tok/s steno / llama.cpp (ratio) | decode tok/s d0 steno / llama.cpp (ratio) "
          "| decode tok/s d2048 steno / llama.cpp (ratio) | triad GB/s | steno d0 decode × file bytes ÷ triad |")
    print("|---|---:|---|---|---|---:|---:|")
    for name, th, n_p, n_d, med, frac, bw in rows:
        def cell(k):
            s, l = med[k]
            return f"{s:.1f} / {l:.1f} ({s / l:.2f}×)" if l else "—"
        print(f"| {name} | {th} | {cell('pp')} | {cell('tg')} | {cell('tgd')} | {bw:.1f} | {100 * frac:.0f} % |")
    print(f"(steno's prompts: {rows[0][2]} tokens for pp, {rows[0][3]} before the d2048 decode)" if rows else "")


if __name__ == "__main__":
    main()
