#!/usr/bin/env python3
"""Feeds raw PCM to `steno stream` through a pipe at a chosen pace and records when each output
line arrives: the test helper of tests/py/test_stream.py, usable by hand for the latency
measurement of docs/STREAMING.md.

  stream_pacer.py [--speed X] [--chunk-ms MS] AUDIO -- STENO_ARGS...

AUDIO is decoded to s16le 16 kHz mono with ffmpeg; `steno STENO_ARGS` must read it from stdin
(`stream --format s16le -`). --speed 1 writes it in real time (chunk i at t0 + i·chunk), 0 as fast
as the pipe takes it. Prints one JSON object: rc, stderr, lines [[seconds since t0, line], ...].
Standard library only.
"""
import json
import subprocess
import sys
import threading
import time


def decode_s16(path, seconds=None):
    cmd = ["ffmpeg", "-v", "error", "-nostdin", "-i", path]
    if seconds:
        cmd += ["-t", str(seconds)]
    cmd += ["-f", "s16le", "-ac", "1", "-ar", "16000", "-"]
    return subprocess.run(cmd, stdout=subprocess.PIPE, check=True).stdout


def pace(cmd, pcm, speed=1.0, chunk_ms=100, timeout=1800):
    """Runs cmd with pcm (bytes) on its stdin at speed × real time (0: unpaced). Returns
    (rc, [(t, line)], stderr, t_written): t in seconds since the first byte was written."""
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = []
    err = []
    t0 = time.monotonic()

    def read_out():
        for raw in p.stdout:
            lines.append((time.monotonic() - t0, raw.decode("utf-8", "replace").rstrip("\n")))

    def read_err():
        err.append(p.stderr.read().decode("utf-8", "replace"))

    threads = [threading.Thread(target=read_out), threading.Thread(target=read_err)]
    for t in threads:
        t.start()
    step = 32 * chunk_ms  # bytes of s16le 16 kHz per chunk
    try:
        for i in range(0, len(pcm), step):
            if speed > 0:
                due = t0 + (i / 32000.0) / speed
                now = time.monotonic()
                if due > now:
                    time.sleep(due - now)
            p.stdin.write(pcm[i:i + step])
            p.stdin.flush()
        p.stdin.close()
    except BrokenPipeError:
        pass
    t_written = time.monotonic() - t0
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    for t in threads:
        t.join()
    return rc, lines, "".join(err), t_written


def main(argv):
    speed, chunk_ms = 1.0, 100
    if "--" not in argv:
        sys.exit(__doc__)
    k = argv.index("--")
    opts, rest = argv[:k], argv[k + 1:]
    i = 0
    while i < len(opts) - 1:
        if opts[i] == "--speed":
            speed = float(opts[i + 1])
        elif opts[i] == "--chunk-ms":
            chunk_ms = int(opts[i + 1])
        else:
            sys.exit(__doc__)
        i += 2
    audio = opts[-1]
    rc, lines, err, _ = pace(rest, decode_s16(audio), speed, chunk_ms)
    print(json.dumps({"rc": rc, "stderr": err, "lines": lines}))


if __name__ == "__main__":
    main(sys.argv[1:])
