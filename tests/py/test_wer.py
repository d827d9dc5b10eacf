"""test_wer.py — word error rate of `steno transcribe` against the references, next to the oracle's.

Runs ONE steno process over every English clip of shared/audio/manifest.tsv, scores each clip
with steno_eval.wer (the documented English normalizer + word-level Levenshtein) for steno and for
the faster-whisper oracle's text (tests/fixtures/oracle/<stem>.json, re-scored here with the same
normalizer), prints both per clip, and requires:
  * aggregate WER (total errors / total reference words) of steno <= oracle's + 0.3 points;
  * jfk.wav: steno's normalized text equals the normalized reference exactly;
  * steno_eval's normalizer/WER unit cases pass (run first).
STENO_SANITIZE=1: only steno_eval.SANITIZE_CLIPS (the output says so).
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

MAX_EXCESS_POINTS = 0.3


def main():
    if se._self_test() != 0:  # the normalizer's and WER's own unit cases
        se.fail("steno_eval normalizer/WER self-test failed (cases printed above)")
    print("steno_eval normalizer/WER self-test: OK")
    rows = se.read_manifest(language="en")
    rows = se.sanitize_rows(rows)
    if not any(r["file"] == "jfk.wav" for r in rows):
        se.fail("jfk.wav is not in the manifest")
    oracles = {r["path"]: se.load_oracle(r["file"]) for r in rows}
    with tempfile.TemporaryDirectory(prefix="steno_wer_") as tmp:
        results, wall = se.transcribe([r["path"] for r in rows], tmp)
    print("steno transcribe: %d clips, %.1f s audio, wall %.1f s" % (
        len(rows), sum(r["seconds"] for r in rows), wall))
    print("%-55s %6s %9s %9s" % ("clip", "words", "steno %", "oracle %"))
    se_err = or_err = n_ref = 0
    failures = []
    for r in rows:
        s_text = results[r["path"]].get("text", "")
        o_text = oracles[r["path"]]["text"]
        e_s, n, w_s = se.wer(r["reference_text"], s_text)
        e_o, _, w_o = se.wer(r["reference_text"], o_text)
        se_err += e_s
        or_err += e_o
        n_ref += n
        print("%-55s %6d %9.2f %9.2f%s" % (r["file"], n, 100 * w_s, 100 * w_o,
                                          "" if e_s <= e_o else "  (steno worse by %d)"
                                          % (e_s - e_o)))
        if r["file"] == "jfk.wav":
            ref_n = se.normalize_en(r["reference_text"])
            hyp_n = se.normalize_en(s_text)
            if ref_n != hyp_n:
                failures.append("jfk.wav: normalized text %r != reference %r" % (
                    " ".join(hyp_n), " ".join(ref_n)))
            else:
                print("jfk.wav: normalized text equals the reference")
    agg_s = 100.0 * se_err / n_ref
    agg_o = 100.0 * or_err / n_ref
    print("aggregate WER: steno %.2f %% (%d/%d), oracle %.2f %% (%d/%d); allowed <= %.2f %%" % (
        agg_s, se_err, n_ref, agg_o, or_err, n_ref, agg_o + MAX_EXCESS_POINTS))
    if agg_s > agg_o + MAX_EXCESS_POINTS + 1e-9:
        failures.append("aggregate WER %.2f %% > oracle %.2f %% + %.1f points" % (
            agg_s, agg_o, MAX_EXCESS_POINTS))
    if failures:
        se.fail("; ".join(failures))
    print("PASS")


if __name__ == "__main__":
    main()
