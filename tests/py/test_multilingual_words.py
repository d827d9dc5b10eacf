#!/usr/bin/env python3
"""test_multilingual_words.py — word timestamps of languages written without spaces (#15 item 4).

openai-whisper's and faster-whisper's tokenizers split the words of zh, ja, th, lo, my and yue
per token at Unicode boundaries (split_tokens_on_unicode) instead of at spaces, so that a Chinese
sentence is not one "word". `steno transcribe --model base --language L --word-timestamps True`
on the zh and ja dev clips must give faster-whisper's word list exactly
(tests/fixtures/oracle_words_multilingual/, tools/oracle_word_timestamps.py --multilingual:
faster-whisper 1.2.1, base, float32), with start/end times within MAX_DELTA of it (max printed).
Under ASan+UBSan: the zh clip only.
"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import multilingual_common as mc  # noqa: E402
import steno_eval as se  # noqa: E402

CLIPS = ["zh_mid.wav", "picovoice_leopard_test_ja.wav"]
MAX_DELTA = 0.02  # seconds, per word


def main():
    model = mc.base_model_dir()
    rows = [r for r in se.read_manifest() if r["file"] in CLIPS]
    if se.sanitize():
        rows = [r for r in rows if r["file"] == "zh_mid.wav"]
        print("STENO_SANITIZE=1: %s only" % rows[0]["file"])
    if len(rows) != (1 if se.sanitize() else len(CLIPS)):
        se.fail("the manifest lacks some of %s" % CLIPS)
    failures = []
    with tempfile.TemporaryDirectory(prefix="steno_mlw_") as tmp:
        for r in rows:
            with open(os.path.join(se.source_dir(), "tests", "fixtures", "oracle_words_multilingual",
                                   se.clip_stem(r["file"]) + ".json"), encoding="utf-8") as f:
                oracle = [w for s in json.load(f)["segments"] for w in s["words"]]
            cmd = [se.steno_bin(), "transcribe", "--model", model, "--language", r["language"], "--word-timestamps",
                   "True", "-f", "json", "-o", tmp, "--verbose", "False", r["path"]]
            rc, out, err, dt = se.run(cmd)
            if rc != 0:
                se.fail("exit %d: %s\n%s" % (rc, " ".join(cmd), err[-2000:]))
            with open(os.path.join(tmp, se.clip_stem(r["file"]) + ".json"), encoding="utf-8") as f:
                got = [w for s in json.load(f)["segments"] for w in s.get("words", [])]
            words, owords = [w["word"] for w in got], [w[0] for w in oracle]
            if words != owords:
                failures.append("%s: words %s, faster-whisper %s" % (r["file"], words, owords))
                continue
            dmax = max([abs(w["start"] - o[1]) for w, o in zip(got, oracle)] +
                       [abs(w["end"] - o[2]) for w, o in zip(got, oracle)] + [0.0])
            print("%-35s %s: %d words equal to faster-whisper's (%s), max |Δt| %.3f s, %.1f s" % (
                r["file"], r["language"], len(words), "".join(words)[:40], dmax, dt))
            if dmax > MAX_DELTA:
                failures.append("%s: a word time differs by %.3f s (allowed %.3f)" % (r["file"], dmax, MAX_DELTA))
    if failures:
        se.fail("\n  ".join(["%d failure(s):" % len(failures)] + failures))
    print("PASS")


if __name__ == "__main__":
    main()
