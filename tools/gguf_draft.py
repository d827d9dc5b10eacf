#!/usr/bin/env python3
"""gguf_draft.py — makes a draft model for speculative decoding (steno generate --draft-model) from a
GGUF model: the first K transformer blocks (block_count = K, per-layer metadata arrays cut to K),
and every quantized 2-D weight re-quantized at a smaller type (q4_0 by default; token_embd too, as
it is also the output head of tied models). The tokenizer metadata is copied unchanged, so the draft
shares the model's vocabulary, which steno checks token by token at load.

    python3 tools/gguf_draft.py IN.gguf OUT.gguf [--layers K] [--type q4_0|q4_1|q5_0|q8_0]

No smaller model with SmolLM2's or Gemma 3's vocabulary can be had here; a truncated, more coarsely
quantized copy of the same weights is the draft a user without one can make (it is a separate file,
loaded as a separate model with its own KV cache, unlike --draft-kind layers, which shares the
target's weights). Needs the `gguf` package, pinned: pip install gguf==0.19.0 (with numpy); the
quantizers are gguf-py's (gguf/quants.py, llama.cpp's reference ones), the dequantizers too.
"""
import argparse
import sys

try:
    import numpy as np
    import gguf
    from gguf import quants
except ImportError as e:  # one line, the fix
    sys.exit(f"gguf_draft.py: {e}: pip install gguf==0.19.0 (numpy comes with it)")

TYPES = {"q4_0": gguf.GGMLQuantizationType.Q4_0, "q4_1": gguf.GGMLQuantizationType.Q4_1,
         "q5_0": gguf.GGMLQuantizationType.Q5_0, "q8_0": gguf.GGMLQuantizationType.Q8_0}
FLOAT_TYPES = {gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16, gguf.GGMLQuantizationType.BF16}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--layers", type=int, default=0, help="blocks kept (default: all)")
    ap.add_argument("--type", choices=sorted(TYPES), default="q4_0", help="weight type of the draft (default q4_0)")
    a = ap.parse_args()
    try:
        r = gguf.GGUFReader(a.input)
    except (OSError, ValueError) as e:
        sys.exit(f"gguf_draft.py: {a.input}: {e}")
    arch = r.fields["general.architecture"].contents()
    n_layer = int(r.fields[f"{arch}.block_count"].contents())
    keep = a.layers or n_layer
    if not 1 <= keep <= n_layer:
        sys.exit(f"gguf_draft.py: --layers {keep}: need 1..{n_layer}")
    qt = TYPES[a.type]
    w = gguf.GGUFWriter(a.output, arch)
    for f in r.fields.values():
        if f.name == "general.architecture" or f.name.startswith("GGUF."):
            continue
        vt = f.types[0]
        sub = f.types[-1] if vt == gguf.GGUFValueType.ARRAY else None
        val = f.contents()
        if f.name == f"{arch}.block_count":
            val = keep
        elif f.name == "general.file_type":
            continue  # mixed now; steno does not read it
        elif f.name.startswith(arch + ".") and vt == gguf.GGUFValueType.ARRAY and len(val) == n_layer:
            val = val[:keep]  # per-layer arrays (sliding-window pattern, head counts)
        elif f.name == "general.name":
            val = f"{val} draft ({keep} layers, {a.type})"
        w.add_key_value(f.name, val, vt, sub_type=sub)
    block = quants.GGML_QUANT_SIZES[qt][0]
    for t in r.tensors:
        if t.name.startswith("blk.") and int(t.name.split(".")[1]) >= keep:
            continue
        if len(t.shape) == 2 and t.tensor_type not in FLOAT_TYPES and int(t.shape[0]) % block == 0:
            x = quants.dequantize(t.data, t.tensor_type).astype(np.float32)
            w.add_tensor(t.name, quants.quantize(x, qt), raw_dtype=qt)
        else:
            w.add_tensor(t.name, np.asarray(t.data), raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{a.output}: {keep} of {n_layer} blocks, weights {a.type}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
