"""test_formats.py — every Whisper format steno reads and writes, on the real models.

For tiny.en (and base with STENO_TEST_FULL=1):
1. Round trip: the CTranslate2 original → `steno convert --to hf` → ggml → mlx → ct2 gives back
   model.bin byte for byte (every tensor's bytes, names, order and the scalars).
2. Same tokens: the HF, ggml and MLX models made on the way transcribe the clips below (jfk.wav and
   two LibriSpeech clips; jfk.wav alone under the sanitizers) with tokens identical to the CTranslate2 original's (one steno process
   per format; the ggml file is given as a file, the others as directories; the format is
   detected from the files).
3. Bad input, each one line on stderr, exit 1, nothing written: a truncated ggml file, a
   safetensors header whose offsets run past the file, a sharded HF folder whose index names a
   missing shard, an MLX folder without weights, and a conversion to an existing directory or file.
Standard library only. Environment: STENO_BIN, STENO_SHARED, STENO_MODEL_DIR (steno_eval.py).
"""
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402
import multilingual_common as mc  # noqa: E402

STENO = se.steno_bin()
CLIPS = ["jfk.wav", "ls_test-clean_1221-135766-0002.wav", "ls_test-clean_1089-134686-0001.wav"]
failures = []


def check(ok, msg):
    if not ok:
        failures.append(msg)
        print("FAIL: " + msg)


def steno(args, timeout=600):
    p = subprocess.run([STENO] + args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def convert(src, fmt, out):
    rc, _, err = steno(["convert", "--to", fmt, "--model", src, "-o", out])
    if rc != 0:
        se.fail("convert --to %s of %s: rc %d %s" % (fmt, src, rc, err.strip()))


def tokens(model, tmp, tag):
    out = os.path.join(tmp, "out_" + tag)
    os.makedirs(out)
    clips = CLIPS[:1] if se.sanitize() else CLIPS  # ASan: jfk.wav only
    paths = [os.path.join(se.audio_dir(), c) if os.path.exists(os.path.join(se.audio_dir(), c))
             else os.path.join(se.shared_dir(), "models", "whisper-test-assets", c) for c in clips]
    rc, _, err = steno(["transcribe", "--model", model, "--output-format", "json", "--output-dir", out] + paths)
    if rc != 0:
        se.fail("transcribe with %s: rc %d %s" % (model, rc, err[-2000:]))
    got = {}
    for p in paths:
        with open(os.path.join(out, se.clip_stem(p) + ".json"), encoding="utf-8") as f:
            got[os.path.basename(p)] = se.all_tokens(json.load(f))
    return got


def round_trip(name, model, tmp):
    t0 = time.time()
    d = os.path.join(tmp, name)
    os.makedirs(d)
    hf, gg, mlx, ct2 = (os.path.join(d, x) for x in ("hf", "ggml-%s.bin" % name, "mlx", "ct2"))
    convert(model, "hf", hf)
    convert(hf, "ggml", gg)
    convert(gg, "mlx", mlx)
    convert(mlx, "ct2", ct2)
    check(filecmp.cmp(os.path.join(model, "model.bin"), os.path.join(ct2, "model.bin"), shallow=False),
          "%s: CT2 -> HF -> ggml -> MLX -> CT2 model.bin differs from the original" % name)
    print("  %s: round trip CT2 -> HF -> ggml -> MLX -> CT2 (%.1f s)" % (name, time.time() - t0))
    ref = tokens(model, tmp, name + "_ct2")
    for fmt, m in (("hf", hf), ("ggml", gg), ("mlx", mlx)):
        got = tokens(m, tmp, name + "_" + fmt)
        for clip in ref:
            check(got[clip] == ref[clip], "%s %s %s: tokens differ from the CT2 original's (%d vs %d tokens)" %
                  (name, fmt, clip, len(got[clip]), len(ref[clip])))
    print("  %s: tokens of %d clips identical in hf, ggml, mlx (%.1f s)" % (name, len(CLIPS), time.time() - t0))
    return hf, gg, mlx


def one_line_error(args, what, must):
    rc, out, err = steno(args)
    lines = [x for x in err.splitlines() if x.strip()]
    check(rc == 1 and len(lines) == 1 and must in err, "%s: rc %d, stderr %r" % (what, rc, err[-300:]))


def bad_input(tmp, hf, gg, mlx):
    d = os.path.join(tmp, "bad")
    os.makedirs(d)
    with open(gg, "rb") as f:
        data = f.read()
    cut = os.path.join(d, "ggml-cut.bin")
    with open(cut, "wb") as f:
        f.write(data[: len(data) // 2])
    one_line_error(["transcribe", "--model", cut, CLIP0], "truncated ggml", "ggml-cut.bin")
    # safetensors: the data cut short, so the header's offsets run past the end of the file
    bad_hf = os.path.join(d, "hf_offsets")
    shutil.copytree(hf, bad_hf)
    st = os.path.join(bad_hf, "model.safetensors")
    os.truncate(st, os.path.getsize(st) // 2)
    one_line_error(["transcribe", "--model", bad_hf, CLIP0], "safetensors offsets past the file", "outside the file")
    # sharded: the index names a shard that is not there
    sh = os.path.join(d, "hf_sharded")
    shutil.copytree(hf, sh)
    os.rename(os.path.join(sh, "model.safetensors"), os.path.join(sh, "model-00001-of-00002.safetensors"))
    with open(os.path.join(sh, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": {"model.encoder.conv1.weight": "model-00001-of-00002.safetensors",
                                                  "model.decoder.layer_norm.weight": "model-00002-of-00002.safetensors"}}, f)
    one_line_error(["transcribe", "--model", sh, CLIP0], "missing shard", "model-00002-of-00002.safetensors")
    os.remove(os.path.join(sh, "model.safetensors.index.json"))
    # a well-formed two-shard folder loads: split the tensors over two files by the index
    split_shards(hf, sh)
    rc, out, err = steno(["transcribe", "--model", sh, CLIP0])
    check(rc == 0 and "country" in out, "two-shard HF folder: rc %d %r" % (rc, (out + err)[-300:]))
    empty = os.path.join(d, "mlx_empty")
    os.makedirs(empty)
    shutil.copy(os.path.join(mlx, "config.json"), empty)
    one_line_error(["transcribe", "--model", empty, CLIP0], "MLX folder without weights", "no Whisper model here")
    one_line_error(["convert", "--to", "hf", "--model", gg, "-o", hf], "convert over an existing folder", hf)
    # an existing file is refused too (rename(2) would replace it), and left as it was
    keep = os.path.join(d, "keep.bin")
    with open(keep, "wb") as f:
        f.write(b"keep")
    one_line_error(["convert", "--to", "ggml", "--model", gg, "-o", keep], "convert over an existing file", "already exists")
    with open(keep, "rb") as f:
        check(f.read() == b"keep", "convert over an existing file: the file was replaced")


def split_shards(hf, dst):
    """Writes hf's model.safetensors as two shards + model.safetensors.index.json in dst."""
    with open(os.path.join(hf, "model.safetensors"), "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        head = json.loads(f.read(n))
        data = f.read()
    names = [k for k in head if k != "__metadata__"]
    half = len(names) // 2
    wm = {}
    for i, part in enumerate((names[:half], names[half:])):
        fn = "model-%05d-of-00002.safetensors" % (i + 1)
        h, blobs, off = {}, [], 0
        for k in part:
            b, e = head[k]["data_offsets"]
            h[k] = {"dtype": head[k]["dtype"], "shape": head[k]["shape"], "data_offsets": [off, off + e - b]}
            blobs.append(data[b:e])
            off += e - b
            wm[k] = fn
        hj = json.dumps(h).encode()
        hj += b" " * ((8 - len(hj) % 8) % 8)
        with open(os.path.join(dst, fn), "wb") as f:
            f.write(len(hj).to_bytes(8, "little") + hj + b"".join(blobs))
    with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": len(data)}, "weight_map": wm}, f)


CLIP0 = os.path.join(se.shared_dir(), "models", "whisper-test-assets", "jfk.wav")


def main():
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="steno_formats_") as tmp:
        hf, gg, mlx = round_trip("tiny.en", se.model_dir(), tmp)
        bad_input(tmp, hf, gg, mlx)
        if se.full():
            round_trip("base", mc.base_model_dir(), tmp)
        else:
            print("  base: the round trip and token check run with STENO_TEST_FULL=1 (CI size)")
    print("%s in %.1f s" % ("FAIL (%d)" % len(failures) if failures else "PASS", time.time() - t0))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
