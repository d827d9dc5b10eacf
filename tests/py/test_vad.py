"""test_vad.py — Silero VAD v6 in C against faster-whisper 1.2.1 (docs/VAD.md).

For every clip of audio/manifest.tsv and the synthetic clips of vad_common.build_synthetic
(speech / 3 s of zeros / speech, a 440 Hz tone, low noise, a clip of exactly two frames):
  - `steno vad --probs`: every per-frame speech probability within PROB_TOL of the oracle's
    (onnxruntime on the same silero_vad_v6.onnx; fixture rounded to 6 decimals);
  - `steno vad` with each option set of vad_common.OPTION_SETS: spans equal to the oracle's
    get_speech_timestamps, sample for sample;
  - the probabilities are byte-identical with --threads 1 and --threads 2;
and hostile inputs (an empty file, a text file, a missing file, missing, non-safetensors and
truncated weights) fail with one line naming the input, exit 1; usage errors exit 2.
Fixtures: tests/fixtures/vad/silero_v6.json (tools/vad_fixtures.py). In the sanitizer build
(STENO_SANITIZE=1) the manifest part runs on steno_eval.SANITIZE_CLIPS only (said on stdout).
"""

import json
import os
import tempfile

import steno_eval as se
import vad_common

PROB_TOL = 1e-4  # measured max |steno - onnxruntime| over all clips: see docs/VAD.md


def run_json(model, paths, extra):
    rc, out, err, _ = se.run([se.steno_bin(), "vad", "--model", model, "--output-format", "json"] + extra + paths)
    if rc != 0:
        se.fail("steno vad %s exited %d: %s" % (" ".join(extra), rc, err.strip()))
    objs = [json.loads(line) for line in out.splitlines()]
    if len(objs) != len(paths):
        se.fail("steno vad printed %d objects for %d files" % (len(objs), len(paths)))
    return objs


def check_hostile(model, tmp):
    empty = os.path.join(tmp, "empty.wav")
    open(empty, "wb").close()
    text = os.path.join(tmp, "notes.wav")
    with open(text, "w") as f:
        f.write("this is not audio\n" * 50)
    jfk = os.path.join(se.audio_dir(), "jfk.wav")
    missing_model = os.path.join(tmp, "nope.safetensors")
    truncated = os.path.join(tmp, "truncated.safetensors")  # header intact, data cut short
    with open(model, "rb") as src, open(truncated, "wb") as dst:
        dst.write(src.read(100000))
    cases = [(["--model", model, empty], 1, "empty.wav"),
             (["--model", model, text], 1, "notes.wav"),
             (["--model", model, os.path.join(tmp, "missing.wav")], 1, "missing.wav"),
             (["--model", missing_model, jfk], 1, "nope.safetensors"),
             (["--model", text, jfk], 1, "notes.wav"),
             (["--model", truncated, jfk], 1, "truncated.safetensors"),
             (["--model", model, "--threshold", "2", jfk], 2, "--help"),
             (["--model", model, "--output-format", "srt", jfk], 2, "--help"),
             (["--model", model, "--bogus", jfk], 2, "--help"),
             (["--model", model], 2, "no input file")]
    for args, want_rc, needle in cases:
        rc, out, err, _ = se.run([se.steno_bin(), "vad"] + args)
        lines = err.strip().splitlines()
        if rc != want_rc or len(lines) != 1 or needle not in lines[0] or "AddressSanitizer" in err:
            se.fail("steno vad %s: rc %d (want %d), stderr %r" % (" ".join(args), rc, want_rc, err))
    print("hostile inputs: %d cases, one-line errors" % len(cases))


def main():
    model = vad_common.vad_model()
    with open(se.fixtures_dir("vad", "silero_v6.json")) as f:
        fixture = json.load(f)
    if fixture["option_sets"] != vad_common.OPTION_SETS:
        se.fail("fixture option sets differ from vad_common.OPTION_SETS; rerun tools/vad_fixtures.py")
    with tempfile.TemporaryDirectory() as tmp:
        rows = se.sanitize_rows(se.read_manifest())
        paths = [os.path.join(se.audio_dir(), r["file"]) for r in rows]
        paths += list(vad_common.build_synthetic(tmp).values())
        names = [os.path.basename(p) for p in paths]

        worst, worst_clip, n_frames = 0.0, None, 0
        for name, obj in zip(names, run_json(model, paths, ["--probs"])):
            ref = fixture["clips"][name]
            if obj["n_samples"] != ref["n_samples"] or len(obj["probs"]) != len(ref["probs"]):
                se.fail("%s: %d samples / %d frames, oracle %d / %d" % (name, obj["n_samples"], len(obj["probs"]),
                                                                      ref["n_samples"], len(ref["probs"])))
            d = max(abs(a - b) for a, b in zip(obj["probs"], ref["probs"]))
            n_frames += len(ref["probs"])
            if d > worst:
                worst, worst_clip = d, name
        print("probabilities: %d clips, %d frames, max |steno - onnxruntime| = %.2e (%s), tolerance %.0e"
              % (len(names), n_frames, worst, worst_clip, PROB_TOL))
        if worst > PROB_TOL:
            se.fail("probability differs by %.2e on %s (tolerance %.0e)" % (worst, worst_clip, PROB_TOL))

        for option_set in vad_common.OPTION_SETS:
            n_spans = 0
            for name, obj in zip(names, run_json(model, paths, vad_common.cli_args(option_set))):
                got = [[s["start_sample"], s["end_sample"]] for s in obj["spans"]]
                want = fixture["clips"][name]["spans"][option_set]
                if got != want:
                    se.fail("%s (%s options): spans %s, faster-whisper %s" % (name, option_set, got, want))
                for s in obj["spans"]:
                    if s["start"] != s["start_sample"] / 16000 or s["end"] != s["end_sample"] / 16000:
                        se.fail("%s: seconds do not match samples in %s" % (name, s))
                n_spans += len(got)
            print("spans (%s options): %d clips, %d spans, all equal to faster-whisper's" % (option_set, len(names),
                                                                                         n_spans))

        few = paths[:2]
        outs = []
        for threads in ("1", "2"):
            rc, out, err, _ = se.run([se.steno_bin(), "vad", "--model", model, "--probs", "--threads", threads] + few)
            if rc != 0:
                se.fail("steno vad --threads %s: %s" % (threads, err.strip()))
            outs.append(out)
        if outs[0] != outs[1]:
            se.fail("probabilities differ between --threads 1 and --threads 2")
        print("threads: --threads 1 and 2 print identical probabilities")

        rc, out, err, _ = se.run([se.steno_bin(), "vad", "--model", model, os.path.join(se.audio_dir(), "jfk.wav")])
        if rc != 0 or out.split("\t")[1:] != ["0.0000", "11.0000", "0", "176000\n"]:
            se.fail("steno vad tsv output for jfk.wav: %r %r" % (out, err))
        check_hostile(model, tmp)
    print("test_vad: OK")


if __name__ == "__main__":
    main()
