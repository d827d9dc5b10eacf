#!/usr/bin/env python3
"""llm_bench.py — prompt and decode speed of `steno generate` against llama.cpp, same threads.

For each model (SmolLM2 Q4_1, Gemma 3 Q4_K_M, stories260K) and each repetition, interleaved:
  steno:     `steno generate -m MODEL -f PROMPT -n N --temp 0 -t T` and its stderr line
             "prompt: P tokens in S s (... tok/s); decode: D tokens in S s (... tok/s)";
  llama.cpp: llama-cpp-python (same GGUF, n_threads = n_threads_batch = T, n_batch 512, flash
             attention off), the prompt evaluated in one call, then N greedy steps of
             argmax + eval([token]) — the loop steno runs — timed with perf_counter.
Reports medians and the steno/llama.cpp ratios (> 1: steno faster). Run with the venv that has
llama-cpp-python (tools/llm_oracle_llamacpp.py explains how to make it):

    /tmp/llama-venv/bin/python tools/llm_bench.py --steno build/steno --threads 2 --reps 3

Against llama.cpp built from source (issue #13), without building it twice: the sdist's Python
package on PYTHONPATH, its `llama_cpp/lib` a link to the tree's build/bin, and
LLAMA_CPP_LIB_PATH=$LLAMA/build/bin (a venv with numpy, typing-extensions, diskcache, jinja2).

Nothing here is used by the tests (tests never assert timings).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

PROMPT = (
    "The lighthouse keeper climbed the spiral stairs every evening at dusk, carrying a small brass "
    "lantern and a notebook in which he recorded the weather, the ships that passed, and the birds "
    "that rested on the gallery rail. Over forty years he filled more than a hundred notebooks. "
    "When the light was finally automated, the notebooks were given to the town library, where "
    "children still read them on rainy afternoons, tracing the old man's careful handwriting and "
    "wondering what it was like to watch the sea for a whole lifetime. One entry, written during "
    "the great storm of the winter, describes"
)

MODELS = {
    "smollm2": "smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": "gemma3/gemma-3-270m-q4_k_m.gguf",
}


def cache_root():
    return os.environ.get("STENO_MODELS_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "steno", "models")


def run_steno(cmd, model, prompt_file, n, threads, compute=None):
    p = subprocess.run(cmd + ["generate", "-m", model, "-f", prompt_file, "-n", str(n), "--temp", "0", "-t",
                              str(threads), "-b", "512"] + (["--compute", compute] if compute else []),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("steno failed: " + p.stderr)
    m = re.search(r"prompt: (\d+) tokens in ([\d.]+) s .*decode: (\d+) tokens in ([\d.]+) s", p.stderr)
    if not m:
        sys.exit("no speeds in steno's stderr: " + p.stderr)
    np_, tp, nd, td = int(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4))
    return np_ / tp, nd / td, np_


def make_llama(path, threads):
    from llama_cpp import Llama
    return Llama(model_path=path, n_ctx=1024, n_batch=512, n_ubatch=512, n_threads=threads,
                 n_threads_batch=threads, flash_attn=False, verbose=False)


def run_llama(llm, n):
    import numpy as np
    toks = llm.tokenize(PROMPT.encode(), add_bos=True, special=False)
    llm.reset()
    nv = llm.n_vocab()
    t0 = time.perf_counter()
    llm.eval(toks)
    t1 = time.perf_counter()
    for i in range(n):  # n tokens sampled, n - 1 evaluated: what `steno generate -n n` does
        logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(nv,))
        tok = int(np.argmax(logits))
        if i + 1 < n:
            llm.eval([tok])
    t2 = time.perf_counter()
    return len(toks) / (t1 - t0), n / (t2 - t1), len(toks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steno", default="build/steno", help="steno binary (or a command, space-separated)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("-n", type=int, default=64, help="tokens to generate")
    ap.add_argument("--models", default="smollm2,gemma3",
                    help="comma-separated: names of the table above or paths of GGUF files")
    ap.add_argument("--compute", default=None, help="steno's --compute (default: steno's own default)")
    args = ap.parse_args()
    cmd = args.steno.split()
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(PROMPT)
        prompt_file = f.name
    print("| model | threads | prompt tokens | steno prompt tok/s | llama.cpp prompt tok/s | ratio | "
          "steno decode tok/s | llama.cpp decode tok/s | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        path = os.path.join(cache_root(), MODELS[name]) if name in MODELS else name
        mname = name if name in MODELS else path  # steno takes both: a cache name or a file
        llm = make_llama(path, args.threads)
        run_llama(llm, 4)  # warm the page cache and llama.cpp's buffers
        run_steno(cmd, mname, prompt_file, 4, args.threads, args.compute)
        sp, sd, lp, ld = [], [], [], []
        for _ in range(args.reps):
            a, b, npr = run_steno(cmd, mname, prompt_file, args.n, args.threads, args.compute)
            sp.append(a)
            sd.append(b)
            a, b, _ = run_llama(llm, args.n)
            lp.append(a)
            ld.append(b)
        med = statistics.median
        print("| %s | %d | %d | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f |" % (
            os.path.basename(name) + (f" ({args.compute})" if args.compute else ""), args.threads, npr, med(sp), med(lp), med(sp) / med(lp), med(sd), med(ld), med(sd) / med(ld)),
            flush=True)
        del llm
    os.unlink(prompt_file)


if __name__ == "__main__":
    main()
