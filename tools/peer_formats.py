#!/usr/bin/env python3
"""peer_formats.py — Whisper files made by peers' own libraries, read by steno.

Run with a Python that has ctranslate2 and numpy (the faster-whisper venv:
~/.cache/steno/venv-fw/bin/python tools/peer_formats.py [MODEL_DIR] [OUT_DIR]); writes outside the
repository (default /tmp/steno_peer_formats) and prints one line per check. MODEL_DIR is the
tiny.en CTranslate2 directory (default ~/.cache/steno/models/tiny.en).

1. CTranslate2's own writer (ctranslate2.specs.WhisperSpec: optimize(quantization) + save):
   the tiny.en weights put into a WhisperSpec and saved as float16, int8 and int8_float16
   model.bin files; steno transcribes jfk.wav with each.
2. numpy's np.savez (the writer of mlx-examples whisper/convert.py's weights.npz): steno's MLX
   folder re-saved as weights.npz by numpy; steno transcribes jfk.wav with it.
3. The other way: faster-whisper (CTranslate2) transcribes jfk.wav with the CT2 folder steno
   writes from a ggml file steno wrote (steno convert --to ggml, then --to ct2).
jfk.wav's reference: " And so my fellow Americans ask not what your country can do for you ask
what you can do for your country" (whisper tiny.en's greedy transcript, punctuation folded).
Exit 1 when any check fails. The Hugging Face and ggml files made by transformers' and whisper.cpp's
own converters need torch: tools/peer_formats_torch.py, run with its own venv (docs/MODELS.md).
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys

import ctranslate2
import numpy as np
from ctranslate2.specs import whisper_spec

HERE = os.path.dirname(os.path.abspath(__file__))
STENO = os.environ.get("STENO_BIN", os.path.join(HERE, "..", "build", "steno"))
SHARED = os.environ.get("STENO_SHARED", os.path.join(HERE, "..", "..", "shared"))
JFK = os.path.join(SHARED, "models", "whisper-test-assets", "jfk.wav")
REF = "and so my fellow americans ask not what your country can do for you ask what you can do for your country"
bad = []
OUT = "/tmp/steno_peer_formats"


def fold(t):
    return " ".join(re.sub(r"[^a-z ]", " ", t.lower()).split())


def steno_text(model):
    out_dir = os.path.join(OUT, "transcripts")
    os.makedirs(out_dir, exist_ok=True)
    p = subprocess.run([STENO, "transcribe", "--model", model, "--output-dir", out_dir, JFK],
                       capture_output=True, text=True)
    out = re.sub(r"\[[^\]]*\]", " ", p.stdout)
    return p.returncode, fold(out), p.stderr.strip()


def report(what, ok, detail=""):
    print("%s %s %s" % ("ok  " if ok else "FAIL", what, detail))
    if not ok:
        bad.append(what)


def read_ct2(path):
    """{name: numpy array} of a CTranslate2 model.bin (version 6) and its aliases."""
    b = open(path, "rb").read()
    o = 0

    def u(f):
        nonlocal o
        v = struct.unpack_from(f, b, o)
        o += struct.calcsize(f)
        return v[0]

    def s():
        nonlocal o
        n = u("<H")
        r = b[o:o + n - 1].decode()
        o += n
        return r

    u("<I"), s(), u("<I")
    n = u("<I")
    types = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}
    out = {}
    for _ in range(n):
        name = s()
        rank = u("<B")
        dims = [u("<I") for _ in range(rank)]
        dt = u("<B")
        nb = u("<I")
        out[name] = np.frombuffer(b[o:o + nb], dtype=types[dt]).reshape(dims) if rank else \
            np.frombuffer(b[o:o + nb], dtype=types[dt])[0]
        o += nb
    return out


def set_path(spec, name, value):
    obj = spec
    parts = name.split("/")
    for p in parts[:-1]:
        m = re.fullmatch(r"(.+)_(\d+)", p)
        if m and isinstance(getattr(obj, m.group(1), None), list):
            obj = getattr(obj, m.group(1))[int(m.group(2))]
        else:
            obj = getattr(obj, p)
    setattr(obj, parts[-1], value)


def ct2_peer(model, out):
    v = read_ct2(os.path.join(model, "model.bin"))
    with open(os.path.join(model, "vocabulary.txt"), encoding="utf-8") as f:
        vocab = f.read().split("\n")[:-1]
    n_enc = len({k.split("/")[1] for k in v if re.match(r"encoder/layer_\d+/", k)})
    n_dec = len({k.split("/")[1] for k in v if re.match(r"decoder/layer_\d+/", k)})
    v["decoder/projection/weight"] = v["decoder/embeddings/weight"]  # the alias CT2 writes
    for q in ("float16", "int8", "int8_float16"):
        spec = whisper_spec.WhisperSpec(n_enc, int(v["encoder/num_heads"]), n_dec, int(v["decoder/num_heads"]))
        for name, arr in v.items():
            if "/" not in name or np.ndim(arr) == 0:
                continue
            set_path(spec, name, np.array(arr))
        spec.register_vocabulary(vocab)
        with open(os.path.join(model, "config.json")) as f:
            cfg = json.load(f)
        for k, val in cfg.items():
            setattr(spec.config, k, val)
        spec.validate()
        spec.optimize(quantization=q)
        d = os.path.join(out, "ct2_" + q)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        spec.save(d)
        shutil.copy(os.path.join(model, "tokenizer.json"), d)
        rc, text, err = steno_text(d)
        report("CTranslate2 %s model.bin (ctranslate2 %s WhisperSpec.save) -> steno" % (q, ctranslate2.__version__),
               rc == 0 and text == REF, "%r %s" % (text, err))


def mlx_npz(model, out):
    d = os.path.join(out, "mlx_safetensors")
    shutil.rmtree(d, ignore_errors=True)
    subprocess.run([STENO, "convert", "--to", "mlx", "--model", model, "-o", d], check=True)
    raw = open(os.path.join(d, "weights.safetensors"), "rb").read()
    n = int.from_bytes(raw[:8], "little")
    head = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    arrays = {}
    for k, e in head.items():
        if k == "__metadata__":
            continue
        b0, b1 = e["data_offsets"]
        arrays[k] = np.frombuffer(data[b0:b1], dtype={"F16": np.float16, "F32": np.float32}[e["dtype"]]).reshape(e["shape"])
    npz = os.path.join(out, "mlx_npz")
    shutil.rmtree(npz, ignore_errors=True)
    os.makedirs(npz)
    np.savez(os.path.join(npz, "weights.npz"), **arrays)
    for f in ("config.json", "tokenizer.json"):
        shutil.copy(os.path.join(d, f), npz)
    rc, text, err = steno_text(npz)
    report("MLX weights.npz (numpy %s np.savez) -> steno" % np.__version__, rc == 0 and text == REF, "%r %s" % (text, err))


def fw_reads_steno(model, out):
    from faster_whisper import WhisperModel
    gg = os.path.join(out, "ggml-tiny.en.bin")
    ct = os.path.join(out, "ct2_from_ggml")
    shutil.rmtree(ct, ignore_errors=True)
    if os.path.exists(gg):
        os.remove(gg)
    subprocess.run([STENO, "convert", "--to", "ggml", "--model", model, "-o", gg], check=True)
    subprocess.run([STENO, "convert", "--to", "ct2", "--model", gg, "-o", ct], check=True)
    m = WhisperModel(ct, device="cpu", compute_type="float32")
    segs, _ = m.transcribe(JFK, beam_size=1, language="en")
    text = fold(" ".join(s.text for s in segs))
    report("steno ggml -> steno ct2 -> faster-whisper transcribes", text == REF, repr(text))


def main():
    model = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/steno/models/tiny.en")
    global OUT
    out = OUT = sys.argv[2] if len(sys.argv) > 2 else OUT
    os.makedirs(out, exist_ok=True)
    ct2_peer(model, out)
    mlx_npz(model, out)
    fw_reads_steno(model, out)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
