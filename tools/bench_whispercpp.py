#!/usr/bin/env python3
"""bench_whispercpp.py — steno, whisper.cpp and faster-whisper on the same long file and the same
weights: WER, wall time, CPU time and peak RSS (issue #18: the quantized-weights table's
whisper.cpp column and base's long120 comparison).

Usage: tools/bench_whispercpp.py --whisper-cli PATH --ggml-dir DIR [--models tiny.en,base] [--skip-ct2]
           [--types f16,q8_0,q5_1,q4_0] [--fw-python PY] [--reps 3] [--threads 2] [--audio WAV]
           [--json OUT]

--whisper-cli is an already-built whisper.cpp `whisper-cli`; --ggml-dir holds
ggml-<model>-<type>.bin for each model and type (tools/peer_formats_torch.py writes them:
convert-pt-to-ggml.py's float16 file and whisper.cpp quantize's). --audio is a 16-kHz mono WAV
(whisper-cli reads WAV; named as the manifest's clip, e.g. /tmp/peers/tedlium_long_120s.wav made by `ffmpeg -i tedlium_long_120s.flac -ar 16000 -ac 1
-c:a pcm_s16le`), its reference transcript taken from shared/audio/manifest.tsv.

Engines per model (one process per run, `-t`/`--threads` threads, greedy, no temperature fallback,
previous text kept, timestamps on — each program's defaults otherwise):
  wcpp-TYPE    whisper-cli -m ggml-<model>-TYPE.bin -f WAV -t N -bs 1 -bo 1 -nf -np -otxt -of OUT
  steno-TYPE   steno transcribe --model ggml-<model>-TYPE.bin [--weights TYPE] -t N
               --temperature-increment-on-fallback None -f txt (quantized files run the q kernels)
  steno-ct2    steno transcribe --model <CTranslate2 dir> ... (the default: f16 fast path)
  fw-int8      faster-whisper WhisperModel(<CTranslate2 dir>, compute_type="int8", cpu_threads=N)
               .transcribe(WAV, beam_size=1, temperature=0.0)
Runs are interleaved (rep 1 of every engine, then rep 2, ...), medians reported; peak RSS and CPU
seconds (user + system) are the process's rusage (os.wait4, what /usr/bin/time -v reports). WER:
tests/py/steno_eval.py's English normalizer over the whole reference. The machine may be shared:
say so with the numbers.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "py"))
import steno_eval as se  # noqa: E402

FW = r"""
import sys
from faster_whisper import WhisperModel
m = WhisperModel(sys.argv[1], device="cpu", compute_type=sys.argv[2], cpu_threads=int(sys.argv[3]))
segs, _ = m.transcribe(sys.argv[4], beam_size=1, temperature=0.0)
open(sys.argv[5], "w", encoding="utf-8").write("".join(s.text for s in segs))
"""


def run(cmd, threads):
    """(rc, wall s, CPU s, peak RSS MB, stderr tail)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE")
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.monotonic() - t0
        err.seek(0)
        tail = err.read()[-1500:].decode("utf-8", "replace")
    return os.waitstatus_to_exitcode(status), dt, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0, tail


def reference(audio):
    stem = os.path.splitext(os.path.basename(audio))[0]
    for r in se.read_manifest():
        if os.path.splitext(r["file"])[0] == stem:
            return r["reference_text"]
    raise SystemExit("no reference for %s" % audio)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whisper-cli", required=True)
    ap.add_argument("--ggml-dir", required=True)
    ap.add_argument("--models", default="tiny.en,base")
    ap.add_argument("--types", default="f16,q8_0")
    ap.add_argument("--fw-python", default="")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--audio", default="/tmp/peers/tedlium_long_120s.wav")
    ap.add_argument("--json", default="")
    ap.add_argument("--skip-ct2", action="store_true", help="no steno-ct2 engine (the ggml files only)")
    a = ap.parse_args()
    steno = se.steno_bin()
    models_root = os.environ.get("STENO_MODELS_DIR") or os.path.expanduser("~/.cache/steno/models")
    ref = se.normalize_en(reference(a.audio))
    n = str(a.threads)
    tmp = tempfile.mkdtemp(prefix="bench_wcpp_")
    engines = []  # (model, name, argv builder, output text path)
    for model in a.models.split(","):
        ct2 = os.path.join(models_root, model)
        for t in a.types.split(","):
            g = os.path.join(a.ggml_dir, "ggml-%s-%s.bin" % (model, t))
            if not os.path.isfile(g):
                raise SystemExit("%s: missing (tools/peer_formats_torch.py makes it)" % g)
            of = os.path.join(tmp, "%s-wcpp-%s" % (model, t))
            engines.append((model, "wcpp-" + t, [a.whisper_cli, "-m", g, "-f", a.audio, "-t", n, "-bs", "1", "-bo", "1",
                                                  "-nf", "-np", "-otxt", "-of", of], of + ".txt"))
            od = os.path.join(tmp, "%s-steno-%s" % (model, t))
            w = ["--weights", t] if t != "f16" else []
            engines.append((model, "steno-" + t, [steno, "transcribe", "--model", g] + w +
                            ["-t", n, "--temperature-increment-on-fallback", "None", "-f", "txt", "-o", od,
                             "--verbose", "False", a.audio],
                            os.path.join(od, os.path.splitext(os.path.basename(a.audio))[0] + ".txt")))
        od = os.path.join(tmp, "%s-steno-ct2" % model)
        if not a.skip_ct2:
                engines.append((model, "steno-ct2", [steno, "transcribe", "--model", ct2, "-t", n,
                                                 "--temperature-increment-on-fallback", "None", "-f", "txt", "-o",
                                                 od, "--verbose", "False", a.audio],
                            os.path.join(od, os.path.splitext(os.path.basename(a.audio))[0] + ".txt")))
        if a.fw_python:
            of = os.path.join(tmp, "%s-fw-int8.txt" % model)
            engines.append((model, "fw-int8", [a.fw_python, "-c", FW, ct2, "int8", n, a.audio, of], of))
    for model, name, cmd, _ in engines:
        if name.startswith("steno"):
            os.makedirs(cmd[cmd.index("-o") + 1], exist_ok=True)
    res = {}
    for rep in range(a.reps):
        for model, name, cmd, txt in engines:
            rc, wall, cpu, rss, err = run(cmd, a.threads)
            if rc != 0:
                raise SystemExit("%s %s exited %d: %s" % (model, name, rc, err))
            with open(txt, encoding="utf-8") as f:
                hyp = se.normalize_en(f.read())
            wer = 100.0 * se.word_errors(ref, hyp) / len(ref)
            r = res.setdefault("%s %s" % (model, name), {"runs": []})
            r["runs"].append({"wall": wall, "cpu": cpu, "rss": rss, "wer": wer})
            print("rep %d %-8s %-12s wall %6.2f s  cpu %6.2f s  rss %6.1f MB  WER %.2f %%" %
                  (rep + 1, model, name, wall, cpu, rss, wer), flush=True)
            if a.json:
                with open(a.json, "w") as f:
                    json.dump(res, f, indent=1)
    print("\n| model | engine | file MB | WER % | wall s (median) | CPU s (median) | peak RSS MB (median) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for model, name, cmd, _ in engines:
        runs = res["%s %s" % (model, name)]["runs"]
        g = cmd[cmd.index("-m") + 1] if "-m" in cmd else (cmd[cmd.index("--model") + 1] if "--model" in cmd else "")
        size = os.path.getsize(g) / 1e6 if os.path.isfile(g) else float("nan")
        print("| %s | %s | %s | %.2f | %.2f | %.2f | %.0f |" % (
            model, name, "%.1f" % size if size == size else "–", statistics.median(x["wer"] for x in runs),
            statistics.median(x["wall"] for x in runs), statistics.median(x["cpu"] for x in runs),
            statistics.median(x["rss"] for x in runs)))


if __name__ == "__main__":
    main()
