#!/usr/bin/env python3
"""test_quant_weights.py — quantized Whisper weights on the fast path (steno transcribe --weights
q8_0|q4_0|mlx-q4g64 ..., Lab paths; docs/WHISPER.md), tiny.en on three short English clips:

  * q8_0: each clip's transcript within 10 % word error of the f16 transcript, and the WER
    against the references at most 2 points above f16's (docs/PERFORMANCE.md measures +0.0 on
    the 32 dev clips; the judged bound there is 0.3 points);
  * q4_0 and mlx-q4g32: WER against the references at most 15 points above f16's (4-bit costs
    more on tiny.en; mlx-q4g64 costs most and is measured, not gated here: docs/PERFORMANCE.md);
  * q4_0 with 1 and 3 threads: identical tokens (every output element has one reduction order);
    f16 runs with the default arguments, so the cache of identical runs (STENO_TEST_CACHE) shares it;
  * --weights q8_0 --path faithful: one-line usage error, exit 2; --weights q9_0: exit 2.
Under ASan+UBSan (STENO_SANITIZE=1): jfk.wav only, q8_0 with 1 and 2 threads, mlx-q4g32, and
the two errors (said on stdout). The kernels themselves: tests/unit/test_wq.c.
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

CLIPS = ["jfk.wav", "ls_test-clean_1221-135766-0002.wav", "ls_test-clean_1089-134686-0001.wav"]


def wer_of(rows, res):
    errs = words = 0
    for r in rows:
        ref = se.normalize_en(r["reference_text"])
        errs += se.word_errors(ref, se.normalize_en(res[r["path"]]["text"]))
        words += len(ref)
    return 100.0 * errs / words


def main():
    by_file = {r["file"]: r for r in se.read_manifest("en")}
    for c in CLIPS:
        if c not in by_file:
            se.fail("%s is not in shared/audio/manifest.tsv" % c)
    rows = [by_file[c] for c in CLIPS]
    if se.sanitize():
        rows = rows[:1]
        print("STENO_SANITIZE=1: %s only; q8_0 (1 and 2 threads), mlx-q4g32" % rows[0]["file"])
    paths = [r["path"] for r in rows]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        def run(tag, args):
            res, dt = se.transcribe(paths, os.path.join(tmp, tag), args)
            print("%-14s %5.1f s  WER %.2f %%" % (tag, dt, wer_of(rows, res)))
            return res

        # f16 is the default: the same arguments as other tests' runs, so STENO_TEST_CACHE reuses them
        base = None if se.sanitize() else run("f16", [])
        if se.sanitize():
            q1 = run("q8_0-t1", ["--weights", "q8_0", "-t", "1"])
            q2 = run("q8_0-t2", ["--weights", "q8_0", "-t", "2"])
            if se.all_tokens(q1[paths[0]]) != se.all_tokens(q2[paths[0]]):
                failures.append("q8_0: tokens differ between 1 and 2 threads")
            m = run("mlx-q4g32", ["--weights", "mlx-q4g32"])
            if not se.normalize_en(m[paths[0]]["text"]):
                failures.append("mlx-q4g32: empty transcript")
        else:
            f16_wer = wer_of(rows, base)
            q8 = run("q8_0", ["--weights", "q8_0"])
            for p in paths:
                a, b = se.normalize_en(base[p]["text"]), se.normalize_en(q8[p]["text"])
                d = 100.0 * se.word_errors(a, b) / max(1, len(a))
                print("  q8_0 vs f16 on %s: %.1f %% word difference" % (os.path.basename(p), d))
                if d > 10.0:
                    failures.append("q8_0: %s differs from f16 by %.1f %% of words (> 10)" % (p, d))
            if wer_of(rows, q8) > f16_wer + 2.0:
                failures.append("q8_0 WER %.2f > f16's %.2f + 2" % (wer_of(rows, q8), f16_wer))
            by_type = {}
            for t in ("q4_0", "mlx-q4g32"):
                r = by_type[t] = run(t, ["--weights", t, "-t", "3"])
                if wer_of(rows, r) > f16_wer + 15.0:
                    failures.append("%s WER %.2f > f16's %.2f + 15" % (t, wer_of(rows, r), f16_wer))
            t1 = run("q4_0-t1", ["--weights", "q4_0", "-t", "1"])
            for p in paths:
                if se.all_tokens(t1[p]) != se.all_tokens(by_type["q4_0"][p]):
                    failures.append("q4_0: %s: tokens differ between 1 and 3 threads" % p)

        # errors
        rc, out, err, _ = se.run([se.steno_bin(), "transcribe", "--model", se.model_dir(), "--weights", "q8_0",
                                  "--path", "faithful", "-o", tmp, paths[0]])
        lines = [x for x in err.splitlines() if x.strip()]
        if rc != 2 or len(lines) != 1 or "fast path" not in lines[0]:  # a usage error
            failures.append("--weights q8_0 --path faithful: rc %d (want 2), stderr %r" % (rc, err[-500:]))
        rc, out, err, _ = se.run([se.steno_bin(), "transcribe", "--weights", "q9_0", paths[0]])
        if rc != 2 or "q9_0" not in err:
            failures.append("--weights q9_0: rc %d (want 2), stderr %r" % (rc, err[-500:]))
    if failures:
        se.fail("\n".join(failures))
    print("OK")


if __name__ == "__main__":
    main()
