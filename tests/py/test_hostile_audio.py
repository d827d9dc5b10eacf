"""test_hostile_audio.py — small audio files that declare absurd parameters (issue 19).

The 76-byte WAV of issue 19 (IMA ADPCM, mono, 1 000 000 032 Hz, no samples) made `steno
transcribe` spend 27 s and 2.2 GB inside libswresample (its filter bank grows with the rate ratio)
and exit 0. Contract checked, for it, its 1 040 203 392 Hz variant and a few neighbours:
  * exit 1 and exactly ONE line on stderr naming the file and the declared value
    ("steno: <path>: declared sample rate 1000000032 Hz is outside 1000..768000 Hz");
  * under 1 s of wall time and under 100 MB of peak RSS (printed), in the Release build and under
    ASan+UBSan (the same file runs there); the model is not even loaded for a file that fails.
The bounds themselves are documented at STENO_AUDIO_MIN_RATE in include/steno.h.

Standard library only. Environment: STENO_BIN, STENO_MODEL_DIR (see steno_eval.py).
Peak RSS is the child's own ru_maxrss, from os.wait4.
"""

import base64
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

STENO = se.steno_bin()
MODEL = se.model_dir()

ISSUE_WAV = base64.b64decode(
    "UklGRlYIAABXQVZFZm10IBQAAAARAAEAIMqaOwAAAACAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAGRhdGEAAAAA"
    "AAAAAA==")
MAX_SECONDS = 1.0
MAX_RSS_MB = 100.0
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")


def with_rate(wav, rate):
    b = bytearray(wav)
    struct.pack_into("<I", b, 24, rate)
    return bytes(b)


def pcm_wav(rate, channels, frames=4):
    """A 16-bit PCM WAV header declaring rate and channels, with `frames` frames of zeros."""
    data = b"\0" * (frames * channels * 2)
    fmt = struct.pack("<HHIIHH", 1, channels, rate, rate * channels * 2, channels * 2, 16)
    return (b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data)) + b"WAVE" +
            b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data)


def run_measured(path):
    """Runs steno transcribe on path; returns (exit status, stderr, seconds, peak RSS in MB)."""
    with tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen([STENO, "transcribe", "--model", MODEL, "-o", "-", path],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    return p.returncode, text, dt, ru.ru_maxrss / 1024.0  # ru_maxrss is in KiB on Linux


def main():
    tmp = tempfile.mkdtemp(prefix="steno_hostile_")
    cases = [
        ("issue19_1000000032hz.wav", ISSUE_WAV, "declared sample rate 1000000032 Hz"),
        ("issue19_1040203392hz.wav", with_rate(ISSUE_WAV, 1040203392), "declared sample rate 1040203392 Hz"),
        ("rate_999hz.wav", pcm_wav(999, 1), "declared sample rate 999 Hz"),
        ("rate_768001hz.wav", pcm_wav(768001, 1), "declared sample rate 768001 Hz"),
        ("channels_65.wav", pcm_wav(16000, 65), "declared channel count 65"),
    ]
    n_fail = 0
    for name, data, want in cases:
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        rc, err, dt, rss = run_measured(path)
        lines = err.strip().splitlines()
        problems = []
        if rc != 1:
            problems.append("exit %d, expected 1" % rc)
        if any(m in err for m in SANITIZER_MARKS):
            problems.append("sanitizer report")
        if len(lines) != 1:
            problems.append("%d lines on stderr, expected 1" % len(lines))
        elif not (lines[0].startswith("steno: %s: " % path) and want in lines[0]):
            problems.append("message should name the file and say %r" % want)
        if dt >= MAX_SECONDS:
            problems.append("took %.2f s (limit %.1f)" % (dt, MAX_SECONDS))
        if rss >= MAX_RSS_MB:
            problems.append("peak RSS %.1f MB (limit %.0f)" % (rss, MAX_RSS_MB))
        print("%s %s (%d bytes): exit %d, %.3f s, peak RSS %.1f MB: %s%s" % (
            "FAIL" if problems else "PASS", name, len(data), rc, dt, rss, lines[0] if lines else "",
            "".join("\n  " + p for p in problems)), flush=True)
        n_fail += bool(problems)
        os.unlink(path)
    os.rmdir(tmp)
    print("%d passed, %d failed" % (len(cases) - n_fail, n_fail), flush=True)
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
