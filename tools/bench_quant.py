#!/usr/bin/env python3
"""bench_quant.py — quantized Whisper weights (steno transcribe --weights TYPE) against float16:
WER on the English dev clips and on the multilingual clips, model weights in memory, peak RSS and
wall time on long120, for tiny.en and base; faster-whisper int8 (and float32) side by side.

Usage: tools/bench_quant.py [--models tiny.en,base] [--types f16,q8_0,...] [--reps 2] [--fw-types int8,float32]
                            [--threads 2] [--fw-python ~/.cache/steno/fw-venv/bin/python]
                            [--skip-dev] [--skip-ml] [--skip-long] [--json OUT]

Every run is one steno process (default decoding, the user's defaults) over a clip set: all 32
English clips of shared/audio/manifest.tsv, or the 9 non-English ones (base only; tiny.en is
English-only). English WER uses tests/py/steno_eval.py's normalizer over all reference words.
Multilingual error rate: word-level on the space-delimited languages (de es fr it pt ru ko),
character-level on zh and ja, after lower-casing and removing punctuation; errors summed over
clips and divided by the reference units. long120 runs are interleaved across types (rep 1 of
every type, then rep 2, ...), medians reported; peak RSS is the process's (os.wait4). The
machine may be shared: say so with the numbers. Prints a markdown table; --json keeps the raw data.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "py"))
import steno_eval as se  # noqa: E402

# bytes per weight of each format's quantized matrices (block or group overhead included)
BPW = {"f32": 4.0, "f16": 2.0, "q8_0": 34 / 32, "q5_0": 22 / 32, "q5_1": 24 / 32, "q4_0": 18 / 32,
       "q4_1": 20 / 32, "mlx-q4g32": 0.5 + 4 / 32, "mlx-q4g64": 0.5 + 4 / 64, "mlx-q8g32": 1 + 4 / 32,
       "mlx-q8g64": 1 + 4 / 64}
DIMS = {"tiny.en": (384, 4, 51864), "base": (512, 6, 51865)}  # D, layers, vocabulary


def weights_mb(model, wtype):
    """Weights the fast path holds (MB): the matrices in their format (f16/f32: the decoder's; the
    encoder's stay float32), plus what stays float32 in every mode (convolutions, positions, the
    cross-attention K/V weights twice: the model's and the fast path's stacked copy, norms and
    biases are < 0.1 MB and left out). q8_0, q5_0, q4_0 and q4_1 hold the x8 copy instead of the ggml
    rows, the same bytes (docs/WHISPER.md, Lab: quantized weights)."""
    D, L, V = DIMS[model]
    enc, dec, emb = 12 * D * D * L, 14 * D * D * L, V * D
    if wtype in ("f16", "f32"):
        mats = enc * 4 + (dec + emb) * BPW[wtype]
    else:
        mats = (enc + dec + emb) * BPW[wtype]
    rest = 4 * (D * 80 * 3 + D * D * 3 + 1500 * D + 448 * D + 2 * 2 * D * D * L)
    return (mats + rest) / 1e6


def run_rss(cmd, threads=2):
    """(returncode, wall s, peak RSS MB, stderr tail, CPU s); children get OMP_NUM_THREADS=threads and
    OMP_WAIT_POLICY=PASSIVE (the git history of docs/PERFORMANCE.md: spinning OpenMP workers lose time slices on a
    shared machine)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE")
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.monotonic() - t0
        err.seek(0)
        tail = err.read()[-2000:].decode("utf-8", "replace")
    return os.waitstatus_to_exitcode(status), dt, ru.ru_maxrss / 1024.0, tail, ru.ru_utime + ru.ru_stime


def steno_cmd(steno, model_dir, wtype, threads, out, files, extra=()):
    return [steno, "transcribe", "--model", model_dir, "--weights", wtype, "-t", str(threads), "-f", "json",
            "-o", out, "--verbose", "False"] + list(extra) + list(files)


def read_texts(out, files):
    texts = {}
    for f in files:
        with open(os.path.join(out, se.clip_stem(f) + ".json"), encoding="utf-8") as fh:
            texts[f] = json.load(fh)["text"]
    return texts


def norm_ml(text):
    text = unicodedata.normalize("NFKC", text).lower()
    return "".join(c if (c.isalnum() or c.isspace()) else " " for c in text)


def ml_errors(lang, ref, hyp):
    if lang in ("zh", "ja"):
        r = [c for c in norm_ml(ref) if not c.isspace()]
        h = [c for c in norm_ml(hyp) if not c.isspace()]
    else:
        r, h = norm_ml(ref).split(), norm_ml(hyp).split()
    return se.word_errors(r, h), len(r)


def en_wer(rows, texts):
    errs = words = 0
    for r in rows:
        ref = se.normalize_en(r["reference_text"])
        hyp = se.normalize_en(texts[r["path"]])
        errs += se.word_errors(ref, hyp)
        words += len(ref)
    return 100.0 * errs / words


def fw_cmd(py, model, compute, threads, files, out):
    code = r"""
import json, os, sys
from faster_whisper import WhisperModel
m = WhisperModel(sys.argv[1], device="cpu", compute_type=sys.argv[2], cpu_threads=int(sys.argv[3]))
out = sys.argv[4]
for f in sys.argv[5:]:
    segs, info = m.transcribe(f, beam_size=1)
    text = "".join(s.text for s in segs)
    with open(os.path.join(out, os.path.splitext(os.path.basename(f))[0] + ".json"), "w") as fh:
        json.dump({"text": text}, fh)
"""
    return [py, "-c", code, model, compute, str(threads), out] + list(files)


def dump(path, data):
    if path:
        with open(path + ".tmp", "w") as fh:
            json.dump(data, fh, indent=1)
        os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="tiny.en,base")
    ap.add_argument("--types", default="f16,q8_0,q5_0,q5_1,q4_0,q4_1,mlx-q8g32,mlx-q8g64,mlx-q4g32,mlx-q4g64")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--fw-python", default="")
    ap.add_argument("--fw-types", default="int8,float32")
    ap.add_argument("--skip-dev", action="store_true")
    ap.add_argument("--skip-ml", action="store_true")
    ap.add_argument("--skip-long", action="store_true")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    steno = se.steno_bin()
    models_root = os.environ.get("STENO_MODELS_DIR") or os.path.expanduser("~/.cache/steno/models")
    en = se.read_manifest("en")
    en = [r for r in en if "long" not in r["file"]]
    ml = [r for r in se.read_manifest() if r["language"] != "en"]
    long120 = os.path.join(se.audio_dir(), "tedlium_long_120s.flac")
    types = a.types.split(",")
    # faster-whisper engines: listed in --types as fw-int8 etc. (then run in that place), or added
    # at the end from --fw-types
    engines = list(types) + (["fw-" + t for t in a.fw_types.split(",") if t and "fw-" + t not in types]
                             if a.fw_python else [])
    data = {}
    for model in a.models.split(","):
        mdir = os.path.join(models_root, model)
        res = data.setdefault(model, {})
        for e in engines:
            res[e] = {"long": []}
        with tempfile.TemporaryDirectory() as tmp:
            for e in engines:
                def cmd(files, out):
                    if e.startswith("fw-"):
                        return fw_cmd(a.fw_python, mdir, e[3:], a.threads, files, out)
                    return steno_cmd(steno, mdir, e, a.threads, out, files)
                sets = []
                if not a.skip_dev:
                    sets.append(("en", en))
                if not a.skip_ml and model != "tiny.en":
                    sets.append(("ml", ml))
                for name, rows in sets:
                    out = os.path.join(tmp, "%s-%s" % (e, name))
                    os.makedirs(out, exist_ok=True)
                    files = [r["path"] for r in rows]
                    rc, dt, rss, err, cpu = run_rss(cmd(files, out), a.threads)
                    if rc != 0:
                        se.fail("%s %s exited %d: %s" % (e, name, rc, err))
                    texts = read_texts(out, files)
                    if name == "en":
                        res[e]["en_wer"] = en_wer(rows, texts)
                    else:
                        errs = units = 0
                        for r in rows:
                            x, n = ml_errors(r["language"], r["reference_text"], texts[r["path"]])
                            errs += x
                            units += n
                        res[e]["ml_er"] = 100.0 * errs / units
                    res[e][name + "_s"] = dt
                    dump(a.json, data)
                    print("%s %-10s %s: %.1f s, %s" % (model, e, name, dt,
                          "WER %.2f %%" % res[e]["en_wer"] if name == "en" else "ER %.2f %%" % res[e]["ml_er"]),
                          flush=True)
            if not a.skip_long:
                for rep in range(a.reps):
                    for e in engines:
                        out = os.path.join(tmp, "%s-long" % e)
                        os.makedirs(out, exist_ok=True)
                        c = (fw_cmd(a.fw_python, mdir, e[3:], a.threads, [long120], out) if e.startswith("fw-")
                             else steno_cmd(steno, mdir, e, a.threads, out, [long120]))
                        rc, dt, rss, err, cpu = run_rss(c, a.threads)
                        if rc != 0:
                            se.fail("%s long120 exited %d: %s" % (e, rc, err))
                        res[e]["long"].append((dt, rss, cpu))
                        dump(a.json, data)
                        print("%s %-10s long120 rep %d: %.2f s, %.0f MB" % (model, e, rep + 1, dt, rss), flush=True)
    print("\n| model | weights | weights MB | EN WER % | Δ vs f16 | ML err % | Δ vs f16 | long120 median s | "
          "÷ f16 | CPU s | ÷ f16 | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model, res in data.items():
        f = res.get("f16", {})
        fl = statistics.median([x[0] for x in f["long"]]) if f.get("long") else None
        fc = statistics.median([x[2] for x in f["long"]]) if f.get("long") and len(f["long"][0]) > 2 else None
        for e, r in res.items():
            lm = statistics.median([x[0] for x in r["long"]]) if r["long"] else None
            rss = statistics.median([x[1] for x in r["long"]]) if r["long"] else None
            lc = statistics.median([x[2] for x in r["long"]]) if r["long"] and len(r["long"][0]) > 2 else None
            def fmt(k):
                return "%.2f" % r[k] if k in r else "–"
            def delta(k):
                return "%+.2f" % (r[k] - f[k]) if k in r and k in f else "–"
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                model, e, "%.1f" % weights_mb(model, e) if e in BPW else "–", fmt("en_wer"), delta("en_wer"),
                fmt("ml_er"), delta("ml_er"), "%.2f" % lm if lm else "–",
                "%.2f" % (lm / fl) if lm and fl else "–", "%.1f" % lc if lc else "–",
                "%.2f" % (lc / fc) if lc and fc else "–", "%.0f" % rss if rss else "–"))
    dump(a.json, data)


if __name__ == "__main__":
    main()
