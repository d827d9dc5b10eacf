"""test_spec_cli.py — speculative decoding from the CLI: `steno generate` and `steno chat` with
--draft-kind ngram|model|layers and --spec-verify, against plain decoding.

Contract checked (docs/LLM.md "Speculative decoding"):
  * generate, stories260K, greedy, a prompt that repeats itself: with each drafter (ngram; layers
    --draft-layers 3; model: the same file loaded again as the draft; layers with --spec-verify
    rejection, which is greedy at temperature 0) stdout equals plain decoding's byte for byte, and
    stderr has the acceptance line "speculation (KIND...): A of D drafted tokens accepted";
  * with --max-kv-size 64 --keep 4 (rounds across the ring's wrap) the same;
  * chat, SmolLM2, two turns, greedy: --draft-kind ngram replies equal plain ones;
  * usage errors exit 2 with one line (--draft-kind model without --draft-model; --draft-model with
    --draft-kind ngram; --draft-model ""; an option of another drafter, such as --ngram-min with
    --draft-kind layers, naming both); a missing --draft-model exits 1 naming it; a draft of another vocabulary (stories260K for SmolLM2)
    exits 1 with one line naming the reason; --draft-layers at or above the layer count is a usage
    error (exit 2, as in `steno transcribe`), also in chat, naming the model's layer count.
Standard library only. Each case prints PASS/FAIL; the last line is "N passed, N failed".
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

STENO = se.steno_bin()
SHARED = os.environ.get("STENO_SHARED") or os.path.join(os.path.dirname(se.source_dir()), "shared")
STORIES = os.path.join(SHARED, "models", "stories260K", "stories260K.bin")
SANITIZE = os.environ.get("STENO_SANITIZE") == "1"
PROMPT = ("Once upon a time there was a little dog named Tim. Tim liked to play in the park. Once upon a time "
          "there was a little dog named Tim. Tim liked to play")
results = []


def run(args, stdin=b""):
    p = subprocess.run([STENO] + list(args), input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
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


def same_as_plain(base, variants):
    code, plain, err = run(base)
    assert code == 0, err
    for extra, kind in variants:
        code, out, err = run(base + extra)
        assert code == 0, "%s: exit %d: %s" % (extra, code, err)
        assert out == plain, "%s: the text differs from plain decoding's:\n%r\n%r" % (extra, out[:300], plain[:300])
        line = [l for l in err.splitlines() if "drafted tokens accepted" in l]
        assert line and ("speculation (%s" % kind) in line[0], "%s: no acceptance line: %r" % (extra, err)
        print("  %-52s %s" % (" ".join(extra), line[0].split(": ", 2)[-1]))


VARIANTS = [(["--draft-kind", "ngram"], "ngram"),
            (["--draft-kind", "ngram", "--ngram-min", "1"], "ngram"),  # one-token lookups too (not the default)
            (["--draft-kind", "layers", "--draft-layers", "3"], "layers"),
            (["--draft-model", STORIES], "model"),
            (["--draft-kind", "layers", "--draft-layers", "3", "--spec-verify", "rejection"], "layers, rejection")]


@case
def generate_stories():
    same_as_plain(["generate", "-m", STORIES, "-p", PROMPT, "-n", "120", "--temp", "0", "-t", "2"], VARIANTS)


@case
def generate_stories_ring():
    same_as_plain(["generate", "-m", STORIES, "-p", PROMPT, "-n", "150", "--temp", "0", "-t", "2", "--max-kv-size",
                   "64", "--keep", "4", "--kv-reserve", "8"], VARIANTS[:4])


@case
def chat_smollm2():
    if SANITIZE:  # the same C path runs on stories260K above; SmolLM2 under ASan is minutes
        print("  (ASan build: chat runs generate_spec's code, covered above; SmolLM2 not loaded)")
        return
    turns = b"Repeat exactly: the cat sat on the mat and the dog sat on the log.\nAgain, the same sentence.\n"
    base = ["chat", "-m", "smollm2", "--temp", "0", "-t", "2", "-n", "40"]
    code, plain, err = run(base, turns)
    assert code == 0, err
    code, out, err = run(base + ["--draft-kind", "ngram"], turns)
    assert code == 0, err
    assert out == plain, "chat replies differ:\n%r\n%r" % (out, plain)
    assert err.count("drafted tokens accepted") == 2, err


def expect(args, rc, needle):
    code, _, err = run(args)
    lines = [l for l in err.splitlines() if l.strip()]
    assert code == rc and len(lines) == 1 and needle in lines[0], "%s: exit %d, stderr %r" % (args, code, err)


@case
def errors():
    g = ["generate", "-m", STORIES, "-p", "x", "-n", "4"]
    expect(g + ["--draft-kind", "model"], 2, "needs --draft-model")
    expect(g + ["--draft-kind", "ngram", "--draft-model", STORIES], 2, "--draft-model is for --draft-kind model")
    expect(g + ["--draft-kind", "layers", "--draft-layers", "5"], 2, "--draft-layers 5: model")
    expect(g + ["--draft-layers", "500"], 2, "has 5 layers (1..4 draft)")
    expect(["chat", "-m", STORIES, "--draft-layers", "5"], 2, "steno chat: --draft-layers 5")
    # a ring cache with no reserve cannot undo a rejected draft: refused, not a silent no-draft run
    expect(g + ["--draft-kind", "ngram", "--max-kv-size", "64", "--kv-reserve", "0"], 2,
           "--kv-reserve 0: %s keeps no history" % STORIES)
    expect(["chat", "-m", STORIES, "--draft-kind", "ngram", "--max-kv-size", "64", "--kv-reserve", "0"], 2,
           "steno chat: --kv-reserve 0")
    code, _, err = run(g + ["--draft-kind", "ngram", "--kv-reserve", "0"])  # no ring: nothing to undo
    assert code == 0, "--kv-reserve 0 without a ring: exit %d, %r" % (code, err)
    expect(g + ["--draft-model", "/nonexistent/draft.gguf"], 1, "/nonexistent/draft.gguf")
    # a speculative option without a drafter is refused, not silently ignored (fresh-user trial)
    for opt in (["--spec-verify", "rejection"], ["--num-draft-tokens", "4"], ["--ngram-min", "2"], ["--ngram-max", "3"]):
        expect(g + opt, 2, opt[0] + " needs a drafter")
    expect(g + ["--draft-kind", "ngram", "--draft-layers", "2"], 2, "--draft-layers is for --draft-kind layers")
    expect(g + ["--draft-kind", "ngram", "--ngram-min", "3", "--ngram-max", "2"], 2, "--ngram-min 3 is above --ngram-max 2")
    expect(g + ["--draft-kind", "ngram", "--ngram-min", "5"], 2, "--ngram-min 5 is above --ngram-max 4 (the default")
    # --ngram-max 1 alone: the default minimum (2) follows it down instead of refusing the pair
    code, _, err = run(g + ["--draft-kind", "ngram", "--ngram-max", "1"])
    assert code == 0 and "speculation (ngram" in err, "--ngram-max 1 alone: exit %d, %r" % (code, err)
    # --draft-model's errors name it and the reason, before the target model loads (fresh-user trial)
    expect(g + ["--draft-model", ""], 2, "--draft-model: the value is empty")
    expect(g + ["--draft-model", "/missing/path"], 1, "--draft-model: /missing/path: No such file")
    expect(["chat", "-m", STORIES, "--draft-model", "/missing/path"], 1, "--draft-model: /missing/path")
    # an option of another drafter is refused, naming both (it would be silently ignored)
    expect(g + ["--draft-kind", "layers", "--ngram-min", "2"], 2, "--ngram-min is for --draft-kind ngram, not layers")
    expect(g + ["--draft-model", STORIES, "--ngram-max", "3"], 2, "--ngram-max is for --draft-kind ngram, not model")
    expect(g + ["--draft-kind", "none", "--draft-layers", "2"], 2, "--draft-layers is for --draft-kind layers, not none")
    expect(g + ["--num-draft-tokens", "adaptive"], 2, "--num-draft-tokens needs a drafter")  # the default value
    expect(["chat", "-m", STORIES, "--draft-kind", "layers", "--ngram-min", "2"], 2,
           "--ngram-min is for --draft-kind ngram, not layers")
    code, out_layers, err = run(g + ["--draft-layers", "2"])  # implies --draft-kind layers
    assert code == 0 and "speculation (layers" in err, "--draft-layers alone: exit %d, %r" % (code, err)
    if not SANITIZE:
        expect(["generate", "-m", "smollm2", "-p", "x", "-n", "4", "--draft-model", STORIES], 1, "vocabulary")


n_fail = results.count(False)
print("%d passed, %d failed" % (len(results) - n_fail, n_fail))
sys.exit(1 if n_fail else 0)
