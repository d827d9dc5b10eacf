"""test_llm_cli.py — `steno generate` and `steno chat`: outputs, determinism, bad inputs.

Contract checked (DESIGN.md "Errors", docs/LLM.md):
  * `steno generate -m stories260K.bin -p "" -n 200 --temp 0` prints llama2.c's greedy text
    (GOLDEN.txt) on stdout, and "prompt: ... tok/s; decode: ... tok/s" on stderr;
  * sampling: the same --seed gives the same text, another seed another text; --max-kv-size with
    --keep runs a rotating cache;
  * SmolLM2 and Gemma 3 (GGUF, by their known names): greedy text equal to llama.cpp's for the
    first prompt of tests/fixtures/llm/<model>_llamacpp.json; `steno chat` answers with the
    model's chat template;
  * bad input → exit 1 and exactly ONE line "steno: <input>: <reason>" on stderr: missing model,
    bad magic, truncated GGUF, absurd tensor count, tokenizer file cut short, unknown model name;
    usage errors → exit 2; never a signal or a sanitizer report;
  * -f: a prompt file with a NUL byte → exit 1 naming the file and the byte's offset; -f - reads stdin;
    -p with -f → exit 2 naming both;
  * generate --parallel --ignore-eos: every prompt generates exactly its max_tokens (text = plain
    generate --ignore-eos's).
The GGUF models come from scripts/fetch_llm_models.sh; a missing model is a FAILURE.
Standard library only. Each case prints PASS/FAIL; the last line is "N passed, N failed".
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

STENO = se.steno_bin()
SHARED = os.environ.get("STENO_SHARED") or os.path.join(os.path.dirname(se.source_dir()), "shared")
STORIES = os.path.join(SHARED, "models", "stories260K")
TMP = tempfile.mkdtemp(prefix="steno_llm_cli_")
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")
results = []


class CaseFailure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise CaseFailure(msg)


def run(args, stdin=b"", timeout=900):
    p = subprocess.run([STENO] + list(args), input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    check(p.returncode >= 0, "killed by signal %d; stderr: %s" % (-p.returncode, err[-2000:]))
    for mark in SANITIZER_MARKS:
        check(mark not in err, "sanitizer report:\n" + err[-4000:])
    if p.returncode == 2 and "unknown command" in err:
        raise CaseFailure("`steno %s` is not wired into cli/main.c yet: %s" % (args[0], err.strip()))
    return p.returncode, out, err


def case(fn):
    name = fn.__name__
    try:
        fn()
        results.append((name, True, ""))
        print("PASS %s" % name, flush=True)
    except CaseFailure as e:
        results.append((name, False, str(e)))
        print("FAIL %s: %s" % (name, e), flush=True)
    except (OSError, ValueError, KeyError) as e:
        results.append((name, False, str(e)))
        print("FAIL %s: %s" % (name, e), flush=True)
    except subprocess.TimeoutExpired as e:
        results.append((name, False, "timeout"))
        print("FAIL %s: timeout %s" % (name, e), flush=True)
    return fn


def expect_error(args, rc, *needles):
    code, out, err = run(args)
    check(code == rc, "exit %d, want %d; stderr: %s" % (code, rc, err.strip()[-500:]))
    lines = [l for l in err.splitlines() if l.strip()]
    if rc == 1:
        check(len(lines) == 1, "want one line on stderr, got %d: %r" % (len(lines), err))
        check(lines[0].startswith("steno: "), "line does not start with 'steno: ': %r" % lines[0])
    for n in needles:
        check(n in err, "stderr lacks %r: %r" % (n, err.strip()))
    return err


def golden_text():
    with open(os.path.join(STORIES, "GOLDEN.txt"), encoding="utf-8") as f:
        g = f.read()
    return g.split("\n\n", 1)[1].rstrip("\n")


def model_file(name):
    root = os.environ.get("STENO_MODELS_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "steno", "models")
    files = {"smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf", "gemma3": "gemma-3-270m-q4_k_m.gguf"}
    p = os.path.join(root, name, files[name])
    if not os.path.isfile(p):
        raise CaseFailure("model %s absent at %s (bash scripts/fetch_llm_models.sh %s)" % (name, p, name))
    return p


@case
def stories_golden():
    code, out, err = run(["generate", "-m", os.path.join(STORIES, "stories260K.bin"), "-p", "", "-n", "200",
                          "--temp", "0", "-t", "2"])
    check(code == 0, "exit %d: %s" % (code, err))
    check(out.rstrip("\n") == golden_text(), "text differs from GOLDEN.txt:\n%s" % out)
    check("tok/s" in err and "prompt:" in err and "decode:" in err, "no speeds on stderr: %r" % err)


@case
def stories_seed():
    base = ["generate", "-m", os.path.join(STORIES, "stories260K.bin"), "-p", "Once upon a time", "-n", "40",
            "--temp", "1.0", "--top-k", "0", "--top-p", "0.95", "--min-p", "0.02", "--repeat-penalty", "1.1"]
    a = run(base + ["--seed", "7"])
    b = run(base + ["--seed", "7"])
    c = run(base + ["--seed", "8"])
    check(a[0] == 0 and b[0] == 0 and c[0] == 0, "exit codes %d %d %d: %s" % (a[0], b[0], c[0], a[2]))
    check(a[1] == b[1], "same seed, different text:\n%s\n---\n%s" % (a[1], b[1]))
    check(a[1] != c[1], "seeds 7 and 8 gave the same text")


@case
def stories_rotating_and_flags():
    code, out, err = run(["generate", "-m", os.path.join(STORIES, "stories260K.bin"), "-p", "Lily", "-n", "80",
                          "--temp", "0", "--max-kv-size", "32", "--keep", "4", "--kv-reserve", "8",
                          "--logit-bias", "2-inf", "--n-probs", "2", "-b", "7"])
    check(code == 0, "exit %d: %s" % (code, err))
    check(len(out.strip()) > 40, "short output: %r" % out)
    check("logprob" in err, "no log-probabilities on stderr")


@case
def gguf_greedy_matches_llamacpp():
    for name in ("smollm2", "gemma3"):
        path = model_file(name)
        with open(os.path.join(se.source_dir(), "tests", "fixtures", "llm", "%s_llamacpp.json" % name)) as f:
            fx = json.load(f)
        c0 = fx["cases"][0]
        n = 16 if se.sanitize() else 32
        code, out, err = run(["generate", "-m", name, "-p", c0["text"], "-n", str(n), "--temp", "0",
                              "--verbose-prompt"])
        check(code == 0, "%s: exit %d: %s" % (name, code, err))
        want = " ".join(str(t) for t in c0["prompt_tokens"])
        check(("tokens: " + want) in err, "%s: prompt tokens differ from llama.cpp: %s" % (name, err))
        ref = c0.get("generated_text")
        if ref is not None:
            # the n first tokens' text is a prefix of llama.cpp's 64-token text (up to a cut UTF-8 char)
            got = out.rstrip("\n")
            check(ref.startswith(got[:max(0, len(got) - 4)]),
                  "%s: greedy text differs from llama.cpp's:\n%r\n%r" % (name, got, ref))


@case
def chat_smollm2():
    model_file("smollm2")
    code, out, err = run(["chat", "-m", "smollm2", "--temp", "0", "-n", "12"],
                         stdin=b"What is the capital of France?\n/reset\nSay hello.\n")
    check(code == 0, "exit %d: %s" % (code, err))
    check(len(out.strip().splitlines()) == 2, "want two answers: %r" % out)
    check(err.count("decode:") == 2, "want two turns' speeds: %r" % err)
    # SmolLM2's template adds its default system prompt when the conversation has none (the GGUF
    # holds a real newline after '<|im_start|>system'): "Hello!" is 11 tokens without it, 32 with
    code, out, err = run(["chat", "-m", "smollm2", "--temp", "0", "-n", "1"], stdin=b"Hello!\n")
    m = re.search(r"prompt: (\d+) new tokens", err)
    check(code == 0 and m and int(m.group(1)) > 25, "the default system prompt is missing: %r" % err)


@case
def chat_needs_template():
    code, out, err = run(["chat", "-m", os.path.join(STORIES, "stories260K.bin"), "--temp", "0"], stdin=b"hi\n")
    check(code == 1 and "chat template" in err, "exit %d: %r" % (code, err))


@case
def context_full_is_reported():
    code, out, err = run(["generate", "-m", os.path.join(STORIES, "stories260K.bin"), "-p", "Once upon a time",
                          "--temp", "0", "-c", "20"])
    check(code == 0, "exit %d: %s" % (code, err))
    check("context is full" in err, "a run stopped by -c 20 does not say so: %r" % err)


@case
def write_error_is_a_failure():
    with open("/dev/full", "w") as full:
        p = subprocess.run([STENO, "generate", "-m", os.path.join(STORIES, "stories260K.bin"), "-p", "Lily", "-n", "40",
                            "--temp", "0"], stdout=full, stderr=subprocess.PIPE, timeout=300)
    err = p.stderr.decode("utf-8", "replace")
    check(p.returncode == 1, "generate into /dev/full: exit %d, want 1: %r" % (p.returncode, err))
    check("write error" in err, "no write error on stderr: %r" % err)


@case
def bad_inputs():
    expect_error(["generate", "-m", os.path.join(TMP, "missing.gguf"), "-p", "x"], 1, "missing.gguf")
    p = os.path.join(TMP, "badmagic.gguf")
    with open(p, "wb") as f:
        f.write(b"GGUX" + b"\0" * 100)
    expect_error(["generate", "-m", p, "-p", "x"], 1, "badmagic.gguf", "magic")
    p = os.path.join(TMP, "trunc.gguf")
    with open(p, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + struct.pack("<Q", 1000) + b"abc" * 30)
    expect_error(["generate", "-m", p, "-p", "x"], 1, "trunc.gguf", "truncated")
    p = os.path.join(TMP, "count.gguf")
    with open(p, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 1 << 40, 0) + b"\0" * 64)
    expect_error(["generate", "-m", p, "-p", "x"], 1, "count.gguf", "tensor count")
    # a llama2.c checkpoint whose tokenizer is cut short
    d = os.path.join(TMP, "l2c")
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(STORIES, "stories260K.bin"), os.path.join(d, "model.bin"))
    with open(os.path.join(STORIES, "tok512.bin"), "rb") as f:
        tok = f.read()
    with open(os.path.join(d, "tokenizer.bin"), "wb") as f:
        f.write(tok[: len(tok) // 2])
    expect_error(["generate", "-m", os.path.join(d, "model.bin"), "-p", "x"], 1, "tokenizer.bin", "truncated")
    with open(os.path.join(d, "model.bin"), "r+b") as f:
        f.truncate(1000)
    expect_error(["generate", "-m", os.path.join(d, "model.bin"), "--tokenizer", os.path.join(STORIES, "tok512.bin"),
                  "-p", "x"], 1, "model.bin")
    expect_error(["generate", "-m", "no-such-model", "-p", "x"], 1, "no-such-model")
    # usage errors
    expect_error(["generate", "-p", "x"], 2)
    expect_error(["generate", "-m", "x", "--bogus"], 2, "--bogus")
    expect_error(["generate", "-m", "x", "--temp", "abc"], 2, "--temp")
    expect_error(["generate", "-m", "x", "-n"], 2)
    expect_error(["chat"], 2)
    # -f: a prompt file with a NUL byte is refused (the prompt would silently end there); - is stdin
    stories = os.path.join(STORIES, "stories260K.bin")
    nul = os.path.join(TMP, "nul_prompt.txt")
    with open(nul, "wb") as f:
        f.write(b"Once upon\x00 a time")
    expect_error(["generate", "-m", stories, "-f", nul, "-n", "4"], 1, nul, "contains a NUL byte at offset 9")
    code, out, err = run(["generate", "-m", stories, "-f", "-", "-n", "4"], stdin=b"a\x00b")
    check(code == 1 and "standard input: contains a NUL byte at offset 1" in err, "stdin NUL: %d %r" % (code, err))
    # -p and -f together: one would silently replace the other
    expect_error(["generate", "-m", stories, "-p", "Lily", "-f", nul, "-n", "4"], 2, "-p/--prompt", "-f/--file")
    code, from_stdin, err = run(["generate", "-m", stories, "-f", "-", "-n", "12", "--temp", "0"], stdin=b"Lily")
    code2, from_p, err2 = run(["generate", "-m", stories, "-p", "Lily", "-n", "12", "--temp", "0"])
    check(code == 0 and code2 == 0 and from_stdin == from_p and from_p.strip(),
          "-f - %d %r vs -p %d %r" % (code, from_stdin, code2, from_p))
    code, out, err = run(["generate", "--help"])
    check(code == 0 and "--max-kv-size" in out and "--top-p" in out, "help: %d %r" % (code, out[:200]))



def write_jsonl(name, lines):
    path = os.path.join(TMP, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


@case
def batch_equals_solo():
    """steno generate --parallel N -f prompts.jsonl: each greedy text equals the solo CLI's."""
    stories = os.path.join(STORIES, "stories260K.bin")
    prompts = [("Once upon a time", 40), ("Lily", 25), ("The little dog was very happy because", 60),
               ("Ben and his mom went to the park. They saw a big", 30), ("Tom", 50), ("One day, a cat", 45)]
    lines = [json.dumps({"prompt": p, "max_tokens": n}) for p, n in prompts]
    lines.insert(2, "")  # blank lines are skipped
    code, out, err = run(["generate", "--parallel", "3", "-f", write_jsonl("s.jsonl", lines), "-m", stories])
    check(code == 0, "exit %d: %s" % (code, err.strip()[-500:]))
    got = [json.loads(l) for l in out.splitlines()]
    check([g["index"] for g in got] == list(range(len(prompts))), "indices %r" % [g["index"] for g in got])
    for (p, n), g in zip(prompts, got):
        c2, solo, e2 = run(["generate", "-m", stories, "-p", p, "-n", str(n), "--temp", "0"])
        check(c2 == 0, e2)
        solo = solo[:-1] if solo.endswith("\n") else solo  # the CLI ends its output with a newline
        check(g["text"] == solo, "%r: batch %r vs solo %r" % (p, g["text"], solo))
        check(g["completion_tokens"] <= n and g["finish_reason"] in ("stop", "length"), repr(g))
    check("tokens/s (--parallel 3)" in err, "no aggregate line: %r" % err)
    smol = model_file("smollm2")
    sp = [("The capital of France is", 16), ("Write a haiku about the sea.", 24), ("1, 2, 3,", 12)]
    code, out, err = run(["generate", "--parallel", "2", "-m", smol, "-f",
                          write_jsonl("m.jsonl", [json.dumps({"prompt": p, "max_tokens": n}) for p, n in sp])])
    check(code == 0, "exit %d: %s" % (code, err.strip()[-500:]))
    for (p, n), line in zip(sp, out.splitlines()):
        c2, solo, e2 = run(["generate", "-m", smol, "-p", p, "-n", str(n), "--temp", "0"])
        solo = solo[:-1] if solo.endswith("\n") else solo
        check(c2 == 0 and json.loads(line)["text"] == solo, "%r: batch %r vs solo %r" % (p, line, solo))


@case
def batch_ignore_eos():
    """--ignore-eos on generate --parallel: a prompt that ends early without it generates exactly its
    max_tokens with it, and the text equals plain generate --ignore-eos's."""
    smol = model_file("smollm2")
    jl = write_jsonl("eos.jsonl", [json.dumps({"prompt": "Write a haiku about the sea.", "max_tokens": 64}),
                                   json.dumps({"prompt": "1, 2, 3,", "max_tokens": 20})])
    code, out, err = run(["generate", "--parallel", "2", "-m", smol, "-f", jl])
    check(code == 0, "exit %d: %s" % (code, err.strip()[-500:]))
    plain = [json.loads(l) for l in out.splitlines()]
    check(plain[0]["finish_reason"] == "stop" and plain[0]["completion_tokens"] < 64,
          "the haiku no longer ends before 64 tokens (pick another prompt): %r" % plain[0])
    code, out, err = run(["generate", "--parallel", "2", "-m", smol, "-f", jl, "--ignore-eos"])
    check(code == 0, "exit %d: %s" % (code, err.strip()[-500:]))
    got = [json.loads(l) for l in out.splitlines()]
    for g, n in zip(got, (64, 20)):
        check(g["finish_reason"] == "length" and g["completion_tokens"] == n, "--ignore-eos: %r" % g)
    c2, solo, e2 = run(["generate", "-m", smol, "-p", "Write a haiku about the sea.", "-n", "64", "--temp", "0",
                        "--ignore-eos"])
    solo = solo[:-1] if solo.endswith("\n") else solo
    check(c2 == 0 and got[0]["text"] == solo, "batch %r vs solo %r" % (got[0]["text"], solo))


@case
def batch_bad_input():
    stories = os.path.join(STORIES, "stories260K.bin")
    bad = write_jsonl("bad.jsonl", ['"fine"', '{"prompt": 3}'])
    expect_error(["generate", "--parallel", "2", "-m", stories, "-f", bad], 2, "bad.jsonl line 2", "prompt")
    bad = write_jsonl("bad2.jsonl", ['{"prompt": "x", "max_tokens": -1}'])
    expect_error(["generate", "--parallel", "2", "-m", stories, "-f", bad], 2, "line 1", "\"max_tokens\": need an integer")
    expect_error(["generate", "--parallel", "2", "-m", stories, "-f", write_jsonl("ok2.jsonl", ['"x"']), "--bogus"], 2,
                 "unknown option '--bogus'")
    bad = write_jsonl("bad3.jsonl", ["{not json"])
    expect_error(["generate", "--parallel", "2", "-m", stories, "-f", bad], 2, "line 1", "not one JSON value")
    bad = write_jsonl("bad4.jsonl", ['"a" "b"'])
    expect_error(["generate", "--parallel", "2", "-m", stories, "-f", bad], 2, "line 1", "not one JSON value")
    nul = os.path.join(TMP, "nul.jsonl")
    with open(nul, "wb") as f:
        f.write(b'"a"\x00junk\n"b"\n')
    expect_error(["generate", "--parallel", "2", "-m", stories, "-f", nul], 2, "line 1", "NUL")
    expect_error(["generate", "--parallel", "2", "-m", stories, "-f", TMP], 1, TMP)
    expect_error(["generate", "--parallel", "2", "-m", stories, "-f", os.path.join(TMP, "absent.jsonl")], 1,
                 "absent.jsonl")
    expect_error(["generate", "--parallel", "0", "-m", stories, "-f", bad], 2, "--parallel")
    expect_error(["generate", "--parallel", "2", "-m", stories], 2, "-f")
    expect_error(["generate", "--parallel", "2", "-m", "no-such-model", "-f", write_jsonl("ok.jsonl", ['"x"'])], 1,
                 "no-such-model")

shutil.rmtree(TMP, ignore_errors=True)
n_pass = sum(1 for r in results if r[1])
n_fail = len(results) - n_pass
print("%d passed, %d failed" % (n_pass, n_fail))
sys.exit(1 if n_fail else 0)
