"""test_memory_flat.py — peak RSS of `steno transcribe` does not grow with the input's length
(issue #15 item 6: the audio is decoded and the log-mel spectrogram computed a window at a time).

Builds WAVs of 10 and 30 minutes by looping the 16 kHz mono 16-bit dev clips of shared/audio, runs
  steno transcribe --model tiny.en --output-format json --clip-timestamps S1,E1,...,S4,E4 FILE
on each, with four 30-s clips spread over the file (its start, two in the middle, its end), and
measures each process's peak RSS (os.wait4). The whole file is still decoded twice (the scan for the
log-mel maximum, then the window reader, which decodes through to every clip) and windows are
computed at the end of the file, so anything held in proportion to the length shows; decoding every
window of a 30-min file (about 2.5 min on CI's 2 cores) is the benchmark's job:
  python3 tests/py/test_memory_flat.py --bench     (10 min, 30 min and 2 h, whole files)
which prints the same table; docs/PERFORMANCE.md records it. Requires max/min peak RSS <= 1.15.
The sanitizer build does not run this test (scripts/test.sh: ASan's shadow memory is not the
program's); the C test test_audio_stream checks, sanitized, that windows and results are identical.
Standard library only.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import wave

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

MAX_RATIO = 1.15


def looped_pcm():
    """The 16-bit 16 kHz mono dev clips' samples, back to back (bytes)."""
    pcm = []
    for r in se.read_manifest():
        if r["sample_rate"] != "16000" or r["channels"] != "1" or not r["file"].endswith(".wav"):
            continue
        with wave.open(r["path"]) as w:
            if w.getsampwidth() == 2:
                pcm.append(w.readframes(w.getnframes()))
    data = b"".join(pcm)
    if len(data) < 32000 * 60:
        se.fail("fewer than 60 s of 16 kHz mono 16-bit clips in shared/audio")
    return data


def write_wav(path, pcm, seconds):
    need = seconds * 32000
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        left = need
        while left > 0:
            chunk = pcm[:left]
            w.writeframes(chunk)
            left -= len(chunk)


def peak_rss(cmd):
    """(exit status, peak RSS in MB, wall seconds, stderr) of cmd."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return p.returncode, ru.ru_maxrss / 1024.0, time.monotonic() - t0, err.read().decode("utf-8", "replace")


def main():
    bench = "--bench" in sys.argv[1:]
    if se.sanitize():
        se.fail("test_memory_flat measures RSS: run it in an uninstrumented build (scripts/test.sh excludes it "
                "from the sanitizer run)")
    lengths = [600, 1800, 7200] if bench else [600, 1800]
    pcm = looped_pcm()
    rows = []
    with tempfile.TemporaryDirectory(prefix="steno_mem_") as tmp:
        for seconds in lengths:
            path = os.path.join(tmp, "loop_%d.wav" % seconds)
            write_wav(path, pcm, seconds)
            cmd = [se.steno_bin(), "transcribe", "--model", se.model_dir(), "--output-format", "json",
                   "--output-dir", tmp]
            if not bench:
                starts = [0, seconds // 3, 2 * seconds // 3, seconds - 30]
                cmd += ["--clip-timestamps", ",".join("%d,%d" % (s, s + 30) for s in starts)]
            rc, rss, wall, err = peak_rss(cmd + [path])
            if rc != 0:
                se.fail("steno transcribe exited %d on %s:\n%s" % (rc, path, err[-2000:]))
            with open(os.path.join(tmp, "loop_%d.json" % seconds), encoding="utf-8") as f:
                res = json.load(f)
            n_seg = len(res.get("segments", []))
            if n_seg == 0:
                se.fail("%s: no segments transcribed" % path)
            last_end = max(s["end"] for s in res["segments"])
            if last_end < seconds - 60:
                se.fail("%s: the last segment ends at %.1f s: the end of the file was not transcribed" % (path, last_end))
            rows.append((seconds, os.path.getsize(path), rss, wall, n_seg, last_end))
            os.unlink(path)
    print("%-10s %12s %14s %10s %9s %12s" % ("input", "WAV bytes", "peak RSS MB", "wall s", "segments", "last end s"))
    for seconds, size, rss, wall, n_seg, last_end in rows:
        print("%-10s %12d %14.1f %10.1f %9d %12.1f" % ("%d min" % (seconds // 60), size, rss, wall, n_seg, last_end))
    ratio = max(r[2] for r in rows) / min(r[2] for r in rows)
    print("max/min peak RSS: %.3f (limit %.2f)%s" % (ratio, MAX_RATIO,
                                                     "" if bench else "; four 30-s clips of each file"))
    if ratio > MAX_RATIO:
        se.fail("peak RSS grows with the input's length: %.3f > %.2f" % (ratio, MAX_RATIO))
    print("PASS")


if __name__ == "__main__":
    main()
