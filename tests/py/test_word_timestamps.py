"""test_word_timestamps.py — word-level timestamps (`steno transcribe --word-timestamps True`)
against faster-whisper word_timestamps=True, and the hallucination guard.

1. Gate (issue 4): ONE steno process (fast path, the default) over every English clip of
   shared/audio/manifest.tsv with --word-timestamps True -f json, compared per clip with
   tests/fixtures/oracle_words/<stem>.json (tools/oracle_word_timestamps.py: faster-whisper 1.2.1,
   CT2 float32, tiny.en, greedy, openai-whisper defaults). A clip is WORD-EQUAL when the words of
   all segments (strings, in order) are equal; over the word-equal clips the mean |Δstart| and
   mean |Δend| must be <= 20 ms (the max is printed), and every word probability within
   MAX_PROB_DELTA of the oracle's. At least MIN_WORD_EQUAL of the clips must be
   word-equal; a differing clip is explained by its tokens: when steno's tokens differ from the
   oracle's, the words cannot match (token parity is test_oracle_parity.py's job).
   The faithful path (--path faithful) runs FAITHFUL_CLIPS and is held to the same bounds.
2. Usage: the subtitle word options and --hallucination-silence-threshold without
   --word-timestamps True are usage errors (exit 2, one line naming the option), as in openai's CLI.
3. Hallucination guard: a WAV built here from 10 s of silence + jfk.wav + 10 s of silence,
   transcribed with --word-timestamps True --hallucination-silence-threshold 2, yields no segment
   (with text) that starts inside either silence.

STENO_SANITIZE=1: the gate runs steno_eval.SANITIZE_CLIPS (English ones) on the fast path and two
of them on the faithful path; the output says so.
"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

MAX_MEAN_DELTA = 0.020  # seconds
MAX_PROB_DELTA = 0.01   # float32 logits of two implementations
MIN_WORD_EQUAL = 0.95
FAITHFUL_CLIPS = ["jfk.wav", "ls_dev-clean_1272-141231-0000.flac", "arctic_aew_a0001.wav",
                  "ls_test-clean_1221-135766-0001.wav", "timit_LDC93S1.wav", "ljspeech_LJ001-0005.flac"]


def load_words_oracle(file_name):
    p = se.fixtures_dir("oracle_words", se.clip_stem(file_name) + ".json")
    if not os.path.isfile(p):
        se.fail("word oracle fixture missing: %s (run tools/oracle_word_timestamps.py)" % p)
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def steno_words(result):
    out = []
    for s in result["segments"]:
        if "words" not in s:
            se.fail("segment %d has no \"words\" key" % s["id"])
        for w in s["words"]:
            out.append((w["word"], w["start"], w["end"], w["probability"]))
    return out


def oracle_words(doc):
    return [tuple(w) for s in doc["segments"] for w in s["words"]]


def tokens_of(segments):
    return [t for s in segments for t in s["tokens"]]


def compare(label, rows, results):
    """Prints the per-clip table; returns (n_equal, n_clips, mean_ds, mean_de, max_ds, max_de)."""
    n_eq = 0
    ds_all, de_all = [], []
    print("\n%s" % label)
    print("%-50s %6s %6s %9s %9s %9s %9s" % ("clip", "words", "equal", "mean|ds|", "mean|de|", "max|ds|",
                                             "max|de|"))
    for row in rows:
        doc = load_words_oracle(row["file"])
        res = results[row["path"]]
        sw, ow = steno_words(res), oracle_words(doc)
        same = [w[0] for w in sw] == [w[0] for w in ow]
        for w in sw:
            if not (w[1] <= w[2]) or not (0.0 <= w[3] <= 1.0):
                se.fail("%s: bad word %r (start > end or probability outside [0, 1])" % (row["file"], w))
        if not same:
            tok_same = tokens_of([s for s in res["segments"] if s["tokens"]]) == tokens_of(doc["segments"])
            k = next((i for i, (a, b) in enumerate(zip(sw, ow)) if a[0] != b[0]), min(len(sw), len(ow)))
            print("%-50s %6d %6s  first difference at word %d: steno %r vs oracle %r; tokens %s" % (
                row["file"], len(ow), "no", k, sw[k][0] if k < len(sw) else None,
                ow[k][0] if k < len(ow) else None, "equal" if tok_same else "differ"))
            continue
        n_eq += 1
        dp = max((abs(a[3] - b[3]) for a, b in zip(sw, ow)), default=0.0)
        if dp > MAX_PROB_DELTA:
            se.fail("%s: a word probability differs from the oracle's by %.4f (> %.2f)" % (row["file"], dp,
                                                                                          MAX_PROB_DELTA))
        ds = [abs(a[1] - b[1]) for a, b in zip(sw, ow)]
        de = [abs(a[2] - b[2]) for a, b in zip(sw, ow)]
        ds_all += ds
        de_all += de
        if ds:
            print("%-50s %6d %6s %9.4f %9.4f %9.3f %9.3f" % (row["file"], len(ow), "yes", sum(ds) / len(ds),
                                                             sum(de) / len(de), max(ds), max(de)))
    n = max(len(ds_all), 1)
    stats = (n_eq, len(rows), sum(ds_all) / n, sum(de_all) / n, max(ds_all, default=0), max(de_all, default=0))
    print("%s: word-equal clips %d/%d; over %d words: mean |dstart| %.4f s, mean |dend| %.4f s, "
          "max |dstart| %.3f s, max |dend| %.3f s" % ((label, stats[0], stats[1], len(ds_all)) + stats[2:]))
    return stats


def judge(label, stats, min_equal):
    n_eq, n, mds, mde, _, _ = stats
    ok = True
    if n_eq < min_equal * n:
        print("FAIL %s: %d/%d word-equal clips (need %.0f %%)" % (label, n_eq, n, 100 * min_equal))
        ok = False
    if mds > MAX_MEAN_DELTA or mde > MAX_MEAN_DELTA:
        print("FAIL %s: mean |dstart| %.4f or mean |dend| %.4f above %.3f s" % (label, mds, mde, MAX_MEAN_DELTA))
        ok = False
    return ok


def hallucination_guard(tmp):
    clip = os.path.join(se.audio_dir(), "jfk.wav")
    speech = se.read_wav16k(clip)
    silence = [0] * (10 * 16000)
    path = os.path.join(tmp, "silence_jfk_silence.wav")
    se.write_wav16k(path, silence + speech + silence)
    speech_start, speech_end = 10.0, 10.0 + len(speech) / 16000.0
    out = os.path.join(tmp, "hal")
    os.makedirs(out)
    cmd = [se.steno_bin(), "transcribe", "--model", se.model_dir(), "-f", "json", "-o", out,
           "--word-timestamps", "True", "--hallucination-silence-threshold", "2", path]
    rc, _, err, _ = se.run(cmd)
    if rc != 0:
        se.fail("steno exited %d: %s\n%s" % (rc, " ".join(cmd), err[-2000:]))
    with open(os.path.join(out, "silence_jfk_silence.json"), encoding="utf-8") as f:
        res = json.load(f)
    print("\nhallucination guard: 10 s silence + jfk.wav (speech %.2f-%.2f s) + 10 s silence" % (speech_start,
                                                                                               speech_end))
    bad = []
    for s in res["segments"]:
        if not s["text"].strip():
            continue
        inside = s["start"] < speech_start or s["start"] >= speech_end
        print("  [%7.2f -> %7.2f]%s %s" % (s["start"], s["end"], " IN SILENCE" if inside else "", s["text"]))
        if inside:
            bad.append(s)
    if not any(s["text"].strip() for s in res["segments"]):
        print("FAIL hallucination guard: no speech transcribed at all")
        return False
    if bad:
        print("FAIL hallucination guard: %d segment(s) start inside the silences" % len(bad))
        return False
    return True


def usage_errors():
    ok = True
    clip = os.path.join(se.audio_dir(), "jfk.wav")
    for args in (["--max-line-width", "20"], ["--max-line-count", "2"], ["--max-words-per-line", "3"],
                 ["--highlight-words", "True"], ["--hallucination-silence-threshold", "2"],
                 ["--word-timestamps", "maybe"]):
        rc, _, err, _ = se.run([se.steno_bin(), "transcribe", "--model", se.model_dir(), "-o", "-"] + args + [clip])
        name = args[0] if args[0] != "--word-timestamps" else "--word-timestamps"
        good = rc == 2 and name in err and len(err.strip().splitlines()) == 1
        print("usage %-40s rc=%d %s" % (" ".join(args), rc, err.strip()))
        if not good:
            print("FAIL: expected exit 2 and one line naming %s" % name)
            ok = False
    return ok


def main():
    rows = se.read_manifest(language="en")
    if not rows:
        se.fail("no English clips in %s" % se.audio_dir())
    rows = se.sanitize_rows(rows)
    faithful_rows = [r for r in rows if r["file"] in FAITHFUL_CLIPS]
    if se.sanitize():
        faithful_rows = faithful_rows[:2]
        print("STENO_SANITIZE=1: faithful path on %s" % ", ".join(r["file"] for r in faithful_rows))
    ok = usage_errors()
    with tempfile.TemporaryDirectory() as tmp:
        fast_dir, faithful_dir = os.path.join(tmp, "fast"), os.path.join(tmp, "faithful")
        os.makedirs(fast_dir)
        os.makedirs(faithful_dir)
        results, dt = se.transcribe([r["path"] for r in rows], fast_dir, ["--word-timestamps", "True"])
        print("fast path: %d clips in %.1f s" % (len(rows), dt))
        ok &= judge("fast", compare("fast path (default)", rows, results), MIN_WORD_EQUAL)
        results, dt = se.transcribe([r["path"] for r in faithful_rows], faithful_dir,
                                    ["--word-timestamps", "True", "--path", "faithful"])
        print("faithful path: %d clips in %.1f s" % (len(faithful_rows), dt))
        ok &= judge("faithful", compare("faithful path", faithful_rows, results), MIN_WORD_EQUAL)
        ok &= hallucination_guard(tmp)
    if not ok:
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
