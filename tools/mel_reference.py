#!/usr/bin/env python3
"""Writes the log-mel reference fixture tests/fixtures/mel/ compares steno against.

Re-computes openai-whisper's log_mel_spectrogram() (whisper/audio.py) with numpy, mirroring what
torch does in float32:
    audio (float32, int16 / 32768) padded with `padding` zeros
    stft = torch.stft(audio, 400, 160, window=torch.hann_window(400), center=True,
                      pad_mode="reflect", return_complex=True)
    magnitudes = stft[..., :-1].abs() ** 2            # float32
    mel_spec = filters @ magnitudes                   # float32, mel_filters.npz
    log_spec = torch.clamp(mel_spec, min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
    log_spec = (log_spec + 4.0) / 4.0
The DFT is taken in float64 (torch's float32 FFT differs from it by float32 rounding only); every
step after it is float32 as in torch.

Cross-checked once against faster-whisper 1.0.3's FeatureExtractor (an independent numpy port of
the same code, which keeps the STFT in complex64 as torch does): max |diff| 3.6e-6 over all 4100
frames of jfk.wav, 80 mels; steno vs this reference: 1.2e-7.

Also checks the numpy Slaney filterbank formula (librosa.filters.mel) against mel_filters.npz, as a
cross-check of the reference itself.

Usage: python3 tools/mel_reference.py [--shared ../shared] [--out tests/fixtures/mel]
Needs numpy (not needed by the tests, which read the committed fixture).
"""
import argparse
import os
import wave

import numpy as np

SR, N_FFT, HOP = 16000, 400, 160
# The fixture keeps a few frame ranges of the whole spectrogram so it stays small.
FIXTURES = [
    # (name, clip, n_mels, padding, [(first_frame, n_frames), ...])
    ("jfk_80", "models/whisper-test-assets/jfk.wav", 80, 480000, [(0, 300), (1000, 100)]),
    ("jfk_128", "models/whisper-test-assets/jfk.wav", 128, 480000, [(0, 100)]),
]


def load_wav_s16_mono_16k(path):
    with wave.open(path, "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1 and w.getframerate() == SR, path
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    # openai-whisper load_audio(): ffmpeg s16le output, then / 32768.0
    return pcm.astype(np.float32) / np.float32(32768.0)


def slaney_filters(n_mels):
    """librosa.filters.mel(sr=16000, n_fft=400, n_mels=n_mels) (htk=False, norm="slaney")."""
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0

    def hz_to_mel(f):
        return min_log_mel + np.log(f / min_log_hz) / logstep if f >= min_log_hz else f / f_sp

    def mel_to_hz(m):
        m = np.asarray(m, dtype=np.float64)
        f = f_sp * m
        log_t = m >= min_log_mel
        f[log_t] = min_log_hz * np.exp(logstep * (m[log_t] - min_log_mel))
        return f

    fftfreqs = np.fft.rfftfreq(n=N_FFT, d=1.0 / SR)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(SR / 2), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    weights = np.zeros((n_mels, N_FFT // 2 + 1), dtype=np.float32)
    for i in range(n_mels):
        weights[i] = np.maximum(0, np.minimum(-ramps[i] / fdiff[i], ramps[i + 2] / fdiff[i + 1]))
    weights *= (2.0 / (mel_f[2 : n_mels + 2] - mel_f[:n_mels]))[:, np.newaxis]
    return weights


def log_mel(audio, filters, padding):
    x = np.concatenate([audio, np.zeros(padding, dtype=np.float32)]).astype(np.float64)
    x = np.pad(x, N_FFT // 2, mode="reflect")  # torch.stft(center=True, pad_mode="reflect")
    n = np.arange(N_FFT)
    window = (0.5 - 0.5 * np.cos(2 * np.pi * n / N_FFT)).astype(np.float32)  # hann_window(periodic)
    n_frames = 1 + (len(x) - N_FFT) // HOP
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]
    spec = np.fft.rfft(x[idx] * window.astype(np.float64), axis=1)  # [frames, 201]
    magnitudes = (np.abs(spec[:-1]) ** 2).astype(np.float32).T  # drop last frame; [201, frames]
    mel_spec = filters.astype(np.float32) @ magnitudes
    log_spec = np.log10(np.maximum(mel_spec, np.float32(1e-10)))
    log_spec = np.maximum(log_spec, log_spec.max() - np.float32(8.0))
    return ((log_spec + np.float32(4.0)) / np.float32(4.0)).astype(np.float32)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(here, "..", "..", "shared"))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures", "mel"))
    args = ap.parse_args()

    npz = np.load(os.path.join(args.shared, "models/whisper-test-assets/mel_filters.npz"))
    for n_mels in (80, 128):
        ours, theirs = slaney_filters(n_mels), npz[f"mel_{n_mels}"]
        rel = np.abs(ours - theirs).max() / np.abs(theirs).max()
        print(f"numpy slaney_filters({n_mels}) vs mel_filters.npz: max rel diff {rel:.3g}")
        assert rel < 1e-6

    os.makedirs(args.out, exist_ok=True)
    lines = []
    for name, clip, n_mels, padding, ranges in FIXTURES:
        audio = load_wav_s16_mono_16k(os.path.join(args.shared, clip))
        spec = log_mel(audio, npz[f"mel_{n_mels}"], padding)
        parts = [spec[:, a : a + k] for a, k in ranges]
        blob = np.concatenate(parts, axis=1)  # [n_mels, sum(k)], row-major
        fname = f"{name}.f32"
        blob.astype("<f4").tofile(os.path.join(args.out, fname))
        rng = ",".join(f"{a}+{k}" for a, k in ranges)
        lines.append(f"{fname}\t{clip}\t{n_mels}\t{padding}\t{spec.shape[1]}\t{rng}")
        print(f"{fname}: {n_mels} mels, {spec.shape[1]} frames total, kept {rng}")
    with open(os.path.join(args.out, "index.tsv"), "w") as f:
        f.write("# file\tclip (under shared/)\tn_mels\tpadding\tn_frames\tframes kept (first+count,...)\n")
        f.write("# little-endian float32 [n_mels][kept frames], written by tools/mel_reference.py\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
