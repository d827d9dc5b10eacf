"""test_options.py — the transcription options against faster-whisper with the same option.

For every fixture tests/fixtures/oracle_options/<case>.json except prompts.json (written by
tools/oracle_options.py: faster-whisper 1.2.1, CT2 float32, greedy + temperature ladder, one option
changed per case: prefix, prefix + without_timestamps, hotwords, without_timestamps,
suppress_tokens with extra ids, suppress_blank=False, clip_timestamps, initial_prompt), runs
  steno transcribe --path fast --output-format json <the run's steno_args> CLIP
(runs of a case with the same arguments share one process), and for the first run of the cases
in FAITHFUL_CASES the same with --path faithful. Per run it compares
  * the concatenated tokens of all segments (text and timestamp tokens), and
  * the segments' (seek, start, end) (times rounded to the millisecond, as in the fixture),
over the segments decoded at temperature 0 (sampling at T > 0 is random: as in
test_oracle_parity.py, only what precedes the first T > 0 segment on either side is compared).
Every run must be EQUAL; a run listed in KNOWN (with the reason, see docs/WHISPER.md) may differ
and is printed as such.

STENO_SANITIZE=1: only the jfk.wav runs, fast path (the ASan build is slow); the output says so.
"""

import glob
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

# the cases whose first run is repeated on the faithful path (the forced-prefix and prompt-layout
# cases and the clip loop; the others change only the shared logit filters)
FAITHFUL_CASES = ("prefix", "prefix_without_timestamps", "hotwords", "clip_timestamps")

# (case, clip) -> why steno's output may differ from faster-whisper's (docs/WHISPER.md)
KNOWN = {}


def greedy_part(segments):
    """(segments before the first one decoded at T > 0, whether one was)."""
    out = []
    for s in segments:
        if float(s.get("temperature", 0.0)) > 0.0:
            return out, True
        out.append(s)
    return out, False


def times(segs):
    return [(s["seek"], round(s["start"], 3), round(s["end"], 3)) for s in segs]


def compare(run, result):
    o_segs, o_fb = greedy_part(run["segments"])
    s_segs, s_fb = greedy_part(result.get("segments", []))
    ot = [t for s in o_segs for t in s["tokens"]]
    st = [t for s in s_segs for t in s["tokens"]]
    if o_fb or s_fb:
        n = min(len(ot), len(st))
        ot, st = ot[:n], st[:n]
        ns = min(len(o_segs), len(s_segs))
        o_segs, s_segs = o_segs[:ns], s_segs[:ns]
        how = "first %d tokens, %d segments (T>0 on %s)" % (n, ns, "/".join(
            x for x, y in (("oracle", o_fb), ("steno", s_fb)) if y))
    else:
        how = "all %d tokens, %d segments" % (len(ot), len(o_segs))
    if ot != st:
        k = next((i for i in range(min(len(ot), len(st))) if ot[i] != st[i]), min(len(ot), len(st)))
        return False, "%s: tokens diverge at %d (oracle %s, steno %s; lengths %d/%d)" % (
            how, k, ot[k] if k < len(ot) else "<end>", st[k] if k < len(st) else "<end>",
            len(ot), len(st))
    if times(o_segs) != times(s_segs):
        bad = [(a, b) for a, b in zip(times(o_segs), times(s_segs)) if a != b]
        return False, "%s: tokens equal, segment (seek, start, end) differ: oracle %s steno %s" % (
            how, bad[0][0] if bad else times(o_segs), bad[0][1] if bad else times(s_segs))
    return True, how + ", segment times equal"


def main():
    paths = sorted(p for p in glob.glob(se.fixtures_dir("oracle_options", "*.json"))
                   if os.path.basename(p) != "prompts.json")
    if len(paths) < 8:
        se.fail("expected at least 8 option fixtures in %s, found %d (run tools/oracle_options.py)"
                % (se.fixtures_dir("oracle_options"), len(paths)))
    audio = {r["file"]: r["path"] for r in se.read_manifest()}
    groups = {}  # (case, path, args) -> [runs]: one steno process each
    for p in paths:
        with open(p, encoding="utf-8") as f:
            fx = json.load(f)
        for i, run in enumerate(fx["runs"]):
            if se.sanitize() and run["file"] != "jfk.wav":
                continue
            groups.setdefault((fx["case"], "fast", tuple(run["steno_args"])), []).append(run)
            if i == 0 and fx["case"] in FAITHFUL_CASES and not se.sanitize():
                groups.setdefault((fx["case"], "faithful", tuple(run["steno_args"])), []).append(run)
    n_runs = sum(len(v) for v in groups.values())
    if se.sanitize():
        print("STENO_SANITIZE=1: only the jfk.wav runs, fast path (%d runs)" % n_runs)
    n_equal = n_known = 0
    failures = []
    with tempfile.TemporaryDirectory(prefix="steno_options_") as tmp:
        for gi, ((case, path, args), runs) in enumerate(sorted(groups.items())):
            clips = []
            for run in runs:
                clip = audio.get(run["file"])
                if not clip or not os.path.isfile(clip):
                    se.fail("clip missing: %s" % run["file"])
                clips.append(clip)
            out_dir = os.path.join(tmp, str(gi))
            os.makedirs(out_dir, exist_ok=True)
            cmd = [se.steno_bin(), "transcribe", "--model", se.model_dir(), "--path", path,
                   "--output-format", "json", "--output-dir", out_dir, "--verbose", "False"] + \
                list(args) + clips
            rc, out, err, dt = se.run(cmd)
            if rc != 0:
                se.fail("steno exited %d\ncommand: %s\nstderr: %s" % (rc, " ".join(cmd), err[-2000:]))
            for run, clip in zip(runs, clips):
                with open(os.path.join(out_dir, se.clip_stem(clip) + ".json"), encoding="utf-8") as f:
                    result = json.load(f)
                ok, msg = compare(run, result)
                label = "%-26s %-9s %-36s %s" % (case, path, run["file"], " ".join(args))
                if ok:
                    n_equal += 1
                    print("EQUAL  %s\n       %s" % (label, msg), flush=True)
                elif (case, run["file"]) in KNOWN:
                    n_known += 1
                    print("KNOWN  %s\n       %s\n       why: %s" % (label, msg, KNOWN[(case, run["file"])]))
                else:
                    failures.append(label)
                    print("DIFF   %s\n       %s" % (label, msg), flush=True)
                    print("       oracle: %s" % run["text"].strip()[:160])
                    print("       steno:  %s" % result.get("text", "").strip()[:160])
            print("       (%d clip(s) in %.1f s)" % (len(runs), dt), flush=True)
    print("\n%d runs: %d equal, %d known differences, %d unexplained differences" % (
        n_runs, n_equal, n_known, len(failures)))
    if failures:
        se.fail("unexplained differences from faster-whisper:\n  " + "\n  ".join(failures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
