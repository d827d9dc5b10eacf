#!/usr/bin/env python3
"""oracle_batched.py — writes tests/fixtures/oracle_batched/*.json: faster-whisper 1.2.1's
BatchedInferencePipeline.transcribe on the inputs of tests/py/test_batched.py (build_inputs,
imported from there so that the test and the oracle see the same samples: 16-bit WAVs, exact).

Oracle settings (recorded in every fixture):
  WhisperModel(tiny.en dir, device="cpu", compute_type="float32", cpu_threads=2)
  BatchedInferencePipeline(model).transcribe(path, language="en", batch_size=8) with every other
  argument at its default (beam_size 5, without_timestamps True, temperature [0.0, ...] of which
  only the first is used, vad_filter True with VadOptions(max_speech_duration_s=30,
  min_silence_duration_ms=160), condition_on_previous_text forced False).
Each fixture: {name, duration, duration_after_vad, text, segments: [{seek, start, end, text,
tokens, avg_logprob, no_speech_prob}], oracle}.
Needs: pip install faster-whisper==1.2.1 ctranslate2==4.8.5 (not CI; a venv such as
~/.cache/steno/venv-fw). Usage: python3 tools/oracle_batched.py [--model DIR]
"""
import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
import steno_eval as se  # noqa: E402
import test_batched as tb  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None)
    a = ap.parse_args()
    import ctranslate2
    import faster_whisper
    from faster_whisper import BatchedInferencePipeline, WhisperModel
    model_dir = a.model or se.model_dir()
    model = WhisperModel(model_dir, device="cpu", compute_type="float32", cpu_threads=2)
    pipe = BatchedInferencePipeline(model)
    out_dir = os.path.join(ROOT, "tests", "fixtures", "oracle_batched")
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in tb.build_inputs(tmp):
            segments, info = pipe.transcribe(path, language="en", batch_size=8)
            segs = [{"seek": s.seek, "start": s.start, "end": s.end, "text": s.text, "tokens": list(s.tokens),
                     "avg_logprob": round(s.avg_logprob, 6), "no_speech_prob": round(s.no_speech_prob, 6)}
                    for s in segments]
            fx = {"name": name, "duration": info.duration, "duration_after_vad": info.duration_after_vad,
                  "text": "".join(s["text"] for s in segs), "segments": segs,
                  "oracle": {"tool": "tools/oracle_batched.py", "faster_whisper": faster_whisper.__version__,
                             "ctranslate2": ctranslate2.__version__, "compute_type": "float32", "cpu_threads": 2,
                             "call": "BatchedInferencePipeline(model).transcribe(path, language='en', batch_size=8)"}}
            with open(os.path.join(out_dir, name + ".json"), "w", encoding="utf-8") as f:
                json.dump(fx, f, indent=1, ensure_ascii=False)
            print(name, len(segs), "segments")


if __name__ == "__main__":
    main()
