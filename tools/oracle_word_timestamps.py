#!/usr/bin/env python3
"""oracle_word_timestamps.py — writes the word-timestamp oracle fixtures
tests/fixtures/oracle_words/*.json.

Runs faster-whisper 1.2.1 (CTranslate2 4.8.5) on the Whisper tiny.en CTranslate2 model in float32
on the CPU with the settings of tools/oracle_faster_whisper.py (openai-whisper's default decoding
options) plus word_timestamps=True, over every English clip of shared/audio/manifest.tsv, and
writes one small JSON per clip:

  {file, n_samples, text, segments: [{id, seek, start, end, text, tokens,
   words: [[word, start, end, probability], ...]}], oracle: {...settings...}}

tests/py/test_word_timestamps.py compares `steno transcribe --word-timestamps True -f json`
against these (same words; mean |Δstart|, |Δend| ≤ 20 ms). CI does not need faster-whisper: only
this script does.

--multilingual: the multilingual base model (scripts/fetch_model.sh base) on the clips of the
languages written without spaces (MULTILINGUAL_CLIPS: zh, ja), each with its manifest language,
into tests/fixtures/oracle_words_multilingual/ (faster-whisper splits their words per token at
Unicode boundaries; tests/py/test_multilingual_words.py compares).
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
import oracle_faster_whisper as base  # noqa: E402  (OPTIONS, write_json, sha256_16)
import steno_eval  # noqa: E402

OPTIONS = dict(base.OPTIONS, word_timestamps=True,
               prepend_punctuations="\"'“¿([{-",
               append_punctuations="\"'.。,，!！?？:：”)]}、")


MULTILINGUAL_CLIPS = ["zh_mid.wav", "picovoice_leopard_test_ja.wav"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="tiny.en CTranslate2 dir (default: as tests)")
    ap.add_argument("--shared", default=None, help="shared folder (default: $STENO_SHARED)")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "oracle_words"))
    ap.add_argument("--clips", nargs="*", help="only these manifest file names")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--multilingual", action="store_true", help="base on the zh/ja clips (see above)")
    args = ap.parse_args()
    if args.multilingual:
        import multilingual_common
        args.model = args.model or multilingual_common.base_model_dir()
        if args.out == ap.get_default("out"):
            args.out = os.path.join(ROOT, "tests", "fixtures", "oracle_words_multilingual")
    if args.shared:
        os.environ["STENO_SHARED"] = args.shared
    if args.model:
        os.environ["STENO_MODEL_DIR"] = args.model
    model_dir = steno_eval.model_dir()

    import ctranslate2
    import faster_whisper
    from faster_whisper import WhisperModel
    from faster_whisper.audio import decode_audio

    model = WhisperModel(model_dir, device="cpu", compute_type="float32", cpu_threads=args.threads)
    info = {
        "tool": "tools/oracle_word_timestamps.py",
        "faster_whisper": faster_whisper.__version__,
        "ctranslate2": ctranslate2.__version__,
        "model_dir": os.path.basename(os.path.normpath(model_dir)),
        "model_sha256_16": base.sha256_16(os.path.join(model_dir, "model.bin")),
        "device": "cpu", "compute_type": "float32", "cpu_threads": args.threads,
        "options": OPTIONS,
    }
    os.makedirs(args.out, exist_ok=True)
    rows = steno_eval.read_manifest(language=None if args.multilingual else "en")
    if args.multilingual:
        rows = [r for r in rows if r["file"] in MULTILINGUAL_CLIPS]
        info["model_dir"] = "base"
    if args.clips:
        rows = [r for r in rows if r["file"] in set(args.clips)]
    for row in rows:
        audio = decode_audio(row["path"], sampling_rate=16000)
        opts = dict(OPTIONS, language=row["language"]) if args.multilingual else OPTIONS
        segments, _ = model.transcribe(audio, **opts)
        segs = []
        for s in segments:
            segs.append({
                "id": s.id, "seek": s.seek, "start": round(s.start, 3), "end": round(s.end, 3),
                "text": s.text, "tokens": list(s.tokens), "temperature": s.temperature,
                "words": [[w.word, round(w.start, 3), round(w.end, 3), round(float(w.probability), 6)]
                          for w in s.words],
            })
        doc = {"file": row["file"], "n_samples": int(audio.shape[0]),
               "text": "".join(s["text"] for s in segs), "segments": segs, "oracle": info}
        path = os.path.join(args.out, steno_eval.clip_stem(row["file"]) + ".json")
        base.write_json(path, doc)
        print("%-55s segs=%2d words=%3d" % (row["file"], len(segs), sum(len(s["words"]) for s in segs)),
              flush=True)


if __name__ == "__main__":
    main()
