#!/usr/bin/env python3
"""llm_oracle_llamacpp.py — llama.cpp reference outputs for steno's LLM parity tests.

Runs llama.cpp through llama-cpp-python on a GGUF model and writes, for each prompt, the prompt's
tokens and, for every greedy step, the chosen token and the top-K logits. The C test
tests/unit/test_llm_parity.c replays the same tokens through steno (teacher forcing) and requires
the same top-1 token at every step and the logits within a stated tolerance.

Not used by CI (CI has no llama.cpp); run once and commit the small JSON fixtures:

    sh tools/llm_ref/setup_venv.sh /tmp/llama-venv   # llama.cpp 0c1e57098 for AVX2 (see there)
    bash scripts/fetch_llm_models.sh
    /tmp/llama-venv/bin/python tools/llm_oracle_llamacpp.py --model smollm2 \\
        --out tests/fixtures/llm/smollm2_llamacpp.json
    /tmp/llama-venv/bin/python tools/llm_oracle_llamacpp.py --model gemma3 \\
        --out tests/fixtures/llm/gemma3_llamacpp.json
    /tmp/llama-venv/bin/python tools/llm_oracle_llamacpp.py --model qwen2.5-coder-0.5b \\
        --out tests/fixtures/llm/qwen2.5-coder-0.5b_llamacpp.json

llama.cpp settings: CPU, flash attention off (llama.cpp's default CPU path: f16 KV cache,
soft_max then mul_mat), the model's own tokenizer (add_bos as the model says, control tokens parsed
only where a case says so). Tokens are evaluated one per llama_decode call, prompt included, so that
every product runs through ggml's per-row vec_dot kernels (one-token batches never take the
llamafile tinyBLAS path, whose tile accumulation order differs): this is the arithmetic steno
reproduces, and llama.cpp's logits for a token do not depend on the batch it came in otherwise.
"""

import argparse
import hashlib
import json
import os
import sys

CASES = {
    "smollm2": [
        {"name": "capital", "text": "The capital of France is", "special": False, "steps": 64},
        {"name": "story", "text": "Once upon a time, in a small village by the sea, there lived", "special": False,
         "steps": 64},
        {"name": "chat", "special": True, "steps": 64,
         "text": "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
                 "<|im_start|>user\nWhat is the boiling point of water at sea level?<|im_end|>\n"
                 "<|im_start|>assistant\n"},
    ],
    "gemma3": [
        {"name": "capital", "text": "The capital of France is", "special": False, "steps": 64},
        {"name": "code", "text": "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
         "special": False, "steps": 64},
        {"name": "chat", "special": True, "steps": 64,
         "text": "<start_of_turn>user\nWrite a short poem about the sea.<end_of_turn>\n<start_of_turn>model\n"},
    ],
    # Qwen2.5-Coder-0.5B-Instruct Q4_K_M: five prompts, 128 greedy steps each (the models issue's bar)
    "qwen2.5-coder-0.5b": [
        {"name": "chat_palindrome", "special": True, "steps": 128, "top": 8,
         "text": "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
                 "<|im_start|>user\nWrite a Python function that checks whether a string is a palindrome.<|im_end|>\n"
                 "<|im_start|>assistant\n"},
        {"name": "chat_hashmap", "special": True, "steps": 128, "top": 8,
         "text": "<|im_start|>user\nExplain what a hash map is in two sentences, then show one in C.<|im_end|>\n"
                 "<|im_start|>assistant\n"},
        {"name": "python", "text": "def quicksort(arr):\n", "special": False, "steps": 128, "top": 8},
        {"name": "c", "text": "#include <stdio.h>\n\nint main(void) {\n", "special": False, "steps": 128, "top": 8},
        {"name": "prose", "text": "The three laws of thermodynamics are", "special": False, "steps": 128, "top": 8},
    ],
}

# Strings for the tokenizer comparison (llama.cpp's tokenize, no BOS): spaces, digits, punctuation,
# accents, CJK, emoji, code, control tokens written in the text, invalid-free UTF-8 only.
TOKENIZER_STRINGS = [
    "Hello world", " Hello  world ", "hello\n\nworld\t!", "   leading spaces", "trailing spaces   ",
    "1234567890 3.14159 1,000,000", "don't won't I'm you're we've they'll he'd",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m", "\u4f60\u597d\uff0c\u4e16\u754c",
    "\U0001F600 emoji \U0001F44D\U0001F3FD", "def f(x):\n    return x**2  # comment\n",
    "<|im_start|>user\nhi<|im_end|>", "<start_of_turn>model\nok<end_of_turn>", "a\u2581b \u2581 c",
    "ALL CAPS AND MiXeD CaSe", "email@example.com https://example.org/path?q=1&r=2",
    "\u00bf\u00a1Qu\u00e9 tal!? \u00ab\u00bb \u2014 \u2026", "x" * 40, "\n", " ",
]

FILES = {
    "smollm2": "smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": "gemma3/gemma-3-270m-q4_k_m.gguf",
    "qwen2.5-coder-0.5b": "qwen2.5-coder-0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
}


def long_text(min_chars):
    """Plain English prose for the past-the-window case: the project's DESIGN.md paragraphs."""
    here = os.path.dirname(os.path.abspath(__file__))
    design = os.path.join(here, "..", "..", "shared", "DESIGN.md")
    with open(design, encoding="utf-8") as f:
        words = f.read().split()
    text = " ".join(words)
    return text[:min_chars]


def model_path(name):
    root = os.environ.get("STENO_MODELS_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "steno", "models")
    return os.path.join(root, FILES[name])


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=sorted(FILES))
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--top", type=int, default=16, help="logits recorded per step")
    ap.add_argument("--no-repack", action="store_true",
                    help="llama.cpp's -nr: no extra buffer types (no repacked or AMX weight layouts)")
    ap.add_argument("--window-case", action="store_true",
                    help="add a prompt longer than the sliding window + 200 greedy steps (Gemma 3)")
    args = ap.parse_args()

    import numpy as np
    import llama_cpp
    from llama_cpp import Llama

    if args.no_repack:
        default_params = llama_cpp.llama_model_default_params

        def no_extra_bufts():
            p = default_params()
            p.use_extra_bufts = False
            return p
        llama_cpp.llama_model_default_params = no_extra_bufts
    path = model_path(args.model)
    cases = [dict(c) for c in CASES[args.model]]
    n_ctx = 1024
    if args.window_case:
        cases.append({"name": "past_window", "text": long_text(3000), "special": False, "steps": 200,
                      "top": 4})
        n_ctx = 1536
    llm = Llama(model_path=path, n_ctx=n_ctx, n_batch=512, n_ubatch=512, n_threads=args.threads,
                n_threads_batch=args.threads, flash_attn=False, logits_all=False, verbose=False, seed=0)
    out = {
        "oracle": "llama.cpp via llama-cpp-python %s" % llama_cpp.__version__,
        "system_info": llama_cpp.llama_print_system_info().decode(),
        "settings": "CPU, flash_attn=False (f16 KV cache), one token per decode call, n_threads=%d, greedy%s" % (
            args.threads, ", no repacking (-nr)" if args.no_repack else ""),
        "model": args.model,
        "file": os.path.basename(path),
        "sha256": sha256(path),
        "cases": [],
    }
    for case in cases:
        k = case.pop("top", args.top)
        toks = llm.tokenize(case["text"].encode("utf-8"), add_bos=True, special=case["special"])
        llm.reset()
        for t in toks:
            llm.eval([t])
        steps = []
        n_vocab = llm.n_vocab()
        for _ in range(case["steps"]):
            # logits of the last evaluated token (llama_get_logits: the batch's only output row)
            logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).astype(np.float32).copy()
            order = np.lexsort((np.arange(len(logits)), -logits))[:k]
            tok = int(order[0])
            steps.append({"token": tok, "top": [[int(i), float(logits[i])] for i in order]})
            llm.eval([tok])
        gen = llm.detokenize([s["token"] for s in steps]).decode("utf-8", "replace")
        out["cases"].append({
            "name": case["name"], "text": case["text"], "special": case["special"],
            "prompt_tokens": [int(t) for t in toks], "generated_text": gen, "steps": steps,
        })
        print("%s: %d prompt tokens, %d steps, text: %r" % (
            case["name"], len(toks), len(steps),
            llm.detokenize([s["token"] for s in steps]).decode("utf-8", "replace")[:120]), file=sys.stderr)
    toks = []
    for text in TOKENIZER_STRINGS:
        for special in (False, True):
            t = llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)
            toks.append({"text": text, "special": special, "tokens": [int(x) for x in t]})
    out["tokenizer"] = toks
    with open(args.out, "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
