#!/usr/bin/env python3
"""oracle_multilingual.py — writes tests/fixtures/multilingual/oracle.json, the faster-whisper
oracle for multilingual Whisper (language detection, transcribe and translate tasks).

Runs faster-whisper 1.2.1 (CTranslate2 4.8.5) on the multilingual Whisper base CTranslate2 model
(scripts/fetch_model.sh base; docs/MODELS.md) in float32 on the CPU over every clip of
shared/audio/manifest.tsv and records, per clip:
  * detect: the language and its probability as WhisperModel.transcribe(language=None) computes
    them (WhisperModel.detect_language on the whole input's features, first 30-s window), and
    the 5 most probable languages;
  * transcribe (non-English clips): tokens and text of transcribe(language=None, task="transcribe");
  * translate (de/fr/es/it/pt clips): tokens and text of transcribe(language=None, task="translate").
Decoding: greedy at temperature 0 only (no fallback ladder; steno: --temperature-increment-on-fallback
None), otherwise openai-whisper's defaults, recorded in the fixture. Why no ladder: base often
fails the log-probability threshold on these short non-English clips at every temperature, and
then faster-whisper keeps the attempt with the best avg_logprob while openai-whisper (and steno)
keep the last, sampled one — e.g. the es translation: T=0 gives the same 16 tokens and the same
avg_logprob (-1.0778) in both, below -1.0, so faster-whisper returns them and steno returns a
T=1.0 sample. Comparing the T=0 decodes compares the model math and the SOT sequence. tests/py/test_multilingual.py compares steno
against it; CI does not need faster-whisper (pip install faster-whisper==1.2.1 ctranslate2==4.8.5
to regenerate).
"""

import argparse
import hashlib
import json
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
import steno_eval  # noqa: E402

TRANSLATE_LANGS = ("de", "fr", "es", "it", "pt")
OPTIONS = dict(
    language=None, beam_size=1, best_of=1,
    temperature=[0.0], compression_ratio_threshold=2.4,
    log_prob_threshold=-1.0, no_speech_threshold=0.6, condition_on_previous_text=True,
    vad_filter=False, word_timestamps=False, without_timestamps=False, suppress_blank=True,
    suppress_tokens=[-1], initial_prompt=None,
)


def sha256_16(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "steno", "models", "base"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "multilingual",
                                                  "oracle.json"))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import ctranslate2
    import faster_whisper
    from faster_whisper import WhisperModel
    from faster_whisper.audio import decode_audio

    model = WhisperModel(args.model, device="cpu", compute_type="float32", cpu_threads=args.threads)
    assert model.model.is_multilingual, "%s: not a multilingual model" % args.model
    clips = {}
    for row in steno_eval.read_manifest():
        audio = decode_audio(row["path"], sampling_rate=16000)
        features = model.feature_extractor(audio)
        lang, prob, all_probs = model.detect_language(features=features)
        entry = {"language": row["language"], "detected": lang, "probability": round(prob, 6),
                 "top5": [[c, round(p, 6)] for c, p in all_probs[:5]]}
        tasks = []
        if row["language"] != "en":
            tasks.append("transcribe")
        if row["language"] in TRANSLATE_LANGS:
            tasks.append("translate")
        for task in tasks:
            segments, info = model.transcribe(audio, task=task, **OPTIONS)
            segs = list(segments)
            entry[task] = {"text": "".join(s.text for s in segs),
                           "tokens": [t for s in segs for t in s.tokens],
                           "temperatures": sorted({s.temperature for s in segs})}
        clips[row["file"]] = entry
        print("%-55s %s %s p=%.4f %s" % (row["file"], row["language"], lang, prob,
                                        " | ".join(entry[t]["text"] for t in tasks)), flush=True)
    doc = {
        "oracle": {
            "tool": "tools/oracle_multilingual.py", "faster_whisper": faster_whisper.__version__,
            "ctranslate2": ctranslate2.__version__, "python": platform.python_version(),
            "model": "base (scripts/fetch_model.sh base)",
            "model_sha256_16": sha256_16(os.path.join(args.model, "model.bin")),
            "device": "cpu", "compute_type": "float32", "cpu_threads": args.threads,
            "options": OPTIONS, "translate_languages": list(TRANSLATE_LANGS),
        },
        "clips": clips,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("{\n \"oracle\": %s,\n \"clips\": {\n" % json.dumps(doc["oracle"], ensure_ascii=False))
        f.write(",\n".join("  %s: %s" % (json.dumps(k, ensure_ascii=False), json.dumps(v, ensure_ascii=False))
                           for k, v in clips.items()))
        f.write("\n }\n}\n")
    with open(args.out, encoding="utf-8") as f:
        assert json.load(f) == json.loads(json.dumps(doc))


if __name__ == "__main__":
    main()
