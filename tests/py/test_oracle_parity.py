"""test_oracle_parity.py — token parity of `steno transcribe` with the faster-whisper oracle.

Runs ONE steno process over every English clip of shared/audio/manifest.tsv
(steno transcribe --model DIR --output-format json --output-dir TMP FILE...) and compares, per
clip, the concatenated tokens of all segments (text and timestamp tokens) with
tests/fixtures/oracle/<stem>.json (tools/oracle_faster_whisper.py: faster-whisper 1.2.1, CT2 float32,
greedy, temperature fallback ladder, openai-whisper transcribe() defaults).

A clip is EQUAL when all tokens match. Sampling at temperature > 0 is random, so where either
side has a segment decoded at T > 0, only the tokens before the first such segment (on each side)
are compared, up to the shorter of the two. At least MIN_EQUAL (95 %) of the clips must be equal.

For each differing clip the test prints the clip, the token index where the two diverge, the
window (seek) and the step inside that window, both tokens, and steno's own logits at that step
(from `steno dump-l1`): the top-2 gap and logit(oracle token) - logit(steno token). A tiny gap
means a near-tie that fp32 summation order can flip; a large one means a real bug.
The dump-l1 tokens are:
  * first window (seek 0):  [<|startoftranscript|>=50257] + the common prefix of that window;
  * later windows:          [<|startofprev|>=50360] + the last 223 tokens of all earlier
                            segments' tokens (openai-whisper's prompt: all_tokens[-(448//2-1):],
                            condition_on_previous_text, no reset before the first T > 0.5
                            window) + [50257] + the common prefix of that window.
dump-l1 always encodes the FIRST 30-s window of the file it is given. For a later window the
gap is only meaningful if dump-l1 can start at that window: the test passes `--seek FRAMES` when
`steno dump-l1 --help` mentions it, and otherwise prints "gap n/a" for that clip.
The diagnostics never change the verdict.

STENO_SANITIZE=1: only steno_eval.SANITIZE_CLIPS are run (the ASan build is slow); the output says so.
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

MIN_EQUAL = 0.95


def greedy_prefix(result):
    """(tokens before the first segment with temperature > 0, whether such a segment exists)."""
    toks = []
    for s in result.get("segments", []):
        if float(s.get("temperature", 0.0)) > 0.0:
            return toks, True
        toks.extend(s.get("tokens", []))
    return toks, False


def locate(oracle, k):
    """Token index k of the oracle's concatenated tokens -> (seek, start index in the
    concatenation of the first segment of that window, index of that segment)."""
    pos = 0
    window_start = 0
    window_seek = None
    window_seg = 0
    for si, s in enumerate(oracle["segments"]):
        if s["seek"] != window_seek:
            window_seek = s["seek"]
            window_start = pos
            window_seg = si
        n = len(s["tokens"])
        if k < pos + n:
            return window_seek, window_start, window_seg
        pos += n
    return window_seek, window_start, window_seg


def dump_l1_has_seek():
    rc, out, err, _ = se.run([se.steno_bin(), "dump-l1", "--help"], timeout=60)
    return "--seek" in (out + err)


def diagnose(path, oracle, k, steno_tokens, oracle_tokens, tmp, has_seek):
    seek, wstart, wseg = locate(oracle, k)
    prefix = oracle_tokens[wstart:k]
    if seek == 0:
        toks = [se.SOT] + prefix
        extra = []
    else:
        prev = [t for s in oracle["segments"][:wseg] for t in s["tokens"]]
        toks = [se.SOT_PREV] + prev[-(se.N_TEXT_CTX // 2 - 1):] + [se.SOT] + prefix
        if not has_seek:
            return "window seek=%d step=%d: gap n/a (dump-l1 has no --seek)" % (seek, k - wstart)
        extra = ["--seek", str(seek)]
    enc = os.path.join(tmp, "diag_enc.f32")
    lg = os.path.join(tmp, "diag_logits.f32")
    cmd = [se.steno_bin(), "dump-l1", "--model", se.model_dir(), "--audio", path, "--tokens",
           ",".join(map(str, toks)), "--encoder-out", enc, "--logits-out", lg] + extra
    rc, out, err, _ = se.run(cmd)
    if rc != 0:
        return "window seek=%d step=%d: dump-l1 failed (rc %d): %s" % (
            seek, k - wstart, rc, err.strip()[-300:])
    lgv = se.read_f32(lg)
    V = se.N_VOCAB
    if len(lgv) != len(toks) * V:
        return "window seek=%d: dump-l1 wrote %d floats, expected %d" % (
            seek, len(lgv), len(toks) * V)
    row = lgv[(len(toks) - 1) * V:len(toks) * V]
    order = sorted(range(V), key=lambda t: -row[t])[:2]
    ot = oracle_tokens[k] if k < len(oracle_tokens) else se.EOT
    st = steno_tokens[k] if k < len(steno_tokens) else se.EOT
    return ("window seek=%d step=%d: steno top-2 = %d (%.4f), %d (%.4f), gap %.4f; "
            "logit[oracle %d] - logit[steno %d] = %.4f" % (
                seek, k - wstart, order[0], row[order[0]], order[1], row[order[1]],
                row[order[0]] - row[order[1]], ot, st, row[ot] - row[st]))


def main():
    rows = se.read_manifest(language="en")
    rows = se.sanitize_rows(rows)
    oracles = {r["path"]: se.load_oracle(r["file"]) for r in rows}
    with tempfile.TemporaryDirectory(prefix="steno_parity_") as tmp:
        results, wall = se.transcribe([r["path"] for r in rows], tmp)
        print("steno transcribe: %d clips, %.1f s audio, wall %.1f s" % (
            len(rows), sum(r["seconds"] for r in rows), wall))
        has_seek = None
        n_equal = 0
        diffs = []
        for r in rows:
            o = oracles[r["path"]]
            ot, o_fb = greedy_prefix(o)
            st, s_fb = greedy_prefix(results[r["path"]])
            if o_fb or s_fb:
                n = min(len(ot), len(st))
                a, b = ot[:n], st[:n]
                how = "first %d tokens (T>0 on %s)" % (n, "/".join(
                    x for x, y in (("oracle", o_fb), ("steno", s_fb)) if y))
            else:
                a, b = ot, st
                how = "all %d tokens" % len(ot)
            if a == b:
                n_equal += 1
                print("EQUAL  %-55s %s" % (r["file"], how))
                continue
            k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            print("DIFF   %-55s %s; diverge at token %d: oracle %s steno %s (lengths %d/%d)" % (
                r["file"], how, k, a[k] if k < len(a) else "<end>",
                b[k] if k < len(b) else "<end>", len(a), len(b)))
            print("       oracle: %s" % o["text"].strip()[:200])
            print("       steno:  %s" % results[r["path"]].get("text", "").strip()[:200])
            diffs.append((r, o, k, b, a))
        for r, o, k, b, a in diffs:
            if has_seek is None:
                has_seek = dump_l1_has_seek()
            try:
                msg = diagnose(r["path"], o, k, b, a, tmp, has_seek)
            except SystemExit:
                msg = "diagnostic failed (see above)"
            print("GAP    %-55s %s" % (r["file"], msg))
    frac = n_equal / len(rows) if rows else 0.0
    print("token parity: %d/%d clips equal (%.1f %%, need >= %.0f %%)" % (
        n_equal, len(rows), 100 * frac, 100 * MIN_EQUAL))
    if frac < MIN_EQUAL:
        se.fail("only %d/%d clips token-equal to the oracle" % (n_equal, len(rows)))
    print("PASS")


if __name__ == "__main__":
    main()
