"""test_llm_kvquant.py — quantized KV caches on a real model: quality against the plain cache, the
CLI flags and their errors. Cheap: SmolLM2 over the first 96 tokens (48 under ASan) of
tests/fixtures/llm/devils_dictionary.txt (public domain; README beside it).

Contract checked (docs/LLM.md "KV caches", docs/PERFORMANCE.md "LLM quantized KV caches"):
  * `steno perplexity --kinds q8,tq4` scores the text with the plain cache and each kind in one run;
    the plain-vs-plain noise floor is measured in the same test (a plain f32 cache scored against
    the plain f16 one: SmolLM2 Q4_1 with llama.cpp's q8 activation rounding turns one-ulp
    differences into top-1 flips at near-ties, so "agreement with plain" cannot reach 100 % even
    for a MORE precise cache). q8 must be as close to plain as that floor:
      top-1 flips <= 2 × the floor's + 3 (a handful of near-tie events over 47 / 95 positions) and
      agreement >= 85 %, mean KL <= 3 × floor + 0.002,
      |ppl / ppl_plain − 1| <= 3 %;
    tq4: |Δppl| <= 6 %, mean KL <= 0.05; bytes per token exactly the formula of kernels/quant/kvquant.h
    (SmolLM2: 30 layers × 3 KV heads × head_dim 64: q8 g32 = 12 960, g64 = 12 240, tq4 = 9 360,
    plain f16 = 23 040).
  * `--compute f32` (dequantized weights, f32 activations) removes that noise: the f32-vs-f16 plain
    floor agrees closely (KL < 2.5e-4; it depends on the OpenBLAS kernels); there q8 with the first 4 tokens kept as attention
    sinks (`--kv-sink 4`) has mean KL <= 0.002, and less than a third of q8 without sinks (whose
    position-1 distribution is wrecked by the quantized outlier channels of the first tokens); and
    steno's default q8 (group 32, rotated keys and values, centered keys) has less than a third of
    the mean KL of q8 with sinks alone (group 64, `--kv-rotate 0 --kv-center 0`).
  * `steno generate --kv q8 --temp 0` runs, and its stderr stats line reports "kv q8: 12960
    bytes/token (plain 23040)"; `--kv-quant-start` keeps the first tokens plain (same greedy start).
  * usage errors (exit 2, one line): --kv bogus, --kv-group 48, --kv-key-bits 5, --kv-rotate 2, ….
  * a model whose head_dim does not suit the codec (stories260K: head_dim 8) → exit 1, one line.
The model comes from scripts/fetch_llm_models.sh; a missing model is a FAILURE.
Standard library only; prints PASS/FAIL per case and "N passed, N failed" last.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

STENO = se.steno_bin()
TEXT = se.fixtures_dir("llm", "devils_dictionary.txt")
SHARED = os.environ.get("STENO_SHARED") or os.path.join(os.path.dirname(se.source_dir()), "shared")
STORIES = os.path.join(SHARED, "models", "stories260K", "stories260K.bin")
TOKENS = "48" if os.environ.get("STENO_SANITIZE") == "1" else "96"  # ASan: a shorter span
results = []


class CaseFailure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise CaseFailure(msg)


def run(args, timeout=600):
    p = subprocess.run([STENO] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    check(p.returncode >= 0, "killed by signal %d; stderr: %s" % (-p.returncode, err[-2000:]))
    for mark in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
        check(mark not in err, "sanitizer report:\n" + err[-4000:])
    return p.returncode, out, err


def case(fn):
    try:
        fn()
        results.append(True)
        print("PASS %s" % fn.__name__, flush=True)
    except (CaseFailure, OSError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
        results.append(False)
        print("FAIL %s: %s" % (fn.__name__, e), flush=True)
    return fn


def perplexity(*extra):
    rc, out, err = run(["perplexity", "-m", "smollm2", "-f", TEXT, "--max-tokens", TOKENS, "-t", "2"] + list(extra))
    check(rc == 0, "steno perplexity %s: exit %d: %s" % (" ".join(extra), rc, err.strip()[-500:]))
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@case
def quality_vs_plain():
    floor = perplexity("--kv", "plain", "--kv-type", "f32", "--ref-kv-type", "f16")[0]
    rows = {r["kv"]: r for r in perplexity("--kinds", "q8,tq4")}
    print("  floor (f32 vs f16 plain): top-1 %.3f, KL %.5f, ppl %.3f vs %.3f" %
          (floor["top1_agree"], floor["kl_mean"], floor["ppl"], floor["ppl_plain"]))
    for k in ("q8", "tq4"):
        r = rows[k]
        print("  %s: top-1 %.3f, KL %.5f, ppl %.3f vs %.3f, %d bytes/token (plain %d)" %
              (k, r["top1_agree"], r["kl_mean"], r["ppl"], r["ppl_plain"], r["bytes_per_token"],
               r["bytes_per_token_plain"]))
        check(r["scored"] == int(TOKENS) - 1, "%s scored %d positions" % (k, r["scored"]))
        check(r["bytes_per_token_plain"] == 23040, "plain bytes per token %d" % r["bytes_per_token_plain"])
    q8, tq4 = rows["q8"], rows["tq4"]
    check(q8["bytes_per_token"] == 12960, "q8 bytes per token %d, want 12960" % q8["bytes_per_token"])
    check(tq4["bytes_per_token"] == 9360, "tq4 bytes per token %d, want 9360" % tq4["bytes_per_token"])
    # flips are counts of a few near-tie events (47 or 95 positions): at most twice the floor's plus 3
    n = q8["scored"]
    q8_flips, floor_flips = round(n * (1 - q8["top1_agree"])), round(n * (1 - floor["top1_agree"]))
    check(q8["top1_agree"] >= 0.85 and q8_flips <= 2 * floor_flips + 3,
          "q8 top-1 agreement %.3f (%d flips) vs the f32-vs-f16 floor %.3f (%d flips)" %
          (q8["top1_agree"], q8_flips, floor["top1_agree"], floor_flips))
    check(q8["kl_mean"] <= 3 * floor["kl_mean"] + 0.002,
          "q8 mean KL %.5f vs floor %.5f" % (q8["kl_mean"], floor["kl_mean"]))
    check(abs(q8["ppl"] / q8["ppl_plain"] - 1) <= 0.03, "q8 perplexity %.3f vs %.3f" % (q8["ppl"], q8["ppl_plain"]))
    check(abs(tq4["ppl"] / tq4["ppl_plain"] - 1) <= 0.06, "tq4 perplexity %.3f vs %.3f" % (tq4["ppl"], tq4["ppl_plain"]))
    check(tq4["kl_mean"] <= 0.05, "tq4 mean KL %.5f" % tq4["kl_mean"])


@case
def f32_compute_and_sinks():
    floor = perplexity("--compute", "f32", "--kv", "plain", "--kv-type", "f32", "--ref-kv-type", "f16")[0]
    print("  f32 compute floor: top-1 %.3f, KL %.2e" % (floor["top1_agree"], floor["kl_mean"]))
    # f16 vs f32 KV rows under f32 arithmetic: the distributions agree to KL ~1e-6, but near-ties
    # may still flip: top-1 1.000 on the Zen 2 machine this was written on; on an AVX-512 Xeon,
    # whose OpenBLAS sgemm kernel rounds differently, 0.989 (KL 2.4e-6) in Release and 0.979
    # (KL 4.0e-6) in the ASan+UBSan build. The KL bound is the test; top-1 only catches a gross
    # error. The KL depends on OpenBLAS's sgemm kernels more than expected (SmolLM2, 48 tokens, same
    # Xeon, OPENBLAS_CORETYPE): Prescott 4.0e-6, Haswell 6.7e-5, SkylakeX 1.06e-4 (max over positions
    # 1.7e-4 / 3.1e-3 / 5.0e-3) while the f32-cache side's perplexity moves by 1e-5 only: not yet
    # explained (docs/LLM.md). The bound leaves 2x over the largest seen, still 30x under q8's KL.
    check(floor["top1_agree"] >= 0.95 and floor["kl_mean"] < 2.5e-4,
          "f32-vs-f16 plain under --compute f32: top-1 %.3f, KL %g" % (floor["top1_agree"], floor["kl_mean"]))
    mlx = ["--kv-group", "64", "--kv-rotate", "0", "--kv-center", "0"]
    nosink = perplexity("--compute", "f32", "--kv", "q8", "--kv-sink", "0", "--ref-kv-type", "f32", *mlx)[0]
    sink = perplexity("--compute", "f32", "--kv", "q8", "--kv-sink", "4", "--ref-kv-type", "f32", *mlx)[0]
    default = perplexity("--compute", "f32", "--kv", "q8", "--ref-kv-type", "f32")[0]
    print("  q8 under --compute f32: no sink top-1 %.3f KL %.5f max %.3f; 4 sinks top-1 %.3f KL %.5f max %.3f" %
          (nosink["top1_agree"], nosink["kl_mean"], nosink["kl_max"], sink["top1_agree"], sink["kl_mean"],
           sink["kl_max"]))
    check(sink["kl_mean"] <= 0.002, "q8 + 4 sinks: mean KL %.5f" % sink["kl_mean"])
    check(sink["kl_mean"] * 3 < nosink["kl_mean"], "sinks do not help: KL %.5f vs %.5f without" %
          (sink["kl_mean"], nosink["kl_mean"]))
    check(sink["bytes_per_token"] == 12240, "q8 bytes per token %d with sinks" % sink["bytes_per_token"])
    print("  default q8 (g32, rotated, centered keys): top-1 %.3f KL %.5f max %.3f" %
          (default["top1_agree"], default["kl_mean"], default["kl_max"]))
    check(default["kv_rotate"] == 1 and default["kv_center"] == 1 and default["kv_group"] == 32,
          "defaults: %r" % default)
    check(default["kl_mean"] * 3 < sink["kl_mean"], "rotation and centering do not help: KL %.5f vs %.5f" %
          (default["kl_mean"], sink["kl_mean"]))


@case
def generate_reports_bytes_per_token():
    rc, out, err = run(["generate", "-m", "smollm2", "-p", "The capital of France is", "-n", "8", "--temp", "0",
                        "--kv", "q8", "-t", "2"])
    check(rc == 0, "exit %d: %s" % (rc, err.strip()[-300:]))
    check("kv q8: 12960 bytes/token (plain 23040)" in err, "stats line: %r" % err.strip())
    check(len(out.strip()) > 0, "no text")
    rc2, out2, err2 = run(["generate", "-m", "smollm2", "-p", "The capital of France is", "-n", "8", "--temp", "0",
                           "--kv", "tq3", "--kv-quant-start", "1000", "-t", "2"])
    rc3, out3, _ = run(["generate", "-m", "smollm2", "-p", "The capital of France is", "-n", "8", "--temp", "0",
                        "-t", "2"])
    check(rc2 == 0 and rc3 == 0, "exit %d/%d: %s" % (rc2, rc3, err2.strip()[-300:]))
    check(out2 == out3, "--kv-quant-start beyond the text must leave the cache plain: %r vs %r" % (out2, out3))


@case
def usage_errors():
    for args, what in ((["--kv", "bogus"], "--kv"), (["--kv-group", "48"], "--kv-group"),
                       (["--kv-key-bits", "5"], "--kv-key-bits"), (["--kv-quant-start", "-1"], "--kv-quant-start"),
                       (["--kv-sink", "-1"], "--kv-sink"), (["--compute", "f64"], "--compute"),
                       (["--kv-rotate", "2"], "--kv-rotate"), (["--kv-center", "yes"], "--kv-center")):
        rc, out, err = run(["generate", "-m", "smollm2", "-p", "x", "-n", "1"] + args)
        lines = [line for line in err.splitlines() if line.strip()]
        check(rc == 2 and len(lines) == 1 and what in lines[0], "%s: exit %d, stderr %r" % (args, rc, err))
    rc, out, err = run(["perplexity", "-m", "smollm2"])
    check(rc == 2 and "no text" in err, "perplexity without -f: exit %d %r" % (rc, err))
    rc, out, err = run(["perplexity", "-m", "smollm2", "-f", TEXT, "--kinds", "q8,zz"])
    check(rc == 2 and "--kinds" in err, "bad --kinds: exit %d %r" % (rc, err))
    rc, out, err = run(["perplexity", "-m", "smollm2", "-f", TEXT, "--kv", "q8", "--kinds", "q4"])
    check(rc == 2 and "exclude" in err and len(err.strip().splitlines()) == 1, "--kv with --kinds: exit %d %r" % (rc, err))


@case
def unsuitable_head_dim():
    rc, out, err = run(["generate", "-m", STORIES, "-p", "x", "-n", "1", "--kv", "tq4"])
    lines = [line for line in err.splitlines() if line.strip()]
    check(rc == 1 and len(lines) == 1 and "head_dim" in lines[0], "exit %d, stderr %r" % (rc, err))


passed = sum(results)
print("%d passed, %d failed" % (passed, len(results) - passed))
sys.exit(0 if passed == len(results) else 1)
