#!/usr/bin/env python3
"""l1_ct2.py — writes the L1 (faithful-path) fixtures tests/fixtures/l1/ for jfk.wav.

Oracle: CTranslate2's Python API on the Whisper tiny.en CTranslate2 model, computed in float32:
  ctranslate2.models.Whisper(model_dir, device="cpu", compute_type="float32", intra_threads=2)

1. Log-mel: a numpy port of openai-whisper's whisper/audio.py log_mel_spectrogram (NOT
   faster_whisper.feature_extractor): audio (16 kHz float, decoded by faster_whisper.decode_audio:
   jfk.wav is 16-bit 16 kHz, so the samples are exactly int16/32768) followed by N_SAMPLES=480000
   zeros; torch.stft semantics (n_fft 400, hop 160, periodic Hann, center=True reflect padding);
   |X|^2 with the last frame dropped; Whisper's exact filterbank (shared/models/
   whisper-test-assets/mel_filters.npz, mel_80); log10(max(., 1e-10)), clamp to max - 8,
   (x + 4) / 4. Computed in float64, stored/used as float32.
   Two first-window encoder inputs are written, because "the first 30-s window" has two readings:
     "transcribe" (PRIMARY): what openai-whisper transcribe() feeds the encoder for seek 0:
         mel[:, 0:min(3000, content_frames)] padded with 0.0 to 3000 frames (pad_or_trim on the
         mel; content_frames = n_samples // 160 = 1100 for jfk). faster-whisper does the same.
     "padded": the first 3000 frames of the padded-audio mel (log_mel_spectrogram(audio,
         padding=480000)[:, :3000]): frames past the audio hold the log-mel of silence instead of
         0.0 (this is what whisper.log_mel_spectrogram(whisper.pad_or_trim(audio)) gives).
2. Encoder: Whisper.encode(features, to_cpu=True) -> [1, 1500, 384] float32.
   Stored every 10th frame (frames 0, 10, ..., 1490), all 384 dims, float32 LE:
   jfk_encoder_every10.f32 (transcribe window) and jfk_encoder_padded_every10.f32 (padded).
3. Decoder: Whisper.generate(encoder_output, [[50257]], beam_size=1, max_length=64,
   return_logits_vocab=True, suppress_blank=True, suppress_tokens=[-1],
   max_initial_timestamp_index=50) — greedy from the tiny.en SOT sequence [50257] (an English-only
   model has no language/task tokens), timestamps on.
   WHAT CT2 RETURNS (measured on ctranslate2 4.8.5): result.logits[0] holds one row of 51864
   float32 per generated step. The values are the decoder's raw logits (no log-softmax, no
   temperature), BUT after CT2's logits processors: every suppressed id is set to -FLT_MAX
   (-3.4028235e38): the suppress_tokens set (config.json suppress_ids, 90 ids), the blank set at
   the first step (suppress_blank: 220 and 50256), <|notimestamps|>, and the timestamp rules
   (step 0: only <|0.00|>..<|1.00|> = 50363..50413 stay finite; timestamps in pairs; timestamps
   non-decreasing; timestamp forced when their total probability wins). Raw logits of suppressed
   ids are therefore NOT available from CT2; the test compares only ids CT2 left finite at that
   step, and argmax over those ids.
   Stored for the first 10 steps (rows); row i = logits after tokens[0..i] where
   tokens = [50257] + generated[:9]:
     jfk_logits_stride32.f32: [10][1621] float32 LE, ids 0, 32, ..., 51840 (-FLT_MAX kept);
     jfk.json "top100": per step the 100 largest (id, logit) pairs; "logsumexp" per step over
     the finite ids; "n_finite", "argmax" (== the generated token); "suppressed_runs": the ids
     CT2 set to -FLT_MAX at that step, as [first, last + 1) runs.
   The same for the "padded" window with a _padded suffix (its greedy tokens are recorded too).
jfk.json holds shapes, strides, tokens, versions and the mel max-abs diff versus
faster_whisper.feature_extractor (informational).
"""

import argparse
import hashlib
import json
import os
import platform
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
import steno_eval  # noqa: E402

N_SAMPLES = 480000
N_FRAMES = 3000
N_STEPS = 10
ENC_STRIDE = 10
ID_STRIDE = 32
TOPK = 100
NEG = -1e30  # CT2 marks suppressed ids with -FLT_MAX; anything below this counts as suppressed


def log_mel_openai(audio, filters, padding=N_SAMPLES):
    """openai-whisper's log_mel_spectrogram(audio, n_mels=80, padding) in numpy float64."""
    x = np.concatenate([audio.astype(np.float64), np.zeros(padding)])
    x = np.pad(x, (200, 200), mode="reflect")              # torch.stft center=True
    n_frames = 1 + (len(x) - 400) // 160
    frames = np.lib.stride_tricks.as_strided(x, (n_frames, 400), (160 * 8, 8))
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)  # hann_window(400), periodic
    spec = np.fft.rfft(frames * window, axis=-1)
    mag = np.abs(spec[:-1]) ** 2                            # drop the last frame
    mel = filters.astype(np.float64) @ mag.T                # [80, n_frames - 1]
    log = np.log10(np.maximum(mel, 1e-10))
    log = np.maximum(log, log.max() - 8.0)
    return ((log + 4.0) / 4.0).astype(np.float32)


def sha256_16(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()[:16]


def run_variant(model, ctranslate2, features):
    sv = ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None]))
    enc = model.encode(sv, to_cpu=True)
    e = np.array(enc)
    r = model.generate(enc, [[steno_eval.SOT]], beam_size=1, max_length=64,
                       return_logits_vocab=True, return_scores=True, suppress_blank=True,
                       suppress_tokens=[-1], max_initial_timestamp_index=50)[0]
    gen = list(r.sequences_ids[0])
    rows = np.stack([np.array(x, dtype=np.float32).reshape(-1) for x in r.logits[0]])
    if rows.shape[0] < N_STEPS or len(gen) < N_STEPS:
        raise SystemExit("CT2 generated only %d steps" % rows.shape[0])
    rows = rows[:N_STEPS]
    steps = []
    for i in range(N_STEPS):
        row = rows[i]
        fin = row > NEG
        vals = row[fin].astype(np.float64)
        lse = float(np.log(np.exp(vals - vals.max()).sum()) + vals.max())
        top = np.argsort(-row, kind="stable")[:TOPK]
        sup = np.flatnonzero(~fin)
        runs = []  # suppressed ids as [first, last + 1) runs
        for k in sup.tolist():
            if runs and runs[-1][1] == k:
                runs[-1][1] = k + 1
            else:
                runs.append([k, k + 1])
        steps.append({
            "step": i, "argmax": int(row.argmax()), "n_finite": int(fin.sum()),
            "suppressed_runs": runs,
            "logsumexp": lse,
            "top100": [[int(k), float(row[k])] for k in top],
        })
        assert int(row.argmax()) == gen[i], (i, int(row.argmax()), gen[i])
    return e, gen, rows, steps


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
    ap.add_argument("--model", default=None)
    ap.add_argument("--shared", default=None)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "l1"))
    args = ap.parse_args()
    if args.shared:
        os.environ["STENO_SHARED"] = args.shared
    if args.model:
        os.environ["STENO_MODEL_DIR"] = args.model
    model_dir = steno_eval.model_dir()
    shared = steno_eval.shared_dir()

    import ctranslate2
    import faster_whisper
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor

    wav = os.path.join(shared, "audio", "jfk.wav")
    audio = decode_audio(wav, sampling_rate=16000)
    filters = np.load(os.path.join(shared, "models", "whisper-test-assets",
                                   "mel_filters.npz"))["mel_80"]
    mel = log_mel_openai(audio, filters)                    # [80, n//160 + 3000]
    content_frames = mel.shape[1] - N_FRAMES
    win_t = np.zeros((80, N_FRAMES), np.float32)            # transcribe(): pad_or_trim on mel
    n = min(N_FRAMES, content_frames)
    win_t[:, :n] = mel[:, :n]
    win_p = np.ascontiguousarray(mel[:, :N_FRAMES])         # padded-audio reading

    fw = FeatureExtractor()(audio)                          # informational comparison
    fw_diff = float(np.abs(fw[:, :content_frames] - mel[:, :content_frames]).max())

    model = ctranslate2.models.Whisper(model_dir, device="cpu", compute_type="float32",
                                       intra_threads=2)
    os.makedirs(args.out, exist_ok=True)
    ids = np.arange(0, steno_eval.N_VOCAB, ID_STRIDE)
    meta = {
        "file": "jfk.wav", "n_samples": int(audio.shape[0]), "content_frames": content_frames,
        "mel": "numpy port of openai-whisper log_mel_spectrogram(padding=480000), float64 -> "
               "float32; max abs diff vs faster_whisper FeatureExtractor on content frames: %.3g"
               % fw_diff,
        "encoder": {"shape": [1, 1500, 384], "dtype": "float32 LE", "frame_stride": ENC_STRIDE,
                    "stored_shape": [1500 // ENC_STRIDE, 384],
                    "frames": "0, 10, ..., 1490"},
        "logits": {"rows": N_STEPS, "n_vocab": steno_eval.N_VOCAB, "dtype": "float32 LE",
                   "id_stride": ID_STRIDE, "stored_shape": [N_STEPS, len(ids)],
                   "row_meaning": "row i = logits after tokens[0..i]",
                   "suppressed_value": "-FLT_MAX (CT2 logits processors); compare finite only"},
        "ct2_returns": "generate(return_logits_vocab=True): raw decoder logits (not log-softmax)"
                       " with suppressed ids (suppress_tokens, suppress_blank, timestamp rules,"
                       " <|notimestamps|>) set to -FLT_MAX; raw values of suppressed ids are not"
                       " available",
        "oracle": {"tool": "tools/l1_ct2.py", "ctranslate2": ctranslate2.__version__,
                   "faster_whisper": faster_whisper.__version__, "numpy": np.__version__,
                   "python": platform.python_version(), "compute_type": "float32",
                   "intra_threads": 2,
                   "model_sha256_16": sha256_16(os.path.join(model_dir, "model.bin"))},
        "variants": {},
    }
    for name, feats, suffix in (("transcribe", win_t, ""), ("padded", win_p, "_padded")):
        e, gen, rows, steps = run_variant(model, ctranslate2, feats)
        assert e.shape == (1, 1500, 384), e.shape
        enc_file = "jfk_encoder%s_every10.f32" % suffix
        lg_file = "jfk_logits%s_stride32.f32" % suffix
        e[0, ::ENC_STRIDE, :].astype("<f4").tofile(os.path.join(args.out, enc_file))
        rows[:, ids].astype("<f4").tofile(os.path.join(args.out, lg_file))
        tokens = [steno_eval.SOT] + gen[:N_STEPS - 1]
        meta["variants"][name] = {
            "encoder_file": enc_file, "logits_file": lg_file,
            "tokens": tokens, "generated": gen,
            "encoder_abs_max": float(np.abs(e).max()),
            "steps": steps,
        }
        print("%-10s tokens=%s" % (name, tokens))
        print("%-10s generated=%s" % (name, gen))
        print("%-10s encoder |max|=%.3f  n_finite per step=%s" % (
            name, float(np.abs(e).max()), [s["n_finite"] for s in steps]))
    a = np.fromfile(os.path.join(args.out, "jfk_encoder_every10.f32"), "<f4")
    b = np.fromfile(os.path.join(args.out, "jfk_encoder_padded_every10.f32"), "<f4")
    meta["variants_encoder_max_abs_diff"] = float(np.abs(a - b).max())
    print("mel vs faster-whisper FeatureExtractor (content frames): max abs diff %.3g" % fw_diff)
    print("encoder transcribe vs padded window: max abs diff %.3f" % float(np.abs(a - b).max()))
    write_json(os.path.join(args.out, "jfk.json"), meta)
    for fn in sorted(os.listdir(args.out)):
        print("%8d  %s" % (os.path.getsize(os.path.join(args.out, fn)), fn))


if __name__ == "__main__":
    main()
