#!/usr/bin/env python3
"""test_multilingual_detect.py — language detection of the multilingual Whisper base
(scripts/fetch_model.sh base) on every English clip of shared/audio, against the faster-whisper
oracle tests/fixtures/multilingual/oracle.json (tools/oracle_multilingual.py).

`steno transcribe --model base --detect-language` (fast path, one process over all English
clips) must print English as the most probable language of every clip, the oracle's language,
with a probability within 0.02 of the oracle's (max |Δp| printed), and its TSV lines sorted.
The non-English clips are detected in test_multilingual.py (which transcribes them anyway).
Under ASan+UBSan (STENO_SANITIZE=1) a subset runs (said on stdout); CI size: every other English
clip (steno_eval.ci_half; STENO_TEST_FULL=1 runs all).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import multilingual_common as mc  # noqa: E402
import steno_eval as se  # noqa: E402


def main():
    model = mc.base_model_dir()
    clips = mc.load_oracle()["clips"]
    rows = se.ci_half(mc.rows_for_run(se.read_manifest(language="en")), "detection")
    for r in rows:
        if r["file"] not in clips:
            se.fail("%s: not in the oracle fixture (rerun tools/oracle_multilingual.py)" % r["file"])
    failures = []
    got = mc.detect(model, [r["path"] for r in rows])
    right, n, max_dp = mc.check_detection(rows, got, clips, failures)
    print("English detected on %d/%d English clips; max |p - oracle p| = %.4f" % (right, n, max_dp))
    if right != n:
        failures.append("English detected on %d of %d English clips (need all)" % (right, n))
    if failures:
        se.fail("\n  ".join(["%d failure(s):" % len(failures)] + failures))
    print("PASS")


if __name__ == "__main__":
    main()
