#!/usr/bin/env python3
"""The verbs' help and option parser come from one table (cli/options.c): for every verb, each
option its --help lists is accepted with a valid value (read from the help: its choices, True|False,
its range, else a sample of its kind), and an invalid or out-of-range value gives exit 2 and one
line on stderr naming the option; a flag refuses "=VALUE"; each "not supported:" flag is refused.
Every verb prints the version for -V and --version and lists them; a verb with --model has -m too.
serve refuses options that cannot apply (drafting options without --draft-kind ngram, --whisper-batch
on with --parallel 1, --path faithful or no Whisper model) with one line naming both options.

The parser reads argv in order and stops at --help, so `steno VERB --opt VALUE --help` exits 0 when
the value parses and 2 when it does not, without loading a model or reading input.

Standard library only. Environment: STENO_BIN (steno_eval.py).
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

STENO = se.steno_bin()
VERBS = [["transcribe"], ["whisper-cli"], ["generate"], ["generate", "--parallel", "1"], ["chat"],
         ["perplexity"], ["serve"], ["convert"], ["dump-l1"], ["vad"], ["stream"], ["pull"], ["models"]]

# values of metavars the help leaves free-form: a sample that parses, and one that does not (None:
# any string is accepted)
STRINGS = {"TEXT", "DIR", "NAME", "FILE", "PATH", "LANG", "FNAME", "PROMPT", "KEY", "ADDR", "MODEL",
           "NAME|DIR", "NAME|FILE", "NAME|DIR|FILE", "CHARS", "KINDS", "IDS", "REV"}
SAMPLES = {"LIST": ("0", "x"), "BYTES": ("1M", "x"), "ID(+|-)B": ("1+1", "x")}
NUM = r"(-?\d[\d.e+]*)"

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg)


def run(args):
    p = subprocess.run([STENO] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def options_of(help_text):
    """[(spellings, metavar, text)] of the help's option lines (a line starting with 2 or 6
    spaces and a dash; continuation lines are indented further)."""
    rows = []
    for line in help_text.splitlines():
        m = re.match(r"^ {2}(?: {4})?(?: {11})?(-\S.*)$", line)
        if m and not re.match(r"^ {7,}", line.replace("             --", "  --", 1)):
            body = m.group(1)
            wcpp = re.match(r"^(.*?)\s*\[(.*?)\] ?(.*)$", body)
            if wcpp:
                names, text = wcpp.group(1), wcpp.group(3)
            else:
                parts = re.split(r" {2,}", body, maxsplit=1)
                names, text = parts[0], parts[1] if len(parts) > 1 else ""
            spellings = [t.rstrip(",") for t in names.split() if t.startswith("-")]
            metas = [t.rstrip(",") for t in names.split() if not t.startswith("-")]
            rows.append([spellings, metas[0] if metas else None, text])
        elif rows and line.startswith(" " * 20) and line.strip():
            rows[-1][2] += " " + line.strip()
        elif not line.strip():
            pass
    return rows


def values_for(meta, text):
    """(valid, invalid) values for a metavar and its help text; invalid None if any string goes."""
    if meta is None:
        return None, None
    if meta == "True|False":
        return "True", "maybe"
    pieces = meta.split("|")
    if all(re.match(r"^[a-z0-9][a-z0-9._-]*$", x) for x in pieces) and (len(pieces) > 1 or meta.islower()):
        return pieces[0], "no-such-choice"
    if meta in SAMPLES:
        return SAMPLES[meta]
    m = re.search(r"\(%s\.\.%s( or None)?[;)]" % (NUM, NUM), text)
    if m:
        lo, hi = float(m.group(1)), float(m.group(2))
        return fmt(lo), fmt(hi + 1)
    m = re.search(r"\((>=|>|<=) %s( or None)?[;)]" % NUM, text)
    if m:
        op, x = m.group(1), float(m.group(2))
        return {">=": (fmt(x), fmt(x - 1)), ">": (fmt(x + 1), fmt(x)), "<=": (fmt(x), fmt(x + 1))}[op]
    if meta in STRINGS:
        return "x", None
    if len(pieces) > 1 and re.match(r"^[A-Z]+$", pieces[0]):   # "N|adaptive"
        return pieces[1], "no-such-value"
    return "1", "abc"


def fmt(x):
    return str(int(x)) if x == int(x) else repr(x)


def one_error_line(rc, err, name, ctx):
    lines = [l for l in err.splitlines() if l.strip()]
    check(rc == 2, "%s: exit %d, expected 2" % (ctx, rc))
    check(len(lines) == 1, "%s: %d lines on stderr, expected 1: %r" % (ctx, len(lines), err))
    check(name in err, "%s: the error does not name %s: %r" % (ctx, name, err))


def test_verb(verb):
    rc, help_text, err = run(verb + ["--help"])
    check(rc == 0 and help_text.strip(), "%s --help: exit %d" % (" ".join(verb), rc))
    rows = options_of(help_text)
    check(len(rows) >= 2, "%s --help: only %d option lines found" % (" ".join(verb), len(rows)))
    seen = set()
    n_checked = 0
    for spellings, meta, text in rows:
        for s in spellings:
            check(s not in seen, "%s: %s is listed twice" % (" ".join(verb), s))
            seen.add(s)
        if any(s in ("-h", "--help", "-V", "--version") for s in spellings):
            continue
        valid, invalid = values_for(meta, text)
        for s in spellings:
            ctx = "%s %s %s" % (" ".join(verb), s, meta or "")
            args = [s] if valid is None else [s, valid]
            rc, out, err = run(verb + args + ["--help"])
            check(rc == 0, "%s: %s is refused (exit %d): %r" % (ctx, " ".join(args), rc, err.strip()))
            if re.search(r" or None[;)]", text):
                rc, out, err = run(verb + [s, "None", "--help"])
                check(rc == 0, "%s: None is refused though the help allows it: %r" % (ctx, err.strip()))
            if invalid is not None:
                rc, out, err = run(verb + [s, invalid, "--help"])
                one_error_line(rc, err, s, "%s %s" % (ctx, invalid))
            if valid is None and s.startswith("--"):
                rc, out, err = run(verb + [s + "=x", "--help"])
                one_error_line(rc, err, s, "%s=x" % s)
            if meta is not None and valid is not None:
                rc, out, err = run(verb + [s])
                one_error_line(rc, err, s, "%s without a value" % ctx)
            n_checked += 1
    unsupported = re.search(r"^not supported:(.*(?:\n\S.*)*)", help_text, re.M)
    for s in unsupported.group(1).split() if unsupported else []:
        rc, out, err = run(verb + [s])
        one_error_line(rc, err, "not supported: " + s, " ".join(verb + [s]))
    rc, out, err = run(verb + ["--no-such-option-here", "--help"])
    one_error_line(rc, err, "--no-such-option-here", " ".join(verb) + " --no-such-option-here")
    print("%-22s %d options, %d spellings checked, %d unsupported" %
          (" ".join(verb), len(rows), n_checked, len(unsupported.group(1).split()) if unsupported else 0))


# verbs that take no model option (serve names its two: --whisper-model, --llm-model)
NO_MODEL = (["serve"], ["pull"], ["models"])


def version_and_model_alias(verb):
    """-V and --version print the version on every verb (exit 0); -m is --model where the verb has one."""
    rc, help_text, _ = run(verb + ["--help"])
    for spelling in ("-V", "--version"):
        rc, out, err = run(verb + [spelling])
        check(rc == 0 and re.fullmatch(r"steno \d+\.\d+\.\d+\n", out) is not None,
              "%s %s: exit %d, %r %r" % (" ".join(verb), spelling, rc, out, err))
    check(re.search(r"^ +-V,? +--version\b", help_text, re.M) is not None,
          "%s --help does not list -V, --version" % " ".join(verb))
    if verb not in NO_MODEL:
        check(re.search(r"^ +-m(,| \S+,) +--model\b", help_text, re.M) is not None,
              "%s --help does not list -m, --model" % " ".join(verb))


def refused(args, *names):
    """A usage error found after parsing (options that cannot apply): exit 2, one line naming each."""
    p = subprocess.run([STENO] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    err = p.stderr.decode("utf-8", "replace")
    lines = [l for l in err.splitlines() if l.strip()]
    ctx = " ".join(args)
    check(p.returncode == 2, "%s: exit %d, expected 2: %r" % (ctx, p.returncode, err))
    check(len(lines) == 1, "%s: %d lines on stderr, expected 1: %r" % (ctx, len(lines), err))
    for name in names:
        check(name in err, "%s: the error does not name %s: %r" % (ctx, name, err))


def serve_options_that_cannot_apply():
    """serve refuses drafting options without --draft-kind ngram, and --whisper-batch on where nothing is
    batched (before any model is loaded or port bound)."""
    s = ["serve", "--port", "0"]
    refused(s + ["--num-draft-tokens", "4"], "--num-draft-tokens", "--draft-kind")
    refused(s + ["--draft-kind", "none", "--ngram-min", "2"], "--ngram-min", "--draft-kind")
    refused(s + ["--ngram-max", "3"], "--ngram-max", "--draft-kind")
    refused(s + ["--whisper-batch", "on"], "--whisper-batch", "--parallel")
    refused(s + ["--whisper-batch", "on", "--parallel", "1"], "--whisper-batch", "--parallel")
    refused(s + ["--parallel", "2", "--path", "faithful", "--whisper-batch", "on"], "--whisper-batch", "--path fast")
    refused(s + ["--parallel", "2", "--llm-model", "smollm2", "--whisper-batch", "on"], "--whisper-batch", "Whisper")
    print("serve: options that cannot apply are refused")


def main():
    for verb in VERBS:
        test_verb(verb)
        version_and_model_alias(verb)
    serve_options_that_cannot_apply()
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
