#!/usr/bin/env python3
"""bench_audio_stream.py — wall time of steno_transcribe over steno_audio_load's samples (the whole
file in memory) against steno_transcribe_audio over steno_audio_open (a window at a time), same
file, same model, same threads, runs interleaved A B A B ..., medians; also checks that the two
give the same text. Usage:
  python3 tools/bench_audio_stream.py --lib build/libsteno.so --model ~/.cache/steno/models/tiny.en \
      --threads 2 --reps 3 FILE
"""
import argparse
import ctypes as C
import statistics
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("file")
    a = ap.parse_args()
    lib = C.CDLL(a.lib)
    lib.steno_errmsg.restype = C.c_char_p
    w = C.c_void_p()
    if lib.steno_whisper_load(a.model.encode(), a.threads, C.byref(w)) != 0:
        raise SystemExit(lib.steno_errmsg().decode())
    path = a.file.encode()

    def text_of(res):
        # the text through steno_write_result("txt"): no struct layout is mirrored here
        import os
        import tempfile
        libc = C.CDLL(None)
        libc.fopen.restype = C.c_void_p
        libc.fopen.argtypes = [C.c_char_p, C.c_char_p]
        libc.fclose.argtypes = [C.c_void_p]
        fd, name = tempfile.mkstemp()
        os.close(fd)
        f = libc.fopen(name.encode(), b"w")
        lib.steno_write_result(res, b"txt", C.c_void_p(f))
        libc.fclose(f)
        with open(name, encoding="utf-8") as fh:
            t = fh.read()
        os.unlink(name)
        return t

    def run_load():
        t0 = time.monotonic()
        ptr, n = C.POINTER(C.c_float)(), C.c_size_t()
        if lib.steno_audio_load(path, C.byref(ptr), C.byref(n)) != 0:
            raise SystemExit(lib.steno_errmsg().decode())
        res = C.c_void_p()
        if lib.steno_transcribe(w, ptr, n, None, C.byref(res)) != 0:
            raise SystemExit(lib.steno_errmsg().decode())
        dt = time.monotonic() - t0
        C.CDLL(None).free(ptr)
        t = text_of(res)
        lib.steno_result_free(res)
        return dt, t

    def run_stream():
        t0 = time.monotonic()
        au = C.c_void_p()
        if lib.steno_audio_open(path, C.byref(au)) != 0:
            raise SystemExit(lib.steno_errmsg().decode())
        res = C.c_void_p()
        if lib.steno_transcribe_audio(w, au, None, C.byref(res)) != 0:
            raise SystemExit(lib.steno_errmsg().decode())
        lib.steno_audio_close(au)
        dt = time.monotonic() - t0
        t = text_of(res)
        lib.steno_result_free(res)
        return dt, t

    tl, ts = [], []
    texts = set()
    for _ in range(a.reps):
        dt, t = run_load()
        tl.append(dt)
        texts.add(t)
        dt, t = run_stream()
        ts.append(dt)
        texts.add(t)
        print("load %.2f s   stream %.2f s" % (tl[-1], ts[-1]), flush=True)
    ml, ms = statistics.median(tl), statistics.median(ts)
    print("median: load+steno_transcribe %.2f s, open+steno_transcribe_audio %.2f s, ratio %.3f; texts %s"
          % (ml, ms, ms / ml, "identical" if len(texts) == 1 else "DIFFER"))
    lib.steno_whisper_free(w)


if __name__ == "__main__":
    main()
