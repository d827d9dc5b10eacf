#!/usr/bin/env python3
"""oracle_vad_transcribe.py — writes tests/fixtures/oracle_vad/*.json: faster-whisper 1.2.1's
transcribe(vad_filter=True) on inputs built from the dev clips (issue #14, "hallucination cases"):

  silence_jfk_silence   10 s of zeros + jfk.wav + 10 s of zeros (word_timestamps=True)
  two_clips_gap         two dev clips with 3 s of zeros between them
  digital_silence_30s   30 s of zeros
  pink_noise_30s        30 s of pink noise at -50 dBFS RMS (fixed seed)

Each input is built by tests/py/test_transcribe_vad.py's build_inputs() (imported from there, so
the test and the oracle see the same samples, written here as 16-bit WAVs: the samples are exact).
The oracle runs WhisperModel(tiny.en dir, device="cpu", compute_type="float32", cpu_threads=2)
with test_oracle_parity's options plus vad_filter=True and the default VadOptions. Each fixture:
{name, duration, text, segments: [{seek, start, end, text, tokens, temperature, words?}], oracle}.
Needs: pip install faster-whisper==1.2.1 ctranslate2==4.8.5 (not CI).
Usage: python3 tools/oracle_vad_transcribe.py [--model DIR]
"""
import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
import steno_eval as se  # noqa: E402
import test_transcribe_vad as tv  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None)
    a = ap.parse_args()
    import faster_whisper
    from faster_whisper import WhisperModel
    model_dir = a.model or se.model_dir()
    model = WhisperModel(model_dir, device="cpu", compute_type="float32", cpu_threads=2)
    out_dir = os.path.join(ROOT, "tests", "fixtures", "oracle_vad")
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, words in tv.build_inputs(tmp):
            options = dict(language="en", task="transcribe", beam_size=1, best_of=1,
                           temperature=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0], compression_ratio_threshold=2.4,
                           log_prob_threshold=-1.0, no_speech_threshold=0.6, condition_on_previous_text=True,
                           vad_filter=True, word_timestamps=words, without_timestamps=False,
                           suppress_blank=True, suppress_tokens=[-1], initial_prompt=None)
            segments, info = model.transcribe(path, **options)
            segs = []
            for s in segments:
                d = {"seek": s.seek, "start": s.start, "end": s.end, "text": s.text, "tokens": list(s.tokens),
                     "temperature": s.temperature}
                if words:
                    d["words"] = [{"word": w.word, "start": w.start, "end": w.end} for w in (s.words or [])]
                segs.append(d)
            fx = {"name": name, "duration": info.duration, "duration_after_vad": info.duration_after_vad,
                  "text": "".join(s["text"] for s in segs), "segments": segs,
                  "oracle": {"tool": "tools/oracle_vad_transcribe.py", "faster_whisper": faster_whisper.__version__,
                             "options": options, "vad_options": "VadOptions() defaults"}}
            with open(os.path.join(out_dir, name + ".json"), "w", encoding="utf-8") as f:
                json.dump(fx, f, indent=1, ensure_ascii=False)
                f.write("\n")
            print("%s: %d segments, %.1f s after VAD: %r" % (name, len(segs), info.duration_after_vad, fx["text"][:70]))


if __name__ == "__main__":
    main()
