#!/usr/bin/env python3
"""bench_batched.py — batched long-form transcription (issue #14 item 3, "Batched mode"):
steno sequential vs steno --batch-size N vs faster-whisper's BatchedInferencePipeline (int8 and
float32), same threads, same inputs, interleaved (the engine order rotates every repetition),
medians and ratios, WER with tests/py/steno_eval.py's normalizer.

Engines (each a child process; the wall time includes loading the model, as bench/run_bench.py):
  base-bN       steno-bN with the binary given by --baseline (a before/after comparison)
  steno-seq     steno transcribe --threads T FILE                   (openai transcribe(): greedy,
                                                                      previous text, fallback)
  steno-bN      steno transcribe --threads T --batch-size N FILE    (beam 5, without timestamps)
  steno-bN-greedy  the same with --beam-size 1 (not faster-whisper's default; for the row step alone)
  steno-bN-q8_0 steno-bN with --weights q8_0 (Lab: int8 weights and activations, the x8 kernels;
                its WER is in the table beside faster-whisper int8's)
  steno-seq-q8_0  steno-seq with --weights q8_0
  fw-bN-int8    BatchedInferencePipeline(WhisperModel(dir, compute_type="int8", cpu_threads=T))
  fw-bN-float32   .transcribe(FILE, language="en", batch_size=N), defaults otherwise
Workloads: long120 (tedlium_long_120s.flac) and long10m (bench/run_bench.py build_long: the
English dev clips joined with 1 s silences, ~10 min). Run faster-whisper from its venv:
  STENO_BIN=build/steno ~/.cache/steno/venv-fw/bin/python bench/bench_batched.py --reps 3
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_bench as rb  # noqa: E402

FW_BATCHED = r"""
import json, sys
from faster_whisper import BatchedInferencePipeline, WhisperModel
model_dir, compute_type, threads, bs, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
model = WhisperModel(model_dir, device="cpu", compute_type=compute_type, cpu_threads=threads, num_workers=1)
segments, info = BatchedInferencePipeline(model).transcribe(path, language="en", batch_size=bs)
sys.stdout.write(json.dumps({"text": "".join(s.text for s in segments)}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/steno/models/tiny.en"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workloads", default="long120,long10m")
    ap.add_argument("--long-seconds", type=float, default=600)
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "steno-bench"))
    ap.add_argument("--shared", default=os.environ.get("STENO_SHARED", "/work/shared"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--engines", default=None, help="comma-separated subset of the engine names (default: all)")
    ap.add_argument("--baseline", default=None, metavar="BIN",
                    help="another steno binary (e.g. the previous commit's build): adds engine base-bN, its "
                         "--batch-size N run, interleaved with the others (before/after in one run)")
    a = ap.parse_args()
    steno = os.environ.get("STENO_BIN", os.path.join(rb.SOURCE, "build", "steno"))
    N, T = a.batch_size, a.threads

    def steno_cmd(extra, binary=None):
        return lambda path, tmp: [binary or steno, "transcribe", "--model", a.model, "--threads", str(T), "--output-format",
                                  "json", "--output-dir", tmp] + extra + [path]

    def steno_text(path, tmp, stdout):
        return rb.read_json(os.path.join(tmp, rb.stem(path) + ".json"))["text"]

    def fw_cmd(ct):
        return lambda path, tmp: [sys.executable, "-c", FW_BATCHED, a.model, ct, str(T), str(N), path]

    def fw_text(path, tmp, stdout):
        return json.loads(stdout)["text"]

    engines = [("steno-seq", steno_cmd([]), steno_text), ("steno-b%d" % N, steno_cmd(["--batch-size", str(N)]), steno_text),
               ("steno-b%d-greedy" % N, steno_cmd(["--batch-size", str(N), "--beam-size", "1"]), steno_text),
               ("steno-b%d-q8_0" % N, steno_cmd(["--batch-size", str(N), "--weights", "q8_0"]), steno_text),
               ("steno-seq-q8_0", steno_cmd(["--weights", "q8_0"]), steno_text),
               ("fw-b%d-int8" % N, fw_cmd("int8"), fw_text), ("fw-b%d-float32" % N, fw_cmd("float32"), fw_text)]
    if a.baseline:
        if not os.access(a.baseline, os.X_OK):
            sys.exit("bench_batched.py: --baseline %s: not an executable" % a.baseline)
        engines.insert(2, ("base-b%d" % N, steno_cmd(["--batch-size", str(N)], a.baseline), steno_text))
    if a.engines:
        want = a.engines.split(",")
        unknown = [w for w in want if w not in [e[0] for e in engines]]
        if any(w.startswith("base-b") for w in unknown) and not a.baseline:
            sys.exit("bench_batched.py: engine %s needs --baseline BIN (the other steno binary)" %
                     [w for w in unknown if w.startswith("base-b")][0])
        if unknown:
            sys.exit("bench_batched.py: unknown engine(s) %s (have: %s)" % (",".join(unknown), ",".join(e[0] for e in engines)))
        engines = [e for e in engines if e[0] in want]
    rows = rb.read_manifest(a.shared)
    inputs = []
    for w in a.workloads.split(","):
        if w == "long120":
            r = [r for r in rows if r["file"] == "tedlium_long_120s.flac"][0]
            inputs.append(("long120", r["path"], r["reference_text"], r["seconds"]))
        elif w == "long10m":
            p, ref, secs = rb.build_long(rows, a.long_seconds, a.work_dir)
            inputs.append(("long10m", p, ref, secs))
    normalize, word_errors = rb.load_wer()
    runs = []
    for rep in range(a.reps):
        for wname, path, ref, secs in inputs:
            order = engines[rep % len(engines):] + engines[:rep % len(engines)]
            for name, cmd, text in order:
                with tempfile.TemporaryDirectory() as tmp:
                    res = rb.run_child(cmd(path, tmp), dict(os.environ), 3600)
                    if res["rc"] != 0:
                        print("FAIL %s %s: %s" % (name, wname, res["stderr"][-2000:]), file=sys.stderr)
                        continue
                    hyp = text(path, tmp, res["stdout"])
                rw, hw = normalize(ref), normalize(hyp)
                wer = 100.0 * word_errors(rw, hw) / max(1, len(rw))
                runs.append({"rep": rep, "workload": wname, "engine": name, "wall": res["wall"],
                             "cpu": res["cpu"], "maxrss_mb": res["maxrss_mb"], "wer": wer})
                print("rep %d %-8s %-16s wall %7.2f s  cpu %7.2f s  rss %6.0f MB  WER %.2f" %
                      (rep, wname, name, res["wall"], res["cpu"], res["maxrss_mb"], wer), flush=True)
    print()
    print("| workload | engine | median wall s | min-max | RTF | WER %% | peak RSS MB | / fw-b%d-int8 |" % N)
    print("|---|---|---|---|---|---|---|---|")
    summary = {}
    for wname, path, ref, secs in inputs:
        med = {}
        for name, _, _ in engines:
            w = [r["wall"] for r in runs if r["workload"] == wname and r["engine"] == name]
            if w:
                med[name] = statistics.median(w)
        base = med.get("fw-b%d-int8" % N)
        for name, _, _ in engines:
            rs = [r for r in runs if r["workload"] == wname and r["engine"] == name]
            if not rs:
                continue
            w = [r["wall"] for r in rs]
            summary[(wname, name)] = med[name]
            print("| %s | %s | %.2f | %.2f-%.2f | %.3f | %.2f | %.0f | %s |" % (
                wname, name, med[name], min(w), max(w), med[name] / secs, rs[0]["wer"],
                max(r["maxrss_mb"] for r in rs), "%.2f" % (med[name] / base) if base else "-"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": rb.machine_info(), "runs": runs, "args": vars(a)}, f, indent=1)


if __name__ == "__main__":
    main()
