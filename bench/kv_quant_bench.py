#!/usr/bin/env python3
"""Quantized KV caches vs the plain cache: perplexity, mean KL divergence, top-1 agreement, KV bytes
per token and decode speed, for SmolLM2 and Gemma 3 over tests/fixtures/llm/devils_dictionary.txt
(~2 100 tokens, public domain; see the README beside it), plus a long-context run (the text
repeated, >= 4 000 tokens on SmolLM2) and the noise floor of the comparison (a plain f32 cache
scored against the plain f16 one).

Every number comes from `steno perplexity` (cli/perplexity_cmd.c), which evaluates the text with
the plain cache and with every listed kind in the same process, chunk by chunk, and then decodes
greedily with each context in turn (so a busy machine slows all of them alike).

Usage:
  python3 bench/kv_quant_bench.py --steno build/steno --threads 1 --out /tmp/kvq      # runs, then prints
  python3 bench/kv_quant_bench.py ... --only smollm2_2k gemma3_2k                     # some runs
  python3 bench/kv_quant_bench.py --from /tmp/kvq                                     # prints only
Writes OUT/<run>.jsonl (one JSON object per kind) and prints the markdown tables of
docs/PERFORMANCE.md.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "llm", "devils_dictionary.txt")
KINDS = "q8,q4,tq4,tq3,tq2"

F32 = ["--compute", "f32", "--ref-kv-type", "f32"]  # evaluation precision, against a plain f32 cache
ABLATION = [
    ("mlx", ["--kv-group", "64", "--kv-sink", "0", "--kv-rotate", "0", "--kv-center", "0"]),
    ("sink", ["--kv-group", "64", "--kv-rotate", "0", "--kv-center", "0"]),
    ("rot", ["--kv-group", "64", "--kv-center", "0"]),
    ("center", ["--kv-group", "64"]),
]
ABLATION_TITLE = {
    "mlx": "mlx-lm's cache: group 64, no sinks, raw keys (`--kv-group 64 --kv-sink 0 --kv-rotate 0 --kv-center 0`)",
    "sink": "+ 4 attention sinks (`--kv-group 64 --kv-rotate 0 --kv-center 0`)",
    "rot": "+ Walsh–Hadamard rotation of keys and values (`--kv-group 64 --kv-center 0`)",
    "center": "+ centered keys (`--kv-group 64`)",
    "default": "+ group 32 = steno's default (no option)",
}
RUNS = [
    # name, model, extra args (every quantized kind with steno's default 4 attention sinks)
    ("smollm2_2k", "smollm2", ["--kinds", KINDS, "--decode", "32"]),
    ("gemma3_2k", "gemma3", ["--kinds", KINDS, "--decode", "32"]),
    ("smollm2_4k", "smollm2", ["--repeat", "2", "--max-tokens", "4096", "--kinds", "q8,tq3", "--decode", "64"]),
    ("smollm2_floor", "smollm2", ["--kv", "plain", "--kv-type", "f32", "--ref-kv-type", "f16", "--max-tokens", "256"]),
    ("gemma3_floor", "gemma3", ["--kv", "plain", "--kv-type", "f32", "--ref-kv-type", "f16", "--max-tokens", "256"]),
    ("smollm2_2k_f32", "smollm2", ["--kinds", KINDS] + F32),
    ("gemma3_2k_f32", "gemma3", ["--kinds", KINDS] + F32),
] + [
    # q8 ablation, f32 arithmetic: from mlx-lm's QuantizedKVCache (group 64, no sinks, raw keys) to
    # steno's default (group 32, 4 sinks, rotated keys and values, centered keys), one step at a time
    ("%s_2k_f32_%s" % (model, step), model, ["--kinds", "q8"] + args + F32)
    for model in ("smollm2", "gemma3")
    for step, args in ABLATION
] + [
    ("smollm2_floor_f32", "smollm2", ["--compute", "f32", "--kv", "plain", "--kv-type", "f32", "--ref-kv-type", "f16",
                                      "--max-tokens", "256"]),
    ("gemma3_floor_f32", "gemma3", ["--compute", "f32", "--kv", "plain", "--kv-type", "f32", "--ref-kv-type", "f16",
                                    "--max-tokens", "256"]),
]


def run(steno, threads, out, only):
    os.makedirs(out, exist_ok=True)
    for name, model, extra in RUNS:
        if only and name not in only:
            continue
        cmd = [steno, "perplexity", "-m", model, "-f", TEXT, "-t", str(threads)] + extra
        print("+", " ".join(cmd), file=sys.stderr, flush=True)
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if res.returncode != 0:
            sys.exit("%s failed (%d): %s" % (name, res.returncode, res.stderr.strip()))
        with open(os.path.join(out, name + ".jsonl"), "w") as f:
            f.write(res.stdout)


def load(out, name):
    p = os.path.join(out, name + ".jsonl")
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return [json.loads(line) for line in f if line.strip()]


def table(out):
    lines = []
    for name in ("smollm2_2k", "gemma3_2k", "smollm2_4k", "smollm2_2k_f32", "gemma3_2k_f32"):
        rows = load(out, name)
        if not rows:
            continue
        r0 = rows[0]
        lines.append("")
        lines.append("**%s**, %d tokens (%d scored), compute %s, %d attention sinks, group %d, rotation %s, centered keys %s, reference plain %s cache%s:" %
                     (r0["model"], r0["tokens"], r0["scored"], r0["compute"], r0["kv_sink"], r0["kv_group"],
                      "on" if r0.get("kv_rotate") else "off", "on" if r0.get("kv_center") else "off",
                      "f32" if "_f32" in name else "f16",
                      ", decode of %d tokens after them" % r0["decode_tokens"] if r0["decode_tokens"] else ""))
        lines.append("")
        lines.append("| KV cache | bytes/token | vs ref | perplexity | Δppl | mean KL (nats) | max KL | top-1 agree | "
                     "flip margin mean / max (nats) | decode tok/s | plain decode tok/s (same run) |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
        lines.append("| plain | %d | 1.00 | %.3f | | | | | | | %s |" %
                     (r0["bytes_per_token_plain"], r0["ppl_plain"],
                      "%.2f" % r0["decode_tok_s_plain"] if r0["decode_tokens"] else ""))
        for r in rows:
            lines.append("| %s | %d | %.2f | %.3f | %+.2f%% | %.5f | %.3f | %.1f%% | %.3f / %.3f | %s | %s |" % (
                r["kv"], r["bytes_per_token"], r["bytes_per_token"] / r["bytes_per_token_plain"], r["ppl"],
                100 * (r["ppl"] / r["ppl_plain"] - 1), r["kl_mean"], r["kl_max"], 100 * r["top1_agree"],
                r["flip_margin_mean"], r["flip_margin_max"],
                "%.2f" % r["decode_tok_s"] if r["decode_tokens"] else "",
                "%.2f" % r["decode_tok_s_plain"] if r["decode_tokens"] else ""))
    for model in ("smollm2", "gemma3"):
        steps = [(s, load(out, "%s_2k_f32_%s" % (model, s))) for s, _ in ABLATION]
        steps.append(("default", [r for r in load(out, "%s_2k_f32" % model) if r["kv"] == "q8"]))
        steps = [(s, r[0]) for s, r in steps if r]
        if not steps:
            continue
        lines.append("")
        lines.append("q8 step by step, **%s**, %d tokens, compute f32, reference plain f32 cache:" %
                     (steps[0][1]["model"], steps[0][1]["tokens"]))
        lines.append("")
        lines.append("| q8 cache | bytes/token | perplexity | Δppl | mean KL (nats) | max KL | top-1 agree | "
                     "flip margin mean / max (nats) |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for s, r in steps:
            lines.append("| %s | %d | %.3f | %+.2f%% | %.5f | %.3f | %.2f%% | %.3f / %.3f |" % (
                ABLATION_TITLE[s], r["bytes_per_token"], r["ppl"], 100 * (r["ppl"] / r["ppl_plain"] - 1), r["kl_mean"],
                r["kl_max"], 100 * r["top1_agree"], r["flip_margin_mean"], r["flip_margin_max"]))
    floors = [(n, load(out, n)) for n in ("smollm2_floor", "gemma3_floor", "smollm2_floor_f32", "gemma3_floor_f32")]
    floors = [(n, r[0]) for n, r in floors if r]
    if floors:
        lines.append("")
        lines.append("Noise floor — a plain **f32** cache (more precise than the f16 reference) scored against the "
                     "plain f16 cache:")
        lines.append("")
        lines.append("| model | compute | tokens | perplexity f32 / f16 | mean KL (nats) | max KL | top-1 agree |")
        lines.append("|---|---|---|---|---|---|---|")
        for n, r in floors:
            lines.append("| %s | %s | %d | %.3f / %.3f | %.6f | %.4f | %.1f%% |" % (
                r["model"], r["compute"], r["tokens"], r["ppl"], r["ppl_plain"], r["kl_mean"], r["kl_max"],
                100 * r["top1_agree"]))
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steno", default=os.path.join(os.path.dirname(HERE), "build", "steno"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="/tmp/kvq")
    ap.add_argument("--only", nargs="*", help="run only these runs (%s)" % ", ".join(r[0] for r in RUNS))
    ap.add_argument("--from", dest="from_dir", help="only print the tables of an earlier --out")
    a = ap.parse_args()
    if a.from_dir:
        table(a.from_dir)
        return
    run(a.steno, a.threads, a.out, a.only)
    table(a.out)


if __name__ == "__main__":
    main()
