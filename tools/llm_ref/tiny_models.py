#!/usr/bin/env python3
"""tiny_models.py — tiny random-weight GGUF models, one per architecture steno runs, written with
llama.cpp's own GGUF writer (the `gguf` package, pinned in scripts/server_venv.sh).

Deterministic: numpy's legacy RandomState with a fixed seed per model, tensors and keys in a fixed
order, so the same package versions write the same bytes on every machine (the parity fixtures
record each file's sha256, and tests/unit/test_llm_arch.c refuses a file that differs). The real
head, KV-head and feature layout of each architecture on a small scale: 256-wide embeddings (a
multiple of 256, so llama.cpp's k-quants apply), 4 query heads of 64, 2 KV heads, 2-4 layers, a
byte-level BPE vocabulary of 256 bytes + 40 merges + 2 control tokens.

    python tools/llm_ref/tiny_models.py --out DIR [--type f32|f16|q8_0] [NAME ...]

Names: llama, llama3 (with rope_freqs), qwen2, qwen3, granite, olmo2, smollm3, the mixtures of
experts qwen2moe (with a gated shared expert), qwen3moe, olmoe, granitemoe (an ungated shared
expert) — 4 experts, 2 used per token —, phi3 (fused QKV and gate/up, 48 of 64 dims rotated,
LongRoPE factors), gemma2 (soft-capping, a 32-position sliding window on even layers), and for the generic
tier `generic` (llama's weights labelled `tinymystery`) and `generic_extra` (the same with one tensor
no layout has); `bad_missing` and `bad_shape` are files steno must refuse (a required tensor absent, a
tensor of the wrong shape).
"""

import argparse
import os
import sys
import zlib

import numpy as np
import gguf

E, F, NH, NKV, HD, VOCAB_MERGES = 256, 512, 4, 2, 64, 40
N_EXPERT, N_EXPERT_USED, F_EXP, F_SHEXP = 4, 2, 128, 256

MODELS = {
    # name: (general.architecture, layers, features)
    "llama": ("llama", 2, {}),
    "llama3": ("llama", 2, {"rope_freqs": True}),
    "qwen2": ("qwen2", 2, {"qkv_bias": True}),
    "qwen3": ("qwen3", 2, {"qk_norm": "head"}),
    "granite": ("granite", 2, {"granite": True}),
    "olmo2": ("olmo2", 2, {"qk_norm": "full", "post_norms": True, "no_pre_norms": True}),
    "smollm3": ("smollm3", 4, {}),
    "qwen2moe": ("qwen2moe", 2, {"qkv_bias": True, "moe": True, "shexp": "gated"}),
    "qwen3moe": ("qwen3moe", 2, {"qk_norm": "head", "moe": True}),
    "olmoe": ("olmoe", 2, {"qk_norm": "full", "moe": True, "n_kv": NH, "ff": F_EXP}),
    "granitemoe": ("granitemoe", 2, {"granite": True, "moe": True, "shexp": "plain", "ff": F_EXP}),
    "phi3": ("phi3", 2, {"fused": True, "n_rot": 48, "longrope": True}),
    "gemma2": ("gemma2", 2, {"post_norms": True, "gemma2": True}),
    "generic": ("tinymystery", 2, {}),
    "generic_extra": ("tinymystery", 2, {"extra_tensor": True}),
    # bad input: a required tensor missing, one misshaped
    "bad_missing": ("llama", 2, {"drop": "blk.1.ffn_up.weight"}),
    "bad_shape": ("qwen2", 2, {"qkv_bias": True, "bad_shape": "blk.0.attn_k.weight"}),
}


def byte_vocab():
    """GPT-2's bytes_to_unicode tokens, 40 merges of frequent English pairs, two control tokens."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    byte_tok = {b: chr(c) for b, c in zip(bs, cs)}
    tokens = [byte_tok[b] for b in range(256)]
    pairs = ["Ġ t", "h e", "Ġ a", "i n", "Ġt he", "e r", "o n", "Ġ s", "r e", "a t", "e n", "o r", "Ġ w", "e s",
             "Ġ o", "i s", "a n", "Ġ c", "l l", "Ġ b", "i t", "Ġ f", "Ġ p", "a r", "e d", "Ġ m", "o u", "in g",
             "Ġ d", "a l", "l e", "Ġ h", "i c", "Ġ in", "Ġt h", "Ġ an", "o m", "Ġ is", "Ġo f", "Ġ re"]
    merges = []
    for p in pairs[:VOCAB_MERGES]:
        a, b = p.split(" ")
        if a not in tokens or b not in tokens:
            continue
        merges.append(p)
        if a + b not in tokens:
            tokens.append(a + b)
    types = [gguf.TokenType.NORMAL] * len(tokens)
    tokens += ["<|bos|>", "<|eos|>"]
    types += [gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    return tokens, types, merges


def write(name, out_dir, wtype):
    arch, n_layer, feat = MODELS[name]
    # the generic tier's models hold llama's weights (its fixture is theirs too)
    # a seed per name (crc32: adding a model leaves the others' bytes alone)
    rng = np.random.RandomState(zlib.crc32(("llama" if name.startswith(("generic", "bad")) else name).encode()))
    tokens, types, merges = byte_vocab()
    n_vocab = len(tokens)
    path = os.path.join(out_dir, "tiny-%s-%s.gguf" % (name, wtype))
    w = gguf.GGUFWriter(path, arch)
    w.add_name("steno tiny random weights")  # a neutral name: llama.cpp keys vocabulary quirks on names
    w.add_context_length(512)
    w.add_embedding_length(E)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(feat.get("ff", F))
    w.add_head_count(NH)
    nkv = feat.get("n_kv", NKV)
    w.add_head_count_kv(nkv)
    if feat.get("moe"):
        w.add_expert_count(N_EXPERT)
        w.add_expert_used_count(N_EXPERT_USED)
        w.add_expert_feed_forward_length(F_EXP)
        if feat.get("shexp"):
            w.add_expert_shared_feed_forward_length(F_SHEXP)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10000.0)
    w.add_rope_dimension_count(feat.get("n_rot", HD))
    if feat.get("longrope"):
        w.add_rope_scaling_type(gguf.RopeScalingType.LONGROPE)
        w.add_rope_scaling_attn_factors(1.19)
        w.add_rope_scaling_orig_ctx_len(256)
    w.add_vocab_size(n_vocab)
    if feat.get("gemma2"):
        w.add_attn_logit_softcapping(50.0)
        w.add_final_logit_softcapping(30.0)
        w.add_sliding_window(32)  # layer 0 slides: the 64-token test crosses its window
    if feat.get("granite"):
        w.add_logit_scale(4.0)
        w.add_residual_scale(0.22)
        w.add_embedding_scale(12.0)
        w.add_attention_scale(0.015625)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(n_vocab - 2)
    w.add_eos_token_id(n_vocab - 1)
    w.add_add_bos_token(False)

    qtype = {"f32": gguf.GGMLQuantizationType.F32, "f16": gguf.GGMLQuantizationType.F16,
             "q8_0": gguf.GGMLQuantizationType.Q8_0}[wtype]

    def mat(tname, rows, cols, scale=None):
        if feat.get("bad_shape") == tname:
            rows += 64
        a = rng.standard_normal((rows, cols)).astype(np.float32) * np.float32(scale or 1.0 / np.sqrt(cols))
        if feat.get("drop") == tname:
            return
        if qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(tname, a)
        elif qtype == gguf.GGMLQuantizationType.F16:
            w.add_tensor(tname, a.astype(np.float16))
        else:
            q = gguf.quants.quantize(a, qtype)
            w.add_tensor(tname, q, raw_shape=q.shape, raw_dtype=qtype)

    def mat3(tname, n, rows, cols):
        a = rng.standard_normal((n, rows, cols)).astype(np.float32) * np.float32(1.0 / np.sqrt(cols))
        w.add_tensor(tname, a)  # f32 whatever --type says: gguf-py quantizes 2-D rows only here

    def vec(tname, n, base=1.0, spread=0.1):
        w.add_tensor(tname, (np.float32(base) + rng.standard_normal(n).astype(np.float32) * np.float32(spread)))

    mat("token_embd.weight", n_vocab, E, scale=1.0)
    vec("output_norm.weight", E)
    if name not in ("qwen3", "gemma2"):  # these tie the output to the embedding
        mat("output.weight", n_vocab, E)
    if feat.get("longrope"):
        n = feat["n_rot"] // 2
        w.add_tensor("rope_factors_long.weight", np.linspace(1.0, 12.0, n).astype(np.float32))
        w.add_tensor("rope_factors_short.weight", np.linspace(1.0, 1.5, n).astype(np.float32))
    if feat.get("rope_freqs"):
        # Llama 3.1's factors: 1 for high frequencies, up to 8 for the low ones
        w.add_tensor("rope_freqs.weight", np.linspace(1.0, 8.0, HD // 2).astype(np.float32))
    for l in range(n_layer):
        p = "blk.%d." % l
        if not feat.get("no_pre_norms"):
            vec(p + "attn_norm.weight", E)
        if feat.get("fused"):
            mat(p + "attn_qkv.weight", (NH + 2 * nkv) * HD, E)
        else:
            mat(p + "attn_q.weight", NH * HD, E)
            mat(p + "attn_k.weight", nkv * HD, E)
            mat(p + "attn_v.weight", nkv * HD, E)
        mat(p + "attn_output.weight", E, NH * HD)
        if feat.get("qkv_bias"):
            vec(p + "attn_q.bias", NH * HD, 0.0, 0.5)
            vec(p + "attn_k.bias", nkv * HD, 0.0, 0.5)
            vec(p + "attn_v.bias", nkv * HD, 0.0, 0.5)
        if feat.get("qk_norm") == "head":
            vec(p + "attn_q_norm.weight", HD)
            vec(p + "attn_k_norm.weight", HD)
        elif feat.get("qk_norm") == "full":
            vec(p + "attn_q_norm.weight", NH * HD)
            vec(p + "attn_k_norm.weight", nkv * HD)
        if feat.get("post_norms"):
            vec(p + "post_attention_norm.weight", E)
        if not feat.get("no_pre_norms"):
            vec(p + "ffn_norm.weight", E)
        if feat.get("moe"):
            mat(p + "ffn_gate_inp.weight", N_EXPERT, E)
            mat3(p + "ffn_gate_exps.weight", N_EXPERT, F_EXP, E)
            mat3(p + "ffn_up_exps.weight", N_EXPERT, F_EXP, E)
            mat3(p + "ffn_down_exps.weight", N_EXPERT, E, F_EXP)
            if feat.get("shexp") == "gated":
                vec(p + "ffn_gate_inp_shexp.weight", E, 0.0, 0.2)
            if feat.get("shexp"):
                mat(p + "ffn_gate_shexp.weight", F_SHEXP, E)
                mat(p + "ffn_up_shexp.weight", F_SHEXP, E)
                mat(p + "ffn_down_shexp.weight", E, F_SHEXP)
        elif feat.get("fused"):
            mat(p + "ffn_up.weight", 2 * F, E)
            mat(p + "ffn_down.weight", E, F)
        else:
            mat(p + "ffn_gate.weight", F, E)
            mat(p + "ffn_up.weight", F, E)
            mat(p + "ffn_down.weight", E, F)
        if feat.get("post_norms"):
            vec(p + "post_ffw_norm.weight", E)
        if feat.get("extra_tensor") and l == 0:
            vec(p + "attn_sinks.weight", NH)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--type", default="f32", choices=["f32", "f16", "q8_0"])
    ap.add_argument("names", nargs="*", help="models (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for n in args.names or list(MODELS):
        if n not in MODELS:
            sys.exit("tiny_models: unknown model %r (known: %s)" % (n, ", ".join(MODELS)))
        print(write(n, args.out, args.type))


if __name__ == "__main__":
    main()
