"""test_whisper_spec.py — speculative decoding of the Whisper decoder (`steno transcribe
--draft-kind ngram|quant|layers|model`, docs/WHISPER.md "Speculative decoding") against plain
greedy decoding.

Contract checked:
  * tiny.en on a few English dev clips: with each drafter (ngram; quant q8_0 and q4_0; layers
    --draft-layers 2; model: tiny.en itself as the draft; ngram with a fixed --num-draft-tokens 3)
    every segment equals plain decoding's: tokens, text, start/end, temperature and avg_logprob
    (the verify pass gives each position the very logits of a single-token step, screen included);
    stderr has the acceptance line "speculation (KIND): A of D drafted tokens accepted", and its
    in-run accounting counts A + N tokens for the N rounds (one more than the accepted per round);
  * with --word-timestamps True and quant, the words (timings, probabilities) are plain's;
  * base on one multilingual clip (language detected) with quant and ngram: the same;
  * usage errors exit 2 with one line: an unknown --draft-kind, --draft-layers at or above the
    model's decoder layers, a --draft-model with another vocabulary (base for tiny.en),
    --num-draft-tokens without a drafter, a drafter with --beam-size 5 or --batch-size; a drafter
    with --temperature 0.5 (every attempt sampled) transcribes and warns that it is unused.
STENO_TEST_FULL=1: every dev clip of audio/manifest.tsv, tiny.en on the English ones and base on
all, with ngram, quant and layers (the judged exactness run; minutes on 2 cores).
Standard library only. Each case prints PASS/FAIL; the last line is "N passed, N failed".
"""

import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

STENO = se.steno_bin()
TINY = se.model_dir()
BASE = os.path.join(os.path.dirname(TINY), "base")
results = []


def run(args):
    p = subprocess.run([STENO] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=3000)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode >= 0, "killed by signal %d: %s" % (-p.returncode, err[-2000:])
    for mark in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
        assert mark not in err, "sanitizer report:\n" + err[-4000:]
    return p.returncode, p.stdout.decode("utf-8", "replace"), err


def case(fn):
    try:
        fn()
        results.append(True)
        print("PASS %s" % fn.__name__, flush=True)
    except (AssertionError, OSError, subprocess.TimeoutExpired) as e:
        results.append(False)
        print("FAIL %s: %s" % (fn.__name__, e), flush=True)
    return fn


def transcribe(model, paths, extra):
    """{path: result} of one steno process over paths, and its stderr."""
    with tempfile.TemporaryDirectory() as out:
        code, _, err = run(["transcribe", "--model", model, "-f", "json", "-o", out, "--verbose", "False"] + extra +
                           paths)
        assert code == 0, "%s: exit %d: %s" % (" ".join(extra), code, err[-2000:])
        res = {}
        for p in paths:
            with open(os.path.join(out, se.clip_stem(p) + ".json"), encoding="utf-8") as f:
                res[p] = json.load(f)
        return res, err


KEYS = ("tokens", "text", "start", "end", "temperature", "avg_logprob", "no_speech_prob", "compression_ratio")


def same_as_plain(model, paths, variants, extra=()):
    plain, _ = transcribe(model, paths, list(extra))
    for args, kind in variants:
        got, err = transcribe(model, paths, list(extra) + args)
        for p in paths:
            a, b = plain[p]["segments"], got[p]["segments"]
            assert len(a) == len(b), "%s %s: %d segments, plain %d" % (" ".join(args), p, len(b), len(a))
            for i, (x, y) in enumerate(zip(a, b)):
                for k in KEYS:
                    assert x.get(k) == y.get(k), "%s %s segment %d: %s %r, plain %r" % (
                        " ".join(args), os.path.basename(p), i, k, y.get(k), x.get(k))
        lines = [ln for ln in err.splitlines() if "drafted tokens accepted" in ln]
        assert len(lines) == len(paths), "%s: %d acceptance lines for %d files:\n%s" % (
            " ".join(args), len(lines), len(paths), err[-1500:])
        assert all("speculation (%s)" % kind in ln for ln in lines), lines[0]
        for ln in lines:  # the in-run accounting: each verify round emits its accepted drafts and one token more
            m = re.search(r": (\d+) of (\d+) drafted tokens accepted \([\d.]+ %\) in (\d+) rounds; \d+ target passes; "
                          r"drafting and verify passes ([\d.]+) s for (\d+) tokens(?:, no plain steps|, plain steps "
                          r"([\d.]+) ms each: ([\d.]+)x of plain steps in-run)$", ln)
            assert m, "%s: no in-run accounting in %r" % (" ".join(args), ln)
            acc, rounds, tokens = int(m.group(1)), int(m.group(3)), int(m.group(5))
            assert tokens == acc + rounds, "%s: %d round tokens, %d accepted + %d rounds" % (
                " ".join(args), tokens, acc, rounds)
            assert m.group(6) is None or (float(m.group(6)) > 0 and float(m.group(7)) > 0), ln
        print("  %s: %s" % (" ".join(args), "; ".join(ln.split("; ", 1)[1] for ln in lines)))


def clips(names):
    return [os.path.join(se.audio_dir(), n) for n in names]


EN = clips(["jfk.wav", "ls_test-clean_1221-135766-0002.wav", "arctic_aew_a0001.wav"])
DRAFTERS_TINY = [(["--draft-kind", "ngram"], "ngram"), (["--draft-kind", "quant"], "quant"),
                 (["--draft-kind", "quant", "--draft-weights", "q4_0"], "quant"),
                 (["--draft-layers", "2"], "layers"), (["--draft-model", TINY], "model"),
                 (["--draft-kind", "ngram", "--num-draft-tokens", "3"], "ngram"),
                 (["--draft-kind", "ngram", "--ngram-min", "1", "--num-draft-tokens", "4"], "ngram")]


@case
def tiny_en_each_drafter():
    if se.sanitize():  # each drafter's C code once, on one clip (q4_0 and a fixed length: Release only)
        print("  STENO_SANITIZE=1: jfk.wav, ngram, quant q8_0, layers, model")
        same_as_plain(TINY, EN[:1], [DRAFTERS_TINY[i] for i in (0, 1, 3, 4)])
        return
    same_as_plain(TINY, EN, DRAFTERS_TINY)


@case
def word_timestamps():
    # the alignment re-runs the decoder after the window: its words are plain decoding's too
    if se.sanitize():
        print("  STENO_SANITIZE=1: Release only (the alignment's C code is unchanged)")
        return
    paths = EN[:1]
    plain, _ = transcribe(TINY, paths, ["--word-timestamps", "True"])
    got, _ = transcribe(TINY, paths, ["--word-timestamps", "True", "--draft-kind", "quant"])
    a = [w for sg in plain[paths[0]]["segments"] for w in sg["words"]]
    b = [w for sg in got[paths[0]]["segments"] for w in sg["words"]]
    assert a and a == b, "words differ: %r vs %r" % (b[:3], a[:3])


@case
def base_multilingual():
    if se.sanitize():
        print("  STENO_SANITIZE=1: base runs only in the Release build (the same C code runs above)")
        return
    same_as_plain(BASE, clips(["picovoice_leopard_test_de.wav"]),
                  [(["--draft-kind", "quant"], "quant"), (["--draft-kind", "ngram"], "ngram")])


def usage_error(args, needle):
    code, _, err = run(["transcribe", "--model", TINY] + args + [EN[0]])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, "%s: exit %d, not 2: %s" % (" ".join(args), code, err[-500:])
    assert len(lines) == 1 and needle in lines[0], "%s: %r" % (" ".join(args), lines)


@case
def flag_errors():
    usage_error(["--draft-kind", "medusa"], "--draft-kind")
    usage_error(["--draft-layers", "4"], "--draft-layers 4")
    usage_error(["--draft-model", BASE], "another vocabulary")
    usage_error(["--num-draft-tokens", "4"], "needs a drafter")
    usage_error(["--draft-kind", "quant", "--num-draft-tokens", "33"], "--num-draft-tokens")
    usage_error(["--draft-kind", "quant", "--beam-size", "5"], "--beam-size")
    usage_error(["--draft-kind", "ngram", "--batch-size", "4"], "--batch-size")
    usage_error(["--draft-kind", "ngram", "--draft-weights", "q4_0"], "--draft-weights")
    usage_error(["--draft-model", ""], "--draft-model: the value is empty")
    usage_error(["--draft-kind", "layers", "--ngram-min", "2"], "--ngram-min is for --draft-kind ngram, not layers")
    usage_error(["--draft-kind", "quant", "--ngram-max", "3"], "--ngram-max is for --draft-kind ngram, not quant")
    usage_error(["--draft-kind", "ngram", "--ngram-min", "3", "--ngram-max", "2"], "--ngram-min 3 is above --ngram-max 2")
    # sampling only (no temperature-0 attempt): the drafter is named unused, the transcript still written
    code, out, err = run(["transcribe", "--model", TINY, "--draft-kind", "ngram", "--temperature", "0.5", "-o", "-",
                          EN[0]])
    assert code == 0 and out.strip(), (code, err[-500:])
    assert "warning: --draft-kind ngram is unused" in err and "--temperature 0.5" in err, err[-500:]
    for missing in ("/missing/path", "no-such-model"):  # exit 1, naming the option, before any decoding
        code, _, err = run(["transcribe", "--model", TINY, "--draft-model", missing, EN[0]])
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert code == 1 and len(lines) == 1 and "--draft-model: " in lines[0] and missing in lines[0], (code, lines)


@case
def full_set():
    if not se.full():
        print("  CI size: the full dev set runs with STENO_TEST_FULL=1")
        return
    rows = se.read_manifest()
    en = [r["path"] for r in rows if r["language"] == "en"]
    allp = [r["path"] for r in rows]
    kinds = [(["--draft-kind", "ngram"], "ngram"), (["--draft-kind", "quant"], "quant"),
             (["--draft-kind", "layers"], "layers")]
    same_as_plain(TINY, en, kinds)
    same_as_plain(BASE, allp, kinds)


print("%d passed, %d failed" % (sum(results), len(results) - sum(results)))
sys.exit(0 if all(results) else 1)
