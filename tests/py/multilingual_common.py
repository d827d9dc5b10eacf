"""multilingual_common.py — helpers of test_multilingual.py and test_multilingual_detect.py:
the multilingual model's folder, the oracle fixture, and one `steno transcribe --detect-language`
run parsed."""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

TRANSLATE_LANGS = ("de", "fr", "es", "it", "pt")
# ASan subset (each clip is a base-sized encoder pass, several times slower under ASan): English
# at 16 and 48 kHz, German (also translated, and on the faithful path) and Chinese
SANITIZE_CLIPS = ["jfk.wav", "alsa_Front_Center.wav", "picovoice_leopard_test_de.wav", "zh_mid.wav"]
ENGLISH_WORDS = {"the", "a", "an", "of", "is", "was", "in", "to", "and", "it", "he", "she",
                 "they", "this", "that", "i", "you", "we", "be", "on", "as", "for", "his", "her",
                 "not", "can", "old", "no", "also", "some", "its", "with", "are", "were"}


def base_model_dir():
    d = os.environ.get("STENO_BASE_MODEL_DIR")
    if not d:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(os.environ.get("STENO_MODELS_DIR") or os.path.join(cache, "steno", "models"),
                         "base")
    if not os.path.isfile(os.path.join(d, "model.bin")):
        se.fail("no multilingual model in %s: run scripts/fetch_model.sh base (or set "
                "STENO_BASE_MODEL_DIR)" % d)
    return d


def detect(model, paths, extra=()):
    """{path: [(code, probability), ...]} from one `steno transcribe --detect-language` run."""
    cmd = [se.steno_bin(), "transcribe", "--model", model, "--detect-language"] + list(extra) + paths
    rc, out, err, dt = se.run(cmd)
    if rc != 0:
        se.fail("exit %d: %s\n%s" % (rc, " ".join(cmd), err[-3000:]))
    got = {}
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) != 4:
            se.fail("--detect-language line %r is not 'file<TAB>code<TAB>name<TAB>probability'" % line)
        got.setdefault(f[0], []).append((f[1], float(f[3])))
    for p in paths:
        if p not in got or not 1 <= len(got[p]) <= 5:
            se.fail("--detect-language printed %d lines for %s" % (len(got.get(p, [])), p))
        probs = [pr for _, pr in got[p]]
        if probs != sorted(probs, reverse=True):
            se.fail("%s: probabilities not sorted: %r" % (p, got[p]))
    print("detect: %d clips in %.1f s (%s)" % (len(paths), dt, " ".join(extra) or "fast path"))
    return got


def is_english(text):
    """Latin-script text (>= 90% of its letters ASCII: base's translations keep a stray
    character now and then) with at least one English function word."""
    letters = [c for c in text if c.isalpha()]
    words = re.findall(r"[a-z']+", text.lower())
    return bool(letters) and sum(c.isascii() for c in letters) >= 0.9 * len(letters) and \
        any(w in ENGLISH_WORDS for w in words)


def load_oracle():
    """tests/fixtures/multilingual/oracle.json (tools/oracle_multilingual.py)."""
    with open(se.fixtures_dir("multilingual", "oracle.json"), encoding="utf-8") as f:
        return json.load(f)


def rows_for_run(rows):
    """rows, or under ASan+UBSan only those in SANITIZE_CLIPS (said on stdout)."""
    if se.sanitize():
        rows = [r for r in rows if r["file"] in SANITIZE_CLIPS]
        print("STENO_SANITIZE=1: %d clips (%s)" % (len(rows), ", ".join(r["file"] for r in rows)))
    return rows


def check_detection(rows, got, clips, failures):
    """Compares the top language of each row with the manifest and the oracle; appends failure
    messages; returns (right, total, max |p - oracle p|)."""
    right = 0
    max_dp = 0.0
    for r in rows:
        code, p = got[r["path"]][0]
        o = clips[r["file"]]
        ok = code == r["language"]
        right += ok
        dp = abs(p - o["probability"])
        max_dp = max(max_dp, dp)
        print("  %-52s %s: steno %s %.4f  oracle %s %.4f%s" % (
            r["file"], r["language"], code, p, o["detected"], o["probability"],
            "" if ok else "  WRONG LANGUAGE"))
        if code != o["detected"]:
            failures.append("%s: detected %s, oracle %s" % (r["file"], code, o["detected"]))
        elif dp > 0.02:
            failures.append("%s: probability %.4f, oracle %.4f" % (r["file"], p, o["probability"]))
    return right, len(rows), max_dp
