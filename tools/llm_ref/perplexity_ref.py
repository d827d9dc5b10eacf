#!/usr/bin/env python3
"""perplexity_ref.py — llama.cpp's perplexity of a text, scored as `steno perplexity` scores it: the
whole text in one context (no BOS unless the model adds one), every token after the first predicted
from all before it, ppl = exp(mean NLL). Run by hand with llama-cpp-python (tools/llm_ref/
setup_venv.sh); tests/py/test_llm_perplexity.py compares steno with the number it prints:

    $VENV/bin/python tools/llm_ref/perplexity_ref.py MODEL.gguf tests/fixtures/llm/devils_dictionary.txt \
        > tests/fixtures/llm/qwen2.5-coder-0.5b_perplexity.json

An optional third argument N scores the first N predictions only (the sanitized test's subset).

(llama-perplexity's own figure scores the second half of 512-token chunks: another quantity.)
"""

import json
import math
import os
import sys

import numpy as np
from llama_cpp import Llama


def main():
    model, text_path = sys.argv[1], sys.argv[2]
    first = int(sys.argv[3]) if len(sys.argv) > 3 else 0  # score only the first N predictions
    text = open(text_path, encoding="utf-8").read()
    len_ctx = 4096
    llm = Llama(model_path=model, n_ctx=len_ctx, n_batch=512, n_ubatch=512, n_threads=2, flash_attn=False,
                verbose=False)
    toks = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    n_vocab = llm.n_vocab()
    nll = 0.0
    # one token per decode call (the fixtures' arithmetic; llama-cpp-python 0.3.36 crashes with
    # logits_all over a 2k-token batch here)
    for i in range(len(toks) - 1 if not first else first):
        llm.eval([toks[i]])
        row = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).astype(np.float64)
        m = row.max()
        lse = m + math.log(np.exp(row - m).sum())
        nll += lse - row[toks[i + 1]]
        if i + 1 == 128:
            ppl_128 = math.exp(nll / 128)
    n = len(toks) - 1 if not first else first
    import llama_cpp
    print(json.dumps({"oracle": "llama.cpp via llama-cpp-python %s, one token per decode call" % llama_cpp.__version__,
                      "file": os.path.basename(model), "text": os.path.basename(text_path), "tokens": len(toks),
                      "scored": n, "ppl": round(math.exp(nll / n), 6), "ppl_first_128": round(ppl_128, 6),
                      "system_info": llama_cpp.llama_print_system_info().decode()}))


if __name__ == "__main__":
    main()
