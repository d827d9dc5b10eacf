#!/usr/bin/env python3
"""oracle_faster_whisper.py — writes the transcription oracle fixtures tests/fixtures/oracle/*.json.

Runs faster-whisper (CTranslate2) on the Whisper tiny.en CTranslate2 model in float32 on the CPU,
with openai-whisper transcribe()'s default decoding options, over every English clip of
shared/audio/manifest.tsv, and writes one small JSON per clip:

  {file, duration, text, segments: [{id, seek, start, end, text, tokens, temperature,
   avg_logprob, compression_ratio, no_speech_prob}], reference, wer: {errors, ref_words, wer},
   wall_s, oracle: {tool, faster_whisper, ctranslate2, numpy, python, model_dir, model_sha256_16,
   options}}

tests/py/test_oracle_parity.py, test_wer.py and test_longform.py compare steno against these.
With --beam 5 the same run uses faster-whisper's beam search instead (beam_size=5, best_of=5,
patience=1, length_penalty=1, otherwise the settings below) and writes
tests/fixtures/oracle_beam5/*.json, which tests/py/test_beam.py compares `steno --beam-size 5
--best-of 5` against.
CI does not need faster-whisper: only this script does (pip install faster-whisper==1.2.1
ctranslate2==4.8.5).

Oracle settings (fixed, recorded in every fixture):
  WhisperModel(model_dir, device="cpu", compute_type="float32", cpu_threads=2)
  transcribe(language="en", task="transcribe", beam_size=1, best_of=1,
             temperature=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0], compression_ratio_threshold=2.4,
             log_prob_threshold=-1.0, no_speech_threshold=0.6, condition_on_previous_text=True,
             vad_filter=False, word_timestamps=False, without_timestamps=False,
             suppress_blank=True, suppress_tokens=[-1], initial_prompt=None)

How faster-whisper 1.2.1 differs from openai-whisper's transcribe() (checked in its source):
  * log-mel: faster-whisper pads the audio with 160 zeros (openai: 480000) before the STFT. For
    every content frame (index < n_samples // 160) the STFT windows see the same samples (the
    audio followed by zeros), so the windows fed to the encoder are the same up to float
    rounding; both pad a short last window with 0.0 in the normalized log-mel domain
    (pad_or_trim on the mel). The global max used for the (max - 8) clamp is the same.
  * audio decoding: PyAV + libswresample to s16 then /32768 (openai: the ffmpeg CLI to s16le).
    For 16-bit 16 kHz input this is exact; for 8/22.05/48 kHz clips the resampled samples can
    differ from steno's (libswresample to float) by ~1 LSB, which can flip a close decision.
  * max_length 448 (prompt + generated) versus openai's sample_len 224 new tokens.
  * when every temperature fails, faster-whisper keeps the result with the best avg_logprob
    (openai keeps the last one); sampling at T > 0 is random in both. Parity tests therefore
    compare tokens only up to the first segment decoded at T > 0.
"""

import argparse
import hashlib
import json
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
import steno_eval  # noqa: E402  (the tests' normalizer and WER, so the numbers agree)

OPTIONS = dict(
    language="en", task="transcribe", beam_size=1, best_of=1,
    temperature=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0], compression_ratio_threshold=2.4,
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


def write_json(path, doc):
    """Writes doc (a dict) readably but compactly: one top-level key per line, one element per
    line for lists of dicts (segments, steps), everything else inline."""
    def enc(v):
        return json.dumps(v, ensure_ascii=False)
    lines = []
    for k, v in doc.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            inner = ",\n  ".join(enc(x) for x in v)
            lines.append("%s: [\n  %s\n ]" % (enc(k), inner))
        elif isinstance(v, dict) and any(isinstance(x, dict) for x in v.values()):
            inner = ",\n  ".join("%s: %s" % (enc(a), enc(b)) for a, b in v.items())
            lines.append("%s: {\n  %s\n }" % (enc(k), inner))
        else:
            lines.append("%s: %s" % (enc(k), enc(v)))
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n " + ",\n ".join(lines) + "\n}\n")
    with open(path, encoding="utf-8") as f:
        assert json.load(f) == json.loads(json.dumps(doc))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="tiny.en CTranslate2 dir (default: as tests)")
    ap.add_argument("--shared", default=None, help="shared folder (default: $STENO_SHARED)")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "oracle"))
    ap.add_argument("--clips", nargs="*", help="only these manifest file names")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--beam", type=int, default=0,
                    help="beam_size (and best_of) N: beam-search fixtures, default out "
                         "tests/fixtures/oracle_beam<N>")
    args = ap.parse_args()
    options = dict(OPTIONS)
    if args.beam > 0:
        options.update(beam_size=args.beam, best_of=args.beam, patience=1.0, length_penalty=1.0)
        if args.out == os.path.join(ROOT, "tests", "fixtures", "oracle"):
            args.out = os.path.join(ROOT, "tests", "fixtures", "oracle_beam%d" % args.beam)
    if args.shared:
        os.environ["STENO_SHARED"] = args.shared
    if args.model:
        os.environ["STENO_MODEL_DIR"] = args.model
    model_dir = steno_eval.model_dir()

    import ctranslate2
    import faster_whisper
    import numpy
    from faster_whisper import WhisperModel
    from faster_whisper.audio import decode_audio

    model = WhisperModel(model_dir, device="cpu", compute_type="float32",
                         cpu_threads=args.threads)
    info = {
        "tool": "tools/oracle_faster_whisper.py",
        "faster_whisper": faster_whisper.__version__,
        "ctranslate2": ctranslate2.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
        "model_dir": os.path.basename(os.path.normpath(model_dir)),
        "model_sha256_16": sha256_16(os.path.join(model_dir, "model.bin")),
        "device": "cpu", "compute_type": "float32", "cpu_threads": args.threads,
        "options": options,
    }
    os.makedirs(args.out, exist_ok=True)
    rows = steno_eval.read_manifest(language="en")
    if args.clips:
        rows = [r for r in rows if r["file"] in set(args.clips)]
    tot_err = tot_ref = 0
    table = []
    for row in rows:
        audio = decode_audio(row["path"], sampling_rate=16000)
        t0 = time.time()
        segments, tinfo = model.transcribe(audio, **options)
        segs = []
        for s in segments:  # a generator: decoding happens here
            segs.append({
                "id": s.id, "seek": s.seek, "start": round(s.start, 3), "end": round(s.end, 3),
                "text": s.text, "tokens": list(s.tokens), "temperature": s.temperature,
                "avg_logprob": s.avg_logprob, "compression_ratio": s.compression_ratio,
                "no_speech_prob": s.no_speech_prob,
            })
        wall = time.time() - t0
        text = "".join(s["text"] for s in segs)
        e, n, w = steno_eval.wer(row["reference_text"], text)
        tot_err += e
        tot_ref += n
        doc = {
            "file": row["file"], "duration": tinfo.duration, "n_samples": int(audio.shape[0]),
            "text": text, "segments": segs, "reference": row["reference_text"],
            "wer": {"errors": e, "ref_words": n, "wer": round(w, 6)},
            "wall_s": round(wall, 3), "oracle": info,
        }
        path = os.path.join(args.out, steno_eval.clip_stem(row["file"]) + ".json")
        write_json(path, doc)
        temps = sorted({s["temperature"] for s in segs})
        table.append((row["file"], row["seconds"], len(segs), e, n, w, wall, temps))
        print("%-55s %7.2fs segs=%2d WER=%6.2f%% (%d/%d) wall=%.2fs T=%s" % (
            row["file"], row["seconds"], len(segs), 100 * w, e, n, wall, temps), flush=True)
    print()
    print("| clip | seconds | segments | errors/ref words | WER % | wall s | temperatures |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for f, sec, ns, e, n, w, wall, temps in table:
        print("| %s | %.2f | %d | %d/%d | %.2f | %.2f | %s |" % (
            f, sec, ns, e, n, 100 * w, wall, ",".join("%.1f" % t for t in temps)))
    if tot_ref:
        print("| **aggregate** | %.1f | | %d/%d | %.2f | %.2f | |" % (
            sum(t[1] for t in table), tot_err, tot_ref, 100.0 * tot_err / tot_ref,
            sum(t[6] for t in table)))


if __name__ == "__main__":
    main()
