#!/usr/bin/env python3
"""peer_formats_torch.py — Hugging Face and whisper.cpp ggml files made by the peers' own tools from
a PyTorch checkpoint, read by steno (issue #18, "peer-made files"). The torch half of
tools/peer_formats.py (which covers CTranslate2's writer and numpy's savez).

Run with a venv that has torch, transformers, tiktoken and openai-whisper's assets (docs/MODELS.md
"Files made by peers' own tools" gives the pinned install):

  ~/.cache/steno/venv-torch/bin/python tools/peer_formats_torch.py [--model tiny.en]
      [--whispercpp /path/to/whisper.cpp] [--quantize /path/to/whisper.cpp/build/bin/quantize]
      [--out /tmp/steno_peer_formats_torch]

Writes outside the repository only; nothing here builds or ships peer code: whisper.cpp's
convert-pt-to-ggml.py is run from the checkout given by --whispercpp, its quantize tool from the
already-built binary given by --quantize. Steps:

0. the openai checkpoint: steno's own ggml file of the CTranslate2 model (steno convert --to ggml)
   read back into openai-whisper's `{"dims", "model_state_dict"}` layout (openai names, float16
   matrices as the released .pt files hold them) and torch.save'd as model.pt;
1. Hugging Face: transformers' convert_openai_to_hf.py functions (convert_openai_whisper_to_tfms on
   model.pt, convert_tiktoken_to_hf on openai-whisper's tiktoken file, WhisperProcessor /
   WhisperTokenizerFast / model.save_pretrained) write model.safetensors, config.json,
   tokenizer.json, vocab.json ... The two hub downloads of that script are pointed at local files:
   the tokenizer's tiktoken URL at openai-whisper's packaged asset, and the generation config
   (fetched from openai/whisper-* on the hub) replaced by the one steno's HF writer derives
   (suppress tokens, no-timestamps id ...), since the hub cannot be reached here;
2. ggml: whisper.cpp's models/convert-pt-to-ggml.py on model.pt (float16 file) with openai-whisper's
   packaged assets as "path-to-whisper-repo", and models/convert-h5-to-ggml.py on the transformers
   folder of step 1;
3. quantized ggml: whisper.cpp's quantize tool on that float16 ggml file, for q8_0 q5_0 q5_1 q4_0
   q4_1.

Each file is transcribed by steno (default options: greedy, fast path) on jfk.wav; the tokens of
the unquantized ones must equal the CTranslate2 original's exactly (one FAIL line otherwise); the
quantized ones are loaded with the matching `--weights TYPE` (and without: dequantized to f16)
and their text and word errors against the f16 text are printed. Exit 1 when any exact check fails.
"""
import argparse
import base64
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "py"))
import steno_eval as se  # noqa: E402
STENO = os.environ.get("STENO_BIN", os.path.join(HERE, "..", "build", "steno"))
SHARED = os.environ.get("STENO_SHARED", os.path.join(HERE, "..", "..", "shared"))
JFK = os.path.join(SHARED, "models", "whisper-test-assets", "jfk.wav")
QTYPES = ("q8_0", "q5_0", "q5_1", "q4_0", "q4_1")
bad = []

# ggml tensor types (ggml.h enum ggml_type) of the float tensors a ggml Whisper file holds
GGML_F32, GGML_F16 = 0, 1


def report(what, ok, detail=""):
    print("%s %s %s" % ("ok  " if ok else "FAIL", what, detail), flush=True)
    if not ok:
        bad.append(what)


def steno_tokens(model, out, extra=()):
    """(rc, [token ids of every segment], text, stderr) of steno transcribing jfk.wav."""
    d = os.path.join(out, "transcripts")
    os.makedirs(d, exist_ok=True)
    p = subprocess.run([STENO, "transcribe", "--model", model, "-f", "json", "-o", d, "--verbose", "False"]
                       + list(extra) + [JFK], capture_output=True, text=True)
    if p.returncode != 0:
        return p.returncode, None, "", p.stderr.strip()
    with open(os.path.join(d, "jfk.json"), encoding="utf-8") as f:
        j = json.load(f)
    return 0, [t for s in j["segments"] for t in s["tokens"]], j["text"], p.stderr.strip()


def read_ggml(path):
    """(hparams dict, {openai name: float array in PyTorch's [out][in] order}) of a float ggml file
    (whisper.cpp whisper_model_load: magic, 11 int32 hparams, mel filters, vocabulary, tensors
    n_dims/name length/type, ne[0..n_dims) innermost first, name, data)."""
    b = open(path, "rb").read()
    o = 0

    def i32(n=1):
        nonlocal o
        v = struct.unpack_from("<%di" % n, b, o)
        o += 4 * n
        return v

    if i32()[0] != 0x67676D6C:
        raise SystemExit("%s: not a ggml file" % path)
    keys = ("n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer", "n_text_ctx",
            "n_text_state", "n_text_head", "n_text_layer", "n_mels", "ftype")
    hp = dict(zip(keys, i32(11)))
    n_mel, n_fft = i32(2)
    o += 4 * n_mel * n_fft
    n_vocab = i32()[0]
    for _ in range(n_vocab):  # (uint32 length, bytes) each
        (n,) = struct.unpack_from("<I", b, o)
        o += 4 + n
    tensors = {}
    while o < len(b):
        n_dims, name_len, ttype = i32(3)
        ne = i32(n_dims)
        name = b[o:o + name_len].decode()
        o += name_len
        if ttype not in (GGML_F32, GGML_F16):
            raise SystemExit("%s: %s is of ggml type %d, not a float file" % (path, name, ttype))
        dt = np.float32 if ttype == GGML_F32 else np.float16
        count = int(np.prod(ne))
        a = np.frombuffer(b, dtype=dt, count=count, offset=o).reshape(tuple(reversed(ne)))
        o += count * np.dtype(dt).itemsize
        tensors[name] = a
    return hp, tensors


def write_openai_pt(ggml, pt):
    """openai-whisper's checkpoint layout (whisper/__init__.py load_model: checkpoint["dims"],
    checkpoint["model_state_dict"]) from a float ggml file; matrices float16 as openai ships them."""
    hp, t = read_ggml(ggml)
    dims = {k: hp[k] for k in ("n_mels", "n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head",
                               "n_audio_layer", "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer")}
    sd = {}
    for name, a in t.items():
        if name in ("encoder.conv1.bias", "encoder.conv2.bias"):
            a = a.reshape(-1)  # convert-pt-to-ggml.py stores them as [n, 1]
        sd[name] = torch.from_numpy(np.array(a, dtype=np.float16))
    torch.save({"dims": dims, "model_state_dict": sd}, pt)
    return dims


def whisper_assets():
    """(the folder holding openai-whisper's package, its assets folder): installed with --no-deps,
    only its packaged files are read (importing it would need numba)."""
    import importlib.util
    pkg = importlib.util.find_spec("whisper").submodule_search_locations[0]
    return os.path.dirname(pkg), os.path.join(pkg, "assets")


def hf_from_pt(pt, out_dir, steno_hf):
    """transformers' convert_openai_to_hf.py path, hub downloads pointed at local files."""
    import transformers
    from transformers import GenerationConfig, WhisperFeatureExtractor, WhisperProcessor, WhisperTokenizerFast
    from transformers.models.whisper import convert_openai_to_hf as conv
    _, assets = whisper_assets()
    conv._TOKENIZERS = {"multilingual": os.path.join(assets, "multilingual.tiktoken"),
                        "english": os.path.join(assets, "gpt2.tiktoken")}
    conv._get_generation_config = lambda *a, **k: GenerationConfig.from_pretrained(steno_hf)
    # the script imports tiktoken.load.load_tiktoken_bpe in its __main__ block; for a local path
    # tiktoken 0.8 wants blobfile, so the file is parsed here exactly as load_tiktoken_bpe does
    conv.load_tiktoken_bpe = lambda path: {base64.b64decode(tok): int(rank) for tok, rank in
                                           (ln.split() for ln in open(path, "rb").read().splitlines() if ln)}
    model, multilingual, num_languages = conv.convert_openai_whisper_to_tfms(pt, out_dir)
    tok = conv.convert_tiktoken_to_hf(multilingual, num_languages)
    fe = WhisperFeatureExtractor(feature_size=model.config.num_mel_bins)
    WhisperProcessor(tokenizer=tok, feature_extractor=fe).save_pretrained(out_dir)
    WhisperTokenizerFast.from_pretrained(out_dir).save_pretrained(out_dir, legacy_format=False)
    model.save_pretrained(out_dir)
    return transformers.__version__


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="tiny.en", help="a CTranslate2 model name or directory")
    ap.add_argument("--whispercpp", default="", help="a whisper.cpp checkout (its models/convert-pt-to-ggml.py)")
    ap.add_argument("--quantize", default="", help="whisper.cpp's built quantize binary")
    ap.add_argument("--out", default="/tmp/steno_peer_formats_torch")
    a = ap.parse_args()
    model = a.model if os.path.isdir(a.model) else os.path.expanduser("~/.cache/steno/models/" + a.model)
    name = os.path.basename(os.path.normpath(model))
    out = os.path.join(a.out, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)

    rc, ref, ref_text, err = steno_tokens(model, out)
    if rc != 0:
        raise SystemExit("steno on the CTranslate2 original failed: %s" % err)
    print("CTranslate2 original %s: %d tokens %r" % (name, len(ref), ref_text.strip()), flush=True)

    own_ggml = os.path.join(out, "steno-ggml.bin")
    steno_hf = os.path.join(out, "steno-hf")
    subprocess.run([STENO, "convert", "--to", "ggml", "--model", model, "-o", own_ggml], check=True)
    subprocess.run([STENO, "convert", "--to", "hf", "--model", model, "-o", steno_hf], check=True)
    pt = os.path.join(out, "model.pt")
    write_openai_pt(own_ggml, pt)
    print("wrote %s (openai layout, torch %s)" % (pt, torch.__version__), flush=True)

    hf = os.path.join(out, "hf-transformers")
    ver = hf_from_pt(pt, hf, steno_hf)
    files = sorted(os.listdir(hf))
    rc, toks, text, err = steno_tokens(hf, out)
    report("Hugging Face folder (transformers %s convert_openai_whisper_to_tfms + save_pretrained: %s) -> steno"
           % (ver, " ".join(files)), rc == 0 and toks == ref, "%r %s" % (text.strip(), err))

    if not a.whispercpp:
        print("whisper.cpp steps not run: no --whispercpp given")
        return 1 if bad else 0
    wdir, _ = whisper_assets()
    gdir = os.path.join(out, "ggml-whispercpp")
    os.makedirs(gdir)
    conv = os.path.join(a.whispercpp, "models", "convert-pt-to-ggml.py")
    p = subprocess.run([sys.executable, conv, pt, wdir, gdir], capture_output=True, text=True)
    made = glob.glob(os.path.join(gdir, "*.bin"))
    if p.returncode != 0 or len(made) != 1:
        report("whisper.cpp convert-pt-to-ggml.py", False, p.stderr[-800:])
        return 1
    f16 = os.path.join(out, "ggml-%s-f16.bin" % name)
    os.replace(made[0], f16)
    rc, toks, text, err = steno_tokens(f16, out)
    report("ggml f16 (whisper.cpp convert-pt-to-ggml.py) -> steno", rc == 0 and toks == ref,
           "%r %s" % (text.strip(), err))
    h5dir = os.path.join(out, "ggml-h5")
    os.makedirs(h5dir)
    conv = os.path.join(a.whispercpp, "models", "convert-h5-to-ggml.py")
    p = subprocess.run([sys.executable, conv, hf, wdir, h5dir], capture_output=True, text=True)
    h5 = os.path.join(h5dir, "ggml-model.bin")
    if p.returncode != 0 or not os.path.isfile(h5):
        report("whisper.cpp convert-h5-to-ggml.py", False, p.stderr[-800:])
    else:
        rc, toks, text, err = steno_tokens(h5, out)
        report("ggml f16 (whisper.cpp convert-h5-to-ggml.py on the transformers folder) -> steno",
               rc == 0 and toks == ref, "%r %s" % (text.strip(), err))
    if not a.quantize:
        print("quantized ggml not made: no --quantize given")
        return 1 if bad else 0
    for q in QTYPES:
        qf = os.path.join(out, "ggml-%s-%s.bin" % (name, q))
        p = subprocess.run([a.quantize, f16, qf, q], capture_output=True, text=True)
        if p.returncode != 0:
            report("whisper.cpp quantize %s" % q, False, p.stderr[-400:])
            continue
        for extra in (("--weights", q), ()):
            rc, toks, text, err = steno_tokens(qf, out, extra)
            same = "tokens = f16's" if toks == ref else "tokens differ from f16's"
            if toks is not None:
                rw, hw = se.normalize_en(ref_text), se.normalize_en(text)
                same += ", %d word errors in %d (f16's text as reference)" % (se.word_errors(rw, hw), len(rw))
            report("ggml %s (whisper.cpp quantize) -> steno %s" % (q, " ".join(extra) or "(dequantized to f16)"),
                   rc == 0, "%s: %r %s" % (same, text.strip(), err))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
