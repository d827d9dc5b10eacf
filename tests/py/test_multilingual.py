#!/usr/bin/env python3
"""test_multilingual.py — the multilingual Whisper base (scripts/fetch_model.sh base) on the
non-English clips of shared/audio, against the faster-whisper oracle
tests/fixtures/multilingual/oracle.json (tools/oracle_multilingual.py: faster-whisper 1.2.1, same
weights, float32). English clips: test_multilingual_detect.py.

Fast path (the default):
  * transcription with `--language auto` (one process over the 9 non-English clips): the
    detected language (JSON `language`) is the manifest's on at least 8 of the 9 and the oracle's
    on all; the fraction of clips whose tokens equal the oracle's is printed and must be >= 50%;
    `--detect-language` on the same clips prints the same languages, probabilities within 0.02
    of the oracle's;
  * `--task translate` on the de/fr/es/it/pt clips: English output (Latin script with an English
    function word) and tokens equal to the oracle's on at least 80% of the clips.
Decoding is greedy at temperature 0 without the fallback ladder, like the oracle (its docstring
says why). Faithful path (`--path faithful`, float32): translation of the de clip equals the
oracle's tokens and stderr says "Detected language: German with probability <p>".
Under ASan+UBSan (STENO_SANITIZE=1) a subset runs (said on stdout).
"""

import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import multilingual_common as mc  # noqa: E402
import steno_eval as se  # noqa: E402

GREEDY = ["--temperature-increment-on-fallback", "None"]


def main():
    model = mc.base_model_dir()
    clips = mc.load_oracle()["clips"]
    rows = mc.rows_for_run([r for r in se.read_manifest() if r["language"] != "en"])
    for r in rows:
        if r["file"] not in clips:
            se.fail("%s: not in the oracle fixture (rerun tools/oracle_multilingual.py)" % r["file"])
    failures = []

    with tempfile.TemporaryDirectory() as tmp:
        # 1. transcribe with the detected language
        res, dt = se.transcribe([r["path"] for r in rows], os.path.join(tmp, "transcribe"),
                                ["--model", model] + GREEDY)
        equal = right = 0
        for r in rows:
            o = clips[r["file"]]
            lang = res[r["path"]]["language"]
            right += lang == r["language"]
            same = se.all_tokens(res[r["path"]]) == o["transcribe"]["tokens"]
            equal += same
            print("  transcribe %-32s %s: detected %s (oracle %s), tokens %s %r" % (
                r["file"], r["language"], lang, o["detected"], "==" if same else "!=",
                res[r["path"]]["text"]))
            if lang != o["detected"]:
                failures.append("%s: detected %s, oracle %s" % (r["file"], lang, o["detected"]))
        print("detection: right language on %d/%d non-English clips" % (right, len(rows)))
        print("transcribe: tokens equal to the oracle's on %d/%d non-English clips (%.0f%%), %.1f s"
              % (equal, len(rows), 100.0 * equal / max(1, len(rows)), dt))
        need = len(rows) - 1 if len(rows) >= 9 else len(rows)
        if right < need:
            failures.append("right language on %d of %d non-English clips (need %d)"
                            % (right, len(rows), need))
        if equal < 0.5 * len(rows):
            failures.append("transcribe tokens equal on %d of %d clips (need 50%%)"
                            % (equal, len(rows)))

        # 2. --detect-language prints the same, with the oracle's probabilities
        got = mc.detect(model, [r["path"] for r in rows])
        _, _, max_dp = mc.check_detection(rows, got, clips, failures)
        print("--detect-language: max |p - oracle p| = %.4f" % max_dp)
        for r in rows:
            if got[r["path"]][0][0] != res[r["path"]]["language"]:
                failures.append("%s: --detect-language says %s, transcribe %s"
                                % (r["file"], got[r["path"]][0][0], res[r["path"]]["language"]))

        # 3. translate
        tr = [r for r in rows if r["language"] in mc.TRANSLATE_LANGS]
        res, dt = se.transcribe([r["path"] for r in tr], os.path.join(tmp, "translate"),
                                ["--model", model, "--task", "translate"] + GREEDY)
        equal = 0
        for r in tr:
            o = clips[r["file"]]["translate"]
            same = se.all_tokens(res[r["path"]]) == o["tokens"]
            equal += same
            text = res[r["path"]]["text"]
            print("  translate %-32s %s %r%s" % (r["file"], "==" if same else "!=", text,
                                                "" if same else "  oracle %r" % o["text"]))
            if not mc.is_english(text):
                failures.append("%s: translation %r is not English" % (r["file"], text))
        print("translate: tokens equal to the oracle's on %d/%d clips, %.1f s" % (equal, len(tr), dt))
        if equal < 0.8 * len(tr):
            failures.append("translate tokens equal on %d of %d clips (need 80%%)" % (equal, len(tr)))

        # 4. the faithful path
        de = os.path.join(se.audio_dir(), "picovoice_leopard_test_de.wav")
        out_dir = os.path.join(tmp, "faithful")
        cmd = [se.steno_bin(), "transcribe", "--model", model, "--path", "faithful", "--task",
               "translate"] + GREEDY + ["-f", "json", "-o", out_dir, de]
        rc, out, err, dt = se.run(cmd)
        if rc != 0:
            se.fail("exit %d: %s\n%s" % (rc, " ".join(cmd), err[-3000:]))
        m = re.search(r"^Detected language: (.+) with probability ([0-9.]+)$", err, re.M)
        if not m or m.group(1) != "German":
            failures.append("faithful path: no 'Detected language: German with probability <p>' "
                            "on stderr: %r" % err[-500:])
        with open(os.path.join(out_dir, "picovoice_leopard_test_de.json"), encoding="utf-8") as f:
            r = json.load(f)
        o = clips["picovoice_leopard_test_de.wav"]["translate"]
        print("faithful translate (de): %r, oracle %r, %.1f s" % (r["text"], o["text"], dt))
        if r["language"] != "de" or se.all_tokens(r) != o["tokens"]:
            failures.append("faithful path: translation of the de clip %r differs from the "
                            "oracle's %r" % (r["text"], o["text"]))

    if failures:
        se.fail("\n  ".join(["%d failure(s):" % len(failures)] + failures))
    print("PASS")


if __name__ == "__main__":
    main()
