#!/usr/bin/env python3
"""vad_fixtures.py — the oracle of tests/py/test_vad.py: faster-whisper 1.2.1's Silero VAD
(faster_whisper/vad.py: SileroVADModel on onnxruntime, get_speech_timestamps) over every clip of
../shared/audio/manifest.tsv and the synthetic clips of tests/py/vad_common.py. Writes
tests/fixtures/vad/silero_v6.json: per clip the sample count, the per-frame speech probabilities
(6 decimals) and the spans [start, end) in samples for each option set of vad_common.OPTION_SETS.
Also tests/fixtures/vad/spans_cases.json for tests/unit/test_vad_spans.c: get_speech_timestamps
alone on seeded random probability sequences (runs of values, some exactly at the thresholds'
float32 neighbours) and random options, reaching every branch of its state machine.

The oracle is given the very samples steno decodes (`steno vad --dump-samples`), since steno's
resampler is not ffmpeg's CLI; for 16 kHz clips the script also checks that those samples equal
`ffmpeg -ar 16000 -ac 1 -f s16le` / 32768.

  STENO_BIN=build/steno /path/to/venv-with-faster-whisper==1.2.1/bin/python tools/vad_fixtures.py
"""

import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from faster_whisper import __version__ as fw_version
from faster_whisper.utils import get_assets_path
from faster_whisper.vad import VadOptions, get_speech_timestamps, get_vad_model

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "py"))
import steno_eval as se  # noqa: E402
import vad_common  # noqa: E402


ONNX_SHA256 = "4cbf549b8326f60f80f2536d9eefeb450a9abe83365a098031c89719f1be17d2"  # as scripts/fetch_vad.sh


def steno_samples(path, tmp):
    out = os.path.join(tmp, "samples.f32")
    subprocess.run([se.steno_bin(), "vad", "--model", vad_common.vad_model(), "--dump-samples", out, path],
                   check=True, stdout=subprocess.DEVNULL)
    return np.fromfile(out, dtype="<f4")


def ffmpeg_samples(path):
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-ar", "16000", "-ac", "1", "-f", "s16le", "-"],
                         check=True, stdout=subprocess.PIPE).stdout
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768


def oracle(audio):
    padded = np.pad(audio, (0, 512 - audio.shape[0] % 512))
    probs = get_vad_model()(padded).reshape(-1)
    spans = {}
    for name, opts in vad_common.OPTION_SETS.items():
        spans[name] = [[s["start"], s["end"]] for s in get_speech_timestamps(audio, VadOptions(**opts))]
    return {"n_samples": int(audio.shape[0]), "probs": [round(float(p), 6) for p in probs], "spans": spans}


def spans_cases(n_cases=250, seed=7):
    """Random (probabilities, options, spans) cases; the model is replaced by the sequence."""
    import random
    import faster_whisper.vad as fv
    rng = random.Random(seed)
    real_model = fv.get_vad_model
    cases = []
    try:
        for _ in range(n_cases):
            n = rng.randint(0, 60000)
            n_frames = n // 512 + 1
            runs, total = [], 0
            while total < n_frames:
                v = rng.random() if rng.random() < 0.5 else rng.choice([0.02, 0.98, 0.4, 0.5, 0.35, 0.3, 0.45])
                k = min(rng.randint(1, 40), n_frames - total)
                runs.append([float(np.float32(v)), k])
                total += k
            probs = np.concatenate([np.full(k, v, dtype=np.float32) for v, k in runs])
            opts = {"threshold": rng.choice([0.5, 0.45, 0.6, 0.3]),
                    "neg_threshold": rng.choice([None, 0.3, 0.2, 0.5]),
                    "min_speech_duration_ms": rng.choice([0, 250, 100]),
                    "max_speech_duration_s": rng.choice([float("inf"), 1.0, 0.5, 3.0]),
                    "min_silence_duration_ms": rng.choice([2000, 100, 500, 0]),
                    "speech_pad_ms": rng.choice([400, 30, 0, 200])}
            fv.get_vad_model = lambda: (lambda audio: probs)
            spans = fv.get_speech_timestamps(np.zeros(n, dtype=np.float32), fv.VadOptions(**opts))
            o = dict(opts)
            o["max_speech_duration_s"] = -1 if math.isinf(o["max_speech_duration_s"]) else o["max_speech_duration_s"]
            o["neg_threshold"] = -1 if o["neg_threshold"] is None else o["neg_threshold"]
            cases.append({"n_samples": n, "runs": runs, "options": o,
                          "spans": [[x["start"], x["end"]] for x in spans]})
    finally:
        fv.get_vad_model = real_model
    return cases


def main():
    if fw_version != "1.2.1":
        sys.exit("vad_fixtures: faster-whisper %s installed, the fixtures follow 1.2.1" % fw_version)
    onnx = os.path.join(get_assets_path(), "silero_vad_v6.onnx")
    with open(onnx, "rb") as f:
        if hashlib.sha256(f.read()).hexdigest() != ONNX_SHA256:
            sys.exit("vad_fixtures: %s is not the .onnx scripts/fetch_vad.sh converts" % onnx)
    clips = {}
    with tempfile.TemporaryDirectory() as tmp:
        rows = se.read_manifest()
        paths = {r["file"]: os.path.join(se.audio_dir(), r["file"]) for r in rows}
        native = {r["file"] for r in rows if str(r["sample_rate"]) == "16000"}
        paths.update(vad_common.build_synthetic(tmp))
        for name, path in paths.items():
            audio = steno_samples(path, tmp)
            if name in native:
                ref = ffmpeg_samples(path)
                same = ref.shape == audio.shape and np.array_equal(ref, audio)
                print("%s: steno's samples %s ffmpeg's" % (name, "equal" if same else "DIFFER from"))
            clips[name] = oracle(audio)
            print("%s: %d frames, spans %s" % (name, len(clips[name]["probs"]), clips[name]["spans"]["default"]))
    out = se.fixtures_dir("vad", "silero_v6.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"source": "faster-whisper 1.2.1 faster_whisper/vad.py (onnxruntime, silero_vad_v6.onnx); "
                             "written by tools/vad_fixtures.py",
                   "option_sets": vad_common.OPTION_SETS, "clips": clips}, f, separators=(",", ":"))
        f.write("\n")
    print("vad_fixtures: %d clips -> %s (%d bytes)" % (len(clips), out, os.path.getsize(out)))
    out = se.fixtures_dir("vad", "spans_cases.json")
    cases = spans_cases()
    with open(out, "w") as f:
        json.dump({"source": "faster-whisper 1.2.1 get_speech_timestamps on given probabilities; written by "
                             "tools/vad_fixtures.py; max_speech_duration_s -1 = inf, neg_threshold -1 = None",
                   "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print("vad_fixtures: %d state-machine cases -> %s (%d bytes)" % (len(cases), out, os.path.getsize(out)))


if __name__ == "__main__":
    main()
