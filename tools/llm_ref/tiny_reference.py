#!/usr/bin/env python3
"""tiny_reference.py — llama.cpp's logits for the tiny models of tiny_models.py, the fixtures of
tests/unit/test_llm_arch.c.

Run by hand in a venv with llama-cpp-python==0.3.36 (llama.cpp 0c1e57098) and gguf==0.19.0
(tools/llm_ref/setup_venv.sh); never in CI:

    VENV=/work/venv-llamacpp; $VENV/bin/python tools/llm_ref/tiny_models.py --out /tmp/tiny --type f32
    $VENV/bin/python tools/llm_ref/tiny_reference.py --models /tmp/tiny --type f32 \\
        --out tests/fixtures/llm/arch

For each model (the generic-tier ones excepted: llama.cpp does not load an unknown architecture;
their test compares them with `llama`'s fixture, the same weights): 64 fixed token ids (a seeded
draw over the vocabulary) evaluated one per llama_decode call (ggml's per-row kernels, as
tools/llm_oracle_llamacpp.py explains), the top-16 logits after each, then 32 greedy tokens.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from llm_oracle_llamacpp import sha256  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", required=True)
    ap.add_argument("--type", default="f32")
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--top", type=int, default=16)
    ap.add_argument("only", nargs="*", help="models (default: all)")
    args = ap.parse_args()
    import llama_cpp
    from llama_cpp import Llama

    os.makedirs(args.out, exist_ok=True)
    for name in args.only or ["llama", "llama3", "qwen2", "qwen3", "granite", "olmo2", "smollm3", "qwen2moe", "qwen3moe", "olmoe",
                 "granitemoe", "phi3", "gemma2"]:
        path = os.path.join(args.models, "tiny-%s-%s.gguf" % (name, args.type))
        llm = Llama(model_path=path, n_ctx=256, n_batch=64, n_threads=args.threads, n_threads_batch=args.threads,
                    flash_attn=False, verbose=False, seed=0)
        n_vocab = llm.n_vocab()
        rng = np.random.RandomState(7)
        tokens = [int(t) for t in rng.randint(0, n_vocab - 2, size=64)]
        llm.reset()
        steps = []

        def top():
            logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).astype(np.float32).copy()
            order = np.lexsort((np.arange(n_vocab), -logits))[:args.top]
            return [[int(i), float(logits[i])] for i in order]

        for t in tokens:
            llm.eval([t])
            steps.append(top())
        greedy = []
        for _ in range(32):
            tok = steps[-1][0][0] if not greedy else greedy_top[0][0]
            greedy.append(tok)
            llm.eval([tok])
            greedy_top = top()
        out = {
            "oracle": "llama.cpp via llama-cpp-python %s" % llama_cpp.__version__,
        "system_info": llama_cpp.llama_print_system_info().decode(),
            "settings": "CPU, flash_attn=False (f16 KV cache), one token per decode call, n_threads=%d" % args.threads,
            "model": name, "file": os.path.basename(path), "sha256": sha256(path),
            "tokens": tokens, "top": steps, "greedy": greedy,
        }
        dst = os.path.join(args.out, "%s-%s.json" % (name, args.type))
        with open(dst, "w") as f:
            json.dump(out, f, separators=(",", ":"))
            f.write("\n")
        print("%s: greedy %s" % (dst, greedy[:8]))


if __name__ == "__main__":
    main()
