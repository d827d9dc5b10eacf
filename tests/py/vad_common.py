"""vad_common.py — what tools/vad_fixtures.py (the oracle) and tests/py/test_vad.py share: the
option sets, the synthetic clips and where the Silero VAD weights live (standard library only).

The synthetic clips are 16-bit PCM WAV files at 16 kHz, so the samples steno decodes (s16/32768)
are exactly those the oracle is given; each builder is deterministic.
"""

import math
import os
import random

import steno_eval as se

# Option sets of faster-whisper 1.2.1's VadOptions: its defaults, and one that reaches every
# branch of get_speech_timestamps (short silences end spans, spans over 3 s are split, short ones
# dropped, an explicit neg_threshold).
OPTION_SETS = {
    "default": {},
    "tight": {"threshold": 0.45, "neg_threshold": 0.3, "min_speech_duration_ms": 250,
              "max_speech_duration_s": 3.0, "min_silence_duration_ms": 100, "speech_pad_ms": 30},
}

CLI_FLAGS = {"threshold": "--threshold", "neg_threshold": "--neg-threshold",
             "min_speech_duration_ms": "--min-speech-duration-ms",
             "max_speech_duration_s": "--max-speech-duration-s",
             "min_silence_duration_ms": "--min-silence-duration-ms", "speech_pad_ms": "--speech-pad-ms"}


def cli_args(option_set):
    args = []
    for k, v in OPTION_SETS[option_set].items():
        args += [CLI_FLAGS[k], str(v)]
    return args


def vad_model():
    """The converted weights: $STENO_VAD_MODEL, else the model cache's silero_vad/. Fails (no
    skip) when missing."""
    p = os.environ.get("STENO_VAD_MODEL")
    if not p:
        root = os.environ.get("STENO_MODELS_DIR") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
            "steno", "models")
        p = os.path.join(root, "silero_vad", "silero_vad_v6.safetensors")
    if not os.path.isfile(p):
        se.fail("Silero VAD weights not found at %s; run scripts/fetch_vad.sh (or set STENO_VAD_MODEL)" % p)
    return p


def build_synthetic(out_dir):
    """Writes the synthetic clips into out_dir; returns {name: path}."""
    a = se.read_wav16k(os.path.join(se.audio_dir(), "jfk.wav"))
    b = se.read_wav16k(os.path.join(se.audio_dir(), "ls_dev-clean_251-137823-0002.wav"))
    rng = random.Random(1234)
    clips = {
        # speech, 3 s of digital silence, speech: a pause longer than min_silence_duration_ms
        "pause_jfk_3s_251.wav": a + [0] * 48000 + b,
        # a steady 440 Hz tone, 5 s at -10 dBFS
        "tone_440hz.wav": [int(round(0.3 * 32767 * math.sin(2 * math.pi * 440 * n / 16000)))
                           for n in range(5 * 16000)],
        # low white noise, 4 s, about -50 dBFS
        "noise_low.wav": [rng.randint(-100, 100) for _ in range(4 * 16000)],
        # exactly 2 frames long: the padding adds a whole frame of zeros
        "speech_1024.wav": a[16000:17024],
    }
    paths = {}
    for name, s in clips.items():
        paths[name] = os.path.join(out_dir, name)
        se.write_wav16k(paths[name], s)
    return paths
