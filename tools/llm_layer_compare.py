#!/usr/bin/env python3
"""llm_layer_compare.py — per layer and token, the max |steno − llama.cpp| of the intermediates
written by tools/llm_layer_dump_steno.c and tools/llm_layer_dump_llamacpp.c (numpy; not used by CI).

    python tools/llm_layer_compare.py --tokens 6 --layers 18 attn_norm Vcur kqv_out ffn_out l_out
"""
import argparse
import os

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--dir", default="/tmp/lcdump")
ap.add_argument("--tokens", type=int, required=True)
ap.add_argument("--layers", type=int, required=True)
ap.add_argument("names", nargs="+")
a = ap.parse_args()
for l in range(a.layers):
    row = []
    for s in a.names:
        fs = os.path.join(a.dir, "s_%s-%d.f32" % (s, l))
        if not os.path.exists(fs):
            row.append(s + ":-")
            continue
        ours = np.fromfile(fs, dtype=np.float32).reshape(a.tokens, -1)
        ds = []
        for t in range(a.tokens):
            ft = os.path.join(a.dir, "t_%s-%d@%d.f32" % (s, l, t))
            if not os.path.exists(ft):
                ds.append("-")
                continue
            ref = np.fromfile(ft, dtype=np.float32)
            ds.append("%.2g" % np.abs(ours[t] - ref).max() if ref.size == ours.shape[1] else "size")
        row.append(s + ":" + ",".join(ds))
    print(l, " ".join(row))
