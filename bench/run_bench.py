#!/usr/bin/env python3
"""run_bench.py — steno against its Whisper peers on identical inputs, same thread count, greedy.

Engines (each a named command template; one OS process per input file, so model loading and
start-up count, as a user of each command line pays them):

  steno[VARIANT]   $STENO_BIN transcribe --model DIR --threads N --output-format json
                   --output-dir TMP [--path VARIANT] FILE
                   (--steno-paths fast,faithful adds one engine per path; "" = steno's default)
  whisper.cpp      $WHISPER_CPP_BIN (whisper-cli) -m $WHISPER_CPP_MODEL -t N -l en -bs 1 -bo 1
                   -np -oj -of TMP/STEM FILE        (greedy; temperature fallback on, its default)
                   When WHISPER_CPP_MODEL is unset, the driver writes one with
                   `steno convert --to ggml` from the same CTranslate2 model (identical weights).
                   WHISPER_CPP_MODEL=a.bin:b.bin adds one engine per model ("whisper.cpp",
                   "whisper.cpp[b]", the file name without ggml- and .bin), e.g. the f16 and
                   the --f32 conversion.
  fw-int8,         python3 -c <faster-whisper script> DIR COMPUTE_TYPE N FILE: WhisperModel(DIR,
  fw-float32       device="cpu", compute_type=..., cpu_threads=N, num_workers=1).transcribe(
                   language="en", beam_size=1, best_of=1, temperature=(0.0, 0.2, ..., 1.0),
                   vad_filter=False, condition_on_previous_text=True)  (openai-whisper defaults)

Every child gets OMP_NUM_THREADS=N and OPENBLAS_NUM_THREADS=N (and OMP_WAIT_POLICY with
--omp-wait-policy). Each engine's decoding is greedy
with openai-whisper's temperature fallback (0.0 → 1.0 in 0.2 steps, compression ratio 2.4,
log-prob −1.0, no-speech 0.6).

Workloads:
  clips    every English clip of $STENO_SHARED/audio/manifest.tsv except the long-form TED-LIUM
           one (one process per clip; the time is the sum over clips)
  long120  $STENO_SHARED/audio/tedlium_long_120s.flac
  long10m  a ~10-minute 16 kHz mono WAV the driver builds by joining the English clips of the
           manifest (in manifest order, cycling until --long-seconds) with 1 s of silence
           between them; the reference is their references joined. Decoding/resampling uses
           PyAV (faster-whisper's dependency) or the ffmpeg command; cached in --work-dir.

Within each repetition every input runs once per engine, the engines in a rotated order
(interleaved, so slow drifts of the machine hit every engine alike). One untimed warm-up run per
engine comes first (--no-warmup skips it). Reported: the median over repetitions of wall seconds,
the min–max, the real-time factor (wall / audio seconds), the peak RSS of the child process
(ru_maxrss from os.wait4; for clips, the largest over the clips), the WER (tests/py/
steno_eval.py's English normalizer; clips: total errors / total reference words), and the ratio
of every engine's median to every other's.

Output: a markdown report on stdout, every run and the summary as JSON in --json.

A missing peer (no whisper-cli, no model, no faster_whisper module, no steno binary) is skipped
with a note in the report; the bench never fails because a peer is absent (CI never runs it).

Example:
  STENO_BIN=build/steno WHISPER_CPP_BIN=~/whisper.cpp/build/bin/whisper-cli \\
    python3 bench/run_bench.py --workloads long120,long10m --reps 3 --json bench.json
"""

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
SR = 16000

FW_SCRIPT = r"""
import json, sys
from faster_whisper import WhisperModel
model_dir, compute_type, threads, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
model = WhisperModel(model_dir, device="cpu", compute_type=compute_type, cpu_threads=threads,
                     num_workers=1)
segments, info = model.transcribe(
    path, language="en", task="transcribe", beam_size=1, best_of=1,
    temperature=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0], compression_ratio_threshold=2.4,
    log_prob_threshold=-1.0, no_speech_threshold=0.6, condition_on_previous_text=True,
    vad_filter=False, word_timestamps=False, without_timestamps=False)
text = "".join(s.text for s in segments)
sys.stdout.write(json.dumps({"text": text}))
"""


def note(msg):
    print("# " + msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------
# WER (the project's normalizer: tests/py/steno_eval.py)
# ------------------------------------------------------------------------------------------------

def load_wer():
    """Returns (normalize, word_errors) from tests/py/steno_eval.py, or (None, None)."""
    sys.path.insert(0, os.path.join(SOURCE, "tests", "py"))
    try:
        import steno_eval
        return steno_eval.normalize_en, steno_eval.word_errors
    except Exception as e:  # noqa: BLE001 - report and go on without WER
        note("WER disabled: cannot import tests/py/steno_eval.py (%s)" % e)
        return None, None


# ------------------------------------------------------------------------------------------------
# Child processes with peak RSS
# ------------------------------------------------------------------------------------------------

def run_child(cmd, env, timeout):
    """Runs cmd; returns dict(rc, wall, cpu, maxrss_mb, stdout, stderr). Peak RSS and CPU
    seconds (user + system) from os.wait4's rusage of that one child (Linux: ru_maxrss in KiB;
    the child's own children, if any, are not counted). The child leads its own process group
    and is killed (SIGKILL to the group) after timeout seconds (rc = -9, timed_out)."""
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    timed_out = [False]

    def kill():
        timed_out[0] = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        _, status, ru = os.wait4(p.pid, 0)
    except BaseException:  # Ctrl-C: the child leads its own session, so stop it here
        kill()
        os.wait4(p.pid, 0)
        raise
    finally:
        timer.cancel()
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)  # so that Popen does not wait again
    out.seek(0)
    err.seek(0)
    res = {"rc": p.returncode, "wall": wall, "maxrss_mb": ru.ru_maxrss / 1024.0,
           "cpu": ru.ru_utime + ru.ru_stime,
           "stdout": out.read().decode("utf-8", "replace"),
           "stderr": err.read().decode("utf-8", "replace"), "timed_out": timed_out[0]}
    out.close()
    err.close()
    return res


# ------------------------------------------------------------------------------------------------
# Engines
# ------------------------------------------------------------------------------------------------

class Engine:
    """A named command template. cmd(path, tmp) -> argv; text(path, tmp, stdout) -> transcript."""

    def __init__(self, name, cmd, text, describe):
        self.name, self.cmd, self.text, self.describe = name, cmd, text, describe


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def read_json(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return json.load(f)


def steno_engines(args, notes):
    bin_ = os.environ.get("STENO_BIN") or args.steno_bin
    if not bin_:
        for cand in (os.path.join(SOURCE, "build", "steno"), shutil.which("steno")):
            if cand and os.path.isfile(cand):
                bin_ = cand
                break
    if not bin_ or not os.access(bin_, os.X_OK):
        notes.append("steno skipped: no executable (set STENO_BIN)")
        return [], None
    variants = [v.strip() for v in args.steno_paths.split(",")] if args.steno_paths else [""]
    envs = [("", [])]
    for spec in args.steno_env or []:  # LABEL:VAR=VALUE[,VAR=VALUE]: one more engine per path
        label, _, assigns = spec.partition(":")
        envs.append((label, ["env"] + assigns.split(",")))
    engines = []
    for v, (label, prefix) in [(v, e) for v in variants for e in envs]:
        extra = ["--path", v] if v else []
        tags = "+".join(t for t in (v, label) if t)
        name = "steno[%s]" % tags if tags else "steno"

        def cmd(path, tmp, extra=extra, prefix=prefix):
            return prefix + [bin_, "transcribe", "--model", args.model, "--threads", str(args.threads),
                    "--output-format", "json", "--output-dir", tmp] + extra + [path]

        def text(path, tmp, stdout):
            return read_json(os.path.join(tmp, stem(path) + ".json"))["text"]

        engines.append(Engine(name, cmd, text, " ".join(cmd("FILE", "TMP"))))
    return engines, bin_


def whisper_cpp_engines(args, notes, steno_bin):
    """whisper-cli over each model of WHISPER_CPP_MODEL (several separated by ':': the first is
    "whisper.cpp", the others "whisper.cpp[<file name>]"), or over one converted by steno."""
    bin_ = os.environ.get("WHISPER_CPP_BIN") or shutil.which("whisper-cli")
    if not bin_ or not os.access(bin_, os.X_OK):
        notes.append("whisper.cpp skipped: no whisper-cli (set WHISPER_CPP_BIN)")
        return []
    models = [m for m in os.environ.get("WHISPER_CPP_MODEL", "").split(os.pathsep) if m]
    if not models:
        model = os.path.join(args.work_dir, "ggml-%s.bin" % os.path.basename(
            os.path.normpath(args.model)))
        if not os.path.isfile(model):
            if not steno_bin:
                notes.append("whisper.cpp skipped: no WHISPER_CPP_MODEL and no steno to convert")
                return []
            cmd = [steno_bin, "convert", "--to", "ggml", "--model", args.model, "-o", model]
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if r.returncode != 0:
                notes.append("whisper.cpp skipped: no WHISPER_CPP_MODEL, and `%s` failed: %s" %
                             (" ".join(cmd), r.stderr.decode(errors="replace").strip()[-300:]))
                return []
            notes.append("whisper.cpp model written by: " + " ".join(cmd))
        models = [model]
    engines = []
    for i, model in enumerate(models):
        if not os.path.isfile(model):
            notes.append("whisper.cpp skipped for %s: no such file" % model)
            continue

        def cmd(path, tmp, model=model):
            return [bin_, "-m", model, "-t", str(args.threads), "-l", "en", "-bs", "1", "-bo",
                    "1", "-np", "-oj", "-of", os.path.join(tmp, stem(path)), path]

        def text(path, tmp, stdout):
            j = read_json(os.path.join(tmp, stem(path) + ".json"))
            return "".join(s.get("text", "") for s in j.get("transcription", []))

        tag = stem(model)
        tag = tag[5:] if tag.startswith("ggml-") else tag
        name = "whisper.cpp" if i == 0 else "whisper.cpp[%s]" % tag
        engines.append(Engine(name, cmd, text, " ".join(cmd("FILE", "TMP"))))
    return engines


def faster_whisper_engines(args, notes):
    r = subprocess.run([sys.executable, "-c", "import faster_whisper, ctranslate2; "
                        "print(faster_whisper.__version__, ctranslate2.__version__)"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        notes.append("faster-whisper skipped: the faster_whisper module is not installed")
        return []
    notes.append("faster-whisper %s, ctranslate2 %s" % tuple(r.stdout.decode().split()))
    engines = []
    for ct in [c.strip() for c in args.fw_compute_types.split(",") if c.strip()]:
        def cmd(path, tmp, ct=ct):
            return [sys.executable, "-c", FW_SCRIPT, args.model, ct, str(args.threads), path]

        def text(path, tmp, stdout):
            return json.loads(stdout)["text"]

        engines.append(Engine("fw-" + ct, cmd, text,
                              "python3 -c FW_SCRIPT %s %s %d FILE" % (args.model, ct, args.threads)))
    return engines


# ------------------------------------------------------------------------------------------------
# Workloads
# ------------------------------------------------------------------------------------------------

def read_manifest(shared):
    rows = []
    with open(os.path.join(shared, "audio", "manifest.tsv"), encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            line = line.rstrip("\n")
            if line:
                row = dict(zip(header, line.split("\t")))
                row["seconds"] = float(row["seconds"])
                row["path"] = os.path.join(shared, "audio", row["file"])
                rows.append(row)
    return rows


def decode_16k_s16(path):
    """The file as 16 kHz mono signed 16-bit PCM bytes: PyAV (as faster-whisper decodes), else the
    ffmpeg command."""
    try:
        import av  # noqa: F401
        from faster_whisper.audio import decode_audio
        import numpy as np
        x = decode_audio(path, sampling_rate=SR)
        return (np.clip(x, -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes()
    except ImportError:
        pass
    if shutil.which("ffmpeg"):
        r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "s16le",
                            "-ac", "1", "-ar", str(SR), "-"], stdout=subprocess.PIPE)
        if r.returncode == 0:
            return r.stdout
    raise RuntimeError("cannot decode %s: neither PyAV (faster-whisper) nor ffmpeg is available"
                       % path)


def build_long(rows, target_s, work_dir):
    """Joins the English clips (manifest order, cycled) with 1 s silences until >= target_s.
    Returns (wav path, reference text, seconds); cached by target in work_dir."""
    base = os.path.join(work_dir, "long_%ds" % int(target_s))
    wav_path, meta_path = base + ".wav", base + ".json"
    if os.path.isfile(wav_path) and os.path.isfile(meta_path):
        meta = read_json(meta_path)
        return wav_path, meta["reference"], meta["seconds"]
    en = [r for r in rows if r["language"] == "en"]
    silence = b"\0\0" * SR
    pcm, refs, files, total = [], [], [], 0.0
    cache = {}
    while total < target_s:
        for r in en:
            if total >= target_s:
                break
            if r["file"] not in cache:
                cache[r["file"]] = decode_16k_s16(r["path"])
            data = cache[r["file"]]
            pcm += [data, silence]
            refs.append(r["reference_text"])
            files.append(r["file"])
            total += len(data) / 2 / SR + 1.0
    os.makedirs(work_dir, exist_ok=True)
    with wave.open(wav_path + ".part", "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        for chunk in pcm:
            w.writeframes(chunk)
    os.replace(wav_path + ".part", wav_path)
    meta = {"reference": " ".join(refs), "seconds": total, "files": files,
            "recipe": "English clips of manifest.tsv in order, cycled, each followed by 1 s of "
                      "silence, until >= %g s; 16 kHz mono s16 (PyAV/ffmpeg resampling)" % target_s}
    with open(meta_path, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
    return wav_path, meta["reference"], total


def workloads(args, notes):
    rows = read_manifest(args.shared)
    out = []
    want = [w.strip() for w in args.workloads.split(",") if w.strip()]
    for w in want:
        if w == "clips":
            items = [(r["path"], r["reference_text"], r["seconds"]) for r in rows
                     if r["language"] == "en" and r["file"] != "tedlium_long_120s.flac"]
            if args.max_clips:
                items = items[:args.max_clips]
            out.append(("clips", items))
        elif w == "long120":
            r = [r for r in rows if r["file"] == "tedlium_long_120s.flac"]
            if not r:
                notes.append("long120 skipped: tedlium_long_120s.flac not in the manifest")
                continue
            out.append(("long120", [(r[0]["path"], r[0]["reference_text"], r[0]["seconds"])]))
        elif w == "long10m":
            try:
                p, ref, secs = build_long(rows, args.long_seconds, args.work_dir)
            except RuntimeError as e:
                notes.append("long10m skipped: %s" % e)
                continue
            out.append(("long10m", [(p, ref, secs)]))
        else:
            sys.exit("run_bench.py: unknown workload %r (clips, long120, long10m)" % w)
    return out


# ------------------------------------------------------------------------------------------------
# Running and reporting
# ------------------------------------------------------------------------------------------------

def machine_info():
    info = {"python": platform.python_version(), "platform": platform.platform(),
            "cpus_online": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            info["mem_total_kb"] = int(f.readline().split()[1])
    except OSError:
        pass
    return info


def fmt(x, spec):
    return "—" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    ap.add_argument("--model", default=os.environ.get("STENO_MODEL_DIR") or
                    os.path.join(cache, "steno", "models", "tiny.en"),
                    help="CTranslate2 Whisper model directory (default: $STENO_MODEL_DIR, else "
                         "~/.cache/steno/models/tiny.en)")
    ap.add_argument("--shared", default=os.environ.get("STENO_SHARED") or
                    os.path.join(os.path.dirname(SOURCE), "shared"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workloads", default="clips,long120,long10m")
    ap.add_argument("--engines", default="",
                    help="comma-separated names to keep (default: every available engine)")
    ap.add_argument("--steno-bin", default=None, help="default: $STENO_BIN, else build/steno")
    ap.add_argument("--steno-paths", default="",
                    help="comma-separated --path variants of steno (e.g. fast,faithful); "
                         "empty: one engine with steno's default path")
    ap.add_argument("--steno-env", action="append", metavar="LABEL:VAR=VALUE[,VAR=VALUE]",
                    help="also run each steno path with these environment variables, as steno[PATH+LABEL] "
                         "(e.g. sse-blas:OPENBLAS_CORETYPE=Prescott)")
    ap.add_argument("--fw-compute-types", default="int8,float32")
    ap.add_argument("--long-seconds", type=float, default=600.0)
    ap.add_argument("--max-clips", type=int, default=0, help="clips workload: first N only")
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "steno-bench"))
    ap.add_argument("--json", default=None, help="write every run and the summary here")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per process")
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--omp-wait-policy", choices=("passive", "active"), default=None,
                    help="set OMP_WAIT_POLICY for every child (default: unset, each engine's "
                         "own default). On a machine shared with other work, OpenMP's spinning "
                         "workers (whisper.cpp's default build, CTranslate2) lose whole time "
                         "slices; passive makes them sleep instead")
    args = ap.parse_args()
    if args.reps < 1 or args.threads < 1:
        ap.error("--reps and --threads must be >= 1")
    args.model = os.path.abspath(args.model)
    os.makedirs(args.work_dir, exist_ok=True)

    notes = []
    if not os.path.isfile(os.path.join(args.model, "model.bin")):
        sys.exit("run_bench.py: no model.bin in %s (--model)" % args.model)
    engines, steno_bin = steno_engines(args, notes)
    engines += whisper_cpp_engines(args, notes, steno_bin)
    engines += faster_whisper_engines(args, notes)
    if args.engines:
        keep = {e.strip() for e in args.engines.split(",")}
        engines = [e for e in engines if e.name in keep]
    if not engines:
        print("run_bench.py: no engine available:\n  " + "\n  ".join(notes))
        return 0
    loads = workloads(args, notes)
    normalize, word_errors = load_wer()

    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads))
    if args.omp_wait_policy:
        env["OMP_WAIT_POLICY"] = args.omp_wait_policy.upper()
        notes.append("every child runs with OMP_WAIT_POLICY=%s" % env["OMP_WAIT_POLICY"])
    runs = []
    failed = {}  # (engine, workload) -> first error

    def one(engine, path, tmp):
        r = run_child(engine.cmd(path, tmp), env, args.timeout)
        text = None
        if r["rc"] == 0:
            try:
                text = engine.text(path, tmp, r["stdout"])
            except (OSError, ValueError, KeyError) as e:
                r["rc"], r["stderr"] = -1, "%s\n(no transcript: %s)" % (r["stderr"], e)
        return r, text

    if not args.no_warmup:
        warm = os.path.join(args.shared, "audio", "jfk.wav")  # short: loads the files' pages
        if not os.path.isfile(warm):
            warm = next((it[0][0] for w, it in loads if it), None)
        for e in engines:
            if warm:
                with tempfile.TemporaryDirectory(dir=args.work_dir) as tmp:
                    r, _ = one(e, warm, tmp)
                if r["rc"] != 0:
                    note("warm-up of %s failed (rc %d): %s" % (e.name, r["rc"],
                                                               r["stderr"].strip()[-500:]))

    for rep in range(args.reps):
        order = engines[rep % len(engines):] + engines[:rep % len(engines)]
        for wname, items in loads:
            for path, ref, secs in items:
                for e in order:
                    if (e.name, wname) in failed:
                        continue
                    with tempfile.TemporaryDirectory(dir=args.work_dir) as tmp:
                        r, text = one(e, path, tmp)
                    rec = {"engine": e.name, "workload": wname, "rep": rep,
                           "file": os.path.basename(path), "seconds": secs, "rc": r["rc"],
                           "wall": r["wall"], "cpu": r["cpu"], "maxrss_mb": r["maxrss_mb"],
                           "loadavg": os.getloadavg()[0], "text": text}
                    if r["rc"] != 0:
                        rec["stderr"] = r["stderr"][-2000:]
                        failed[(e.name, wname)] = "%s: rc %d%s: %s" % (
                            os.path.basename(path), r["rc"],
                            " (timed out)" if r["timed_out"] else "", r["stderr"].strip()[-300:])
                        note("%s failed on %s: %s" % (e.name, path, failed[(e.name, wname)]))
                    runs.append(rec)
                    note("rep %d %-8s %-14s %-50s %7.2f s %6.0f MB" % (
                        rep + 1, wname, e.name, os.path.basename(path)[:50], r["wall"],
                        r["maxrss_mb"]))

    # Summaries
    summary = {}
    for wname, items in loads:
        audio_s = sum(s for _, _, s in items)
        refs = {os.path.basename(p): ref for p, ref, _ in items}
        for e in engines:
            rs = [x for x in runs if x["engine"] == e.name and x["workload"] == wname]
            if (e.name, wname) in failed or not rs:
                summary[(e.name, wname)] = {"error": failed.get((e.name, wname), "no runs")}
                continue
            per_rep = [sum(x["wall"] for x in rs if x["rep"] == k) for k in range(args.reps)]
            cpu_rep = [sum(x["cpu"] for x in rs if x["rep"] == k) for k in range(args.reps)]
            s = {"audio_s": audio_s, "median_s": statistics.median(per_rep),
                 "median_cpu_s": statistics.median(cpu_rep), "per_rep_cpu_s": cpu_rep,
                 "min_s": min(per_rep), "max_s": max(per_rep), "per_rep_s": per_rep,
                 "maxrss_mb": max(x["maxrss_mb"] for x in rs)}
            s["rtf"] = s["median_s"] / audio_s
            last = {x["file"]: x["text"] for x in rs if x["rep"] == args.reps - 1}
            first = {x["file"]: x["text"] for x in rs if x["rep"] == 0}
            s["texts_stable_across_reps"] = first == last
            if normalize:
                err = n = 0
                for f, t in last.items():
                    rw = normalize(refs[f])
                    err += word_errors(rw, normalize(t or ""))
                    n += len(rw)
                s["wer"] = err / n if n else None
                s["wer_errors"], s["wer_ref_words"] = err, n
            summary[(e.name, wname)] = s

    # Report
    info = machine_info()
    print("## steno vs peers: Whisper on CPU (%d threads)\n" % args.threads)
    print("- machine: %s, %s CPUs online, %.1f GiB RAM; %s" % (
        info.get("cpu", "?"), info.get("cpus_online"), info.get("mem_total_kb", 0) / 2**20,
        info["platform"]))
    print("- model: %s; %d repetitions, engines interleaved (rotated order), medians reported"
          % (args.model, args.reps))
    loads_seen = [x["loadavg"] for x in runs]
    if loads_seen:
        print("- 1-min load average during the runs: %.1f–%.1f (other work on the machine "
              "inflates wall times; CPU seconds are less affected)" % (min(loads_seen),
                                                                      max(loads_seen)))
    for n_ in notes:
        print("- " + n_)
    print("\ncommands (TMP a fresh folder per run, FILE the input):\n")
    for e in engines:
        print("    %-14s %s" % (e.name, e.describe))
    for wname, items in loads:
        audio_s = sum(s for _, _, s in items)
        print("\n### %s (%d file%s, %.1f s of audio)\n" % (wname, len(items),
                                                           "s" if len(items) != 1 else "", audio_s))
        ok = [e for e in engines if "error" not in summary[(e.name, wname)]]
        head = "| engine | median s | min–max s | CPU s | RTF | peak RSS MB | WER % |"
        head += "".join(" ÷ %s |" % o.name for o in ok)
        print(head)
        print("|" + "---|" * (7 + len(ok)))
        for e in engines:
            s = summary[(e.name, wname)]
            if "error" in s:
                print("| %s | failed: %s |" % (e.name, s["error"].replace("|", "/")[:200])
                      + " |" * (5 + len(ok)))
                continue
            line = "| %s | %.2f | %.2f–%.2f | %.2f | %.3f | %.0f | %s%s |" % (
                e.name, s["median_s"], s["min_s"], s["max_s"], s["median_cpu_s"], s["rtf"],
                s["maxrss_mb"],
                fmt(s.get("wer") * 100 if s.get("wer") is not None else None, ".2f"),
                "" if s["texts_stable_across_reps"] else " (varied)")
            for o in ok:
                line += " %.2f |" % (s["median_s"] / summary[(o.name, wname)]["median_s"])
            print(line)
        print("\n(÷ X: this engine's median wall time divided by X's; < 1 means faster than X. "
              "RTF = median wall / audio seconds. CPU s: median user+system seconds of the "
              "child processes.)")

    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"args": vars(args), "machine": info, "notes": notes,
                       "engines": {e.name: e.describe for e in engines},
                       "summary": [dict(engine=k[0], workload=k[1], **v)
                                   for k, v in summary.items()],
                       "runs": runs}, f, indent=1, ensure_ascii=False)
        note("wrote " + args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
