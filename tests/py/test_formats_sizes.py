"""test_formats_sizes.py — every Whisper size, structurally, in every format.

Only tiny.en and base can be had here as real weights, so the other sizes are checked with models
of their exact structure and small random weights: for tiny, base, small, medium, large-v3 and
large-v3-turbo (openai-whisper's ModelDimensions: layer counts, heads, mel bins 80 or 128,
vocabulary 51 865 or large-v3's 51 866 with <|yue|>), the width reduced to 4 per head (the heads,
layers, contexts, mel bins and vocabulary kept) so that the test runs in seconds.
For each size this test
1. writes a whisper.cpp ggml file itself (stdlib Python: the layout of convert-pt-to-ggml.py;
   float16 matrices, float32 biases/norms/positional embeddings holding float16 values, the
   Slaney filters of mel_filters.npz, the .tiktoken ranks as the vocabulary);
2. converts it with `steno convert` to ct2, hf and mlx, and each of those back to ggml: the three
   files must equal the original byte for byte (so every reader read every tensor exactly, and
   every writer wrote it back);
3. the L2 gate on the model (it holds for any weights): `--path fast --weights f32` and
   `--path faithful` give identical tokens on a 2 s clip, on the ggml file (sizes tiny, base and
   large-v3-turbo in CI, tiny alone under the sanitizers, all six with STENO_TEST_FULL=1), with --language yue on the 51 866-token
   models (the token exists and is the 100th language) and --language en otherwise.
Standard library only. Environment: STENO_BIN, STENO_SHARED (steno_eval.py).
"""
import filecmp
import io
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

STENO = se.steno_bin()
ASSETS = os.path.join(se.shared_dir(), "models", "whisper-test-assets")
# name: (n_mels, n_vocab, heads, encoder layers, decoder layers); openai-whisper whisper/__init__.py
SIZES = {
    "tiny": (80, 51865, 6, 4, 4),
    "base": (80, 51865, 8, 6, 6),
    "small": (80, 51865, 12, 12, 12),
    "medium": (80, 51865, 16, 24, 24),
    "large-v3": (128, 51866, 20, 32, 32),
    "large-v3-turbo": (128, 51866, 20, 32, 4),
}
GATE_CI = ("tiny", "base", "large-v3-turbo")
HEAD_DIM = 4
failures = []


def check(ok, msg):
    if not ok:
        failures.append(msg)
        print("FAIL: " + msg)


def rand_f16(rng, n, exps):
    """n random float16 values (raw bytes) with |x| in [2^(e-15), 2^(e-14)) for e in exps."""
    raw = rng.randbytes(2 * n)
    table = bytes((b & 0x80) | ((exps[(b >> 2) % len(exps)] & 0x1F) << 2) | (b & 3) for b in range(256))
    out = bytearray(2 * n)
    out[0::2] = raw[0::2]
    out[1::2] = raw[1::2].translate(table)
    return bytes(out)


def widen(f16):
    n = len(f16) // 2
    return struct.pack("<%df" % n, *struct.unpack("<%de" % n, f16))


def npy_f32(z, name):
    """The float32 data of an .npy member, -0.0 written as 0.0 (as whisper.cpp's ggml files and
    steno's filterbank hold them)."""
    data = z.read(name)
    hl = int.from_bytes(data[8:10], "little")
    raw = data[10 + hl:]
    vals = struct.unpack("<%df" % (len(raw) // 4), raw)
    return struct.pack("<%df" % len(vals), *[v + 0.0 for v in vals])


def tiktoken(path):
    import base64
    toks = []
    with open(path, "rb") as f:
        for line in f:
            b64, rank = line.split()
            assert int(rank) == len(toks)
            toks.append(base64.b64decode(b64))
    return toks


def sinusoids(length, channels):
    half = channels // 2
    inc = math.log(10000) / (half - 1)
    vals = []
    for t in range(length):
        row = [t * math.exp(-inc * i) for i in range(half)]
        vals.extend([math.sin(x) for x in row] + [math.cos(x) for x in row])
    # rounded to float16 as the encoder's embedding of a float16 model is (and mlx-whisper computes)
    # (float64 → float32 → float16, as steno and mlx-whisper round them)
    f32 = struct.unpack("<%df" % len(vals), struct.pack("<%df" % len(vals), *vals))
    return widen(struct.pack("<%de" % len(vals), *f32))


def write_ggml(path, size, rng):
    n_mels, n_vocab, heads, n_enc, n_dec = SIZES[size]
    D = heads * HEAD_DIM
    out = io.BytesIO()
    w = out.write
    w(struct.pack("<12i", 0x67676D6C, n_vocab, 1500, D, heads, n_enc, 448, D, heads, n_dec, n_mels, 1))
    with zipfile.ZipFile(os.path.join(ASSETS, "mel_filters.npz")) as z:
        filt = npy_f32(z, "mel_%d.npy" % n_mels)
    w(struct.pack("<2i", n_mels, 201) + filt)
    toks = tiktoken(os.path.join(ASSETS, "multilingual.tiktoken" if n_vocab >= 51865 else "gpt2.tiktoken"))
    w(struct.pack("<i", len(toks)))
    for t in toks:
        w(struct.pack("<i", len(t)) + t)

    def tensor(name, shape, f16=True, data=None, exps=(8, 9)):
        n = 1
        for s in shape:
            n *= s
        if data is None:
            h = rand_f16(rng, n, exps)
            data = h if f16 else widen(h)
        dims = list(reversed(shape))
        if name.startswith("encoder.conv") and name.endswith(".bias"):
            dims = [1, shape[0]]
        w(struct.pack("<3i", len(dims), len(name), 1 if f16 else 0))
        w(struct.pack("<%di" % len(dims), *dims) + name.encode() + data)

    def ln(p):
        tensor(p + ".weight", [D], False, exps=(13, 14))
        tensor(p + ".bias", [D], False)

    def linear(p, n_out, n_in, bias=True):
        tensor(p + ".weight", [n_out, n_in])
        if bias:
            tensor(p + ".bias", [n_out], False)

    def block(p, cross):
        linear(p + ".attn.query", D, D)
        linear(p + ".attn.key", D, D, bias=False)
        linear(p + ".attn.value", D, D)
        linear(p + ".attn.out", D, D)
        ln(p + ".attn_ln")
        if cross:
            linear(p + ".cross_attn.query", D, D)
            linear(p + ".cross_attn.key", D, D, bias=False)
            linear(p + ".cross_attn.value", D, D)
            linear(p + ".cross_attn.out", D, D)
            ln(p + ".cross_attn_ln")
        linear(p + ".mlp.0", 4 * D, D)
        linear(p + ".mlp.2", D, 4 * D)
        ln(p + ".mlp_ln")

    tensor("encoder.positional_embedding", [1500, D], False, sinusoids(1500, D))
    tensor("encoder.conv1.weight", [D, n_mels, 3])
    tensor("encoder.conv1.bias", [D], False)
    tensor("encoder.conv2.weight", [D, D, 3])
    tensor("encoder.conv2.bias", [D], False)
    for i in range(n_enc):
        block("encoder.blocks.%d" % i, False)
    ln("encoder.ln_post")
    tensor("decoder.positional_embedding", [448, D], False)
    tensor("decoder.token_embedding.weight", [n_vocab, D], exps=(13, 14))
    for i in range(n_dec):
        block("decoder.blocks.%d" % i, True)
    ln("decoder.ln")
    with open(path, "wb") as f:
        f.write(out.getvalue())


def steno(args):
    p = subprocess.run([STENO] + args, capture_output=True, text=True, timeout=900)
    return p.returncode, p.stdout, p.stderr


def tokens(model, tmp, tag, args, clip):
    out = os.path.join(tmp, "out_" + tag)
    os.makedirs(out)
    rc, _, err = steno(["transcribe", "--model", model, "--output-format", "json", "--output-dir", out,
                        "--temperature-increment-on-fallback", "None"] + args + [clip])
    if rc != 0:
        check(False, "%s: transcribe %s: rc %d %s" % (tag, " ".join(args), rc, err.strip()[-300:]))
        return None
    with open(os.path.join(out, se.clip_stem(clip) + ".json"), encoding="utf-8") as f:
        return se.all_tokens(json.load(f))


def main():
    t0 = time.time()
    rng = random.Random(18)
    samples = se.read_wav16k(os.path.join(ASSETS, "jfk.wav"))[: 2 * 16000]
    with tempfile.TemporaryDirectory(prefix="steno_sizes_") as tmp:
        clip = os.path.join(tmp, "jfk2s.wav")
        se.write_wav16k(clip, samples)
        for size in SIZES:
            t1 = time.time()
            gg = os.path.join(tmp, "ggml-%s.bin" % size)
            write_ggml(gg, size, rng)
            for fmt in ("ct2", "hf", "mlx"):
                d = os.path.join(tmp, "%s-%s" % (size, fmt))
                back = os.path.join(tmp, "ggml-%s-from-%s.bin" % (size, fmt))
                rc, _, err = steno(["convert", "--to", fmt, "--model", gg, "-o", d])
                check(rc == 0, "%s: convert ggml -> %s: %s" % (size, fmt, err.strip()))
                rc, _, err = steno(["convert", "--to", "ggml", "--model", d, "-o", back])
                check(rc == 0, "%s: convert %s -> ggml: %s" % (size, fmt, err.strip()))
                check(rc == 0 and filecmp.cmp(gg, back, shallow=False),
                      "%s: ggml -> %s -> ggml is not byte-identical" % (size, fmt))
            line = "  %-15s ggml -> ct2/hf/mlx -> ggml byte-identical (%.1f s)" % (size, time.time() - t1)
            if se.full() or (size in GATE_CI and not se.sanitize()) or (se.sanitize() and size == "tiny"):
                lang = "yue" if SIZES[size][1] == 51866 else "en"
                fast = tokens(gg, tmp, size + "_fast", ["--path", "fast", "--weights", "f32", "--language", lang], clip)
                faith = tokens(gg, tmp, size + "_faithful", ["--path", "faithful", "--language", lang], clip)
                check(fast is not None and fast == faith,
                      "%s: L2 gate: fast f32 and faithful tokens differ (%s vs %s)" %
                      (size, fast and len(fast), faith and len(faith)))
                line += "; L2 gate: %d tokens identical (%.1f s)" % (len(fast or []), time.time() - t1)
            print(line)
    print("%s in %.1f s" % ("FAIL (%d)" % len(failures) if failures else "PASS", time.time() - t0))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
