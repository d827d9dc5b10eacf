#!/usr/bin/env python3
"""fuzz_seeds.py OUT_DIR — writes a small seed corpus for each fuzz target into OUT_DIR/<target>/.

Seeds are valid (or nearly valid) inputs built here from scratch, a few hundred bytes to a few KB
each, so that the fuzzers start inside each format rather than at random bytes; no model weights
or recordings. fuzz_ct2 and fuzz_gguf write their own valid models (FUZZ_*_SEED_DIR, see
scripts/fuzz_smoke.sh). Minimized reproducers of finds live in fuzz/corpus/<target>/ and are
replayed as well. A new target adds a function here and a line in SEEDS.
Standard library only.
"""
import base64
import json
import math
import os
import struct
import sys


def wav(fmt_tag, channels, rate, bits, data, extra=b""):
    block = channels * max(bits, 8) // 8 if fmt_tag in (1, 3) else 0x80
    fmt = struct.pack("<HHIIHH", fmt_tag, channels, rate, rate * block, block, bits) + extra
    return (b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data)) + b"WAVE" + b"fmt " +
            struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data)


def tone(n, rate, amp=12000):
    return [int(amp * math.sin(2 * math.pi * 440 * i / rate)) for i in range(n)]


def audio():
    s16 = struct.pack("<%dh" % 400, *tone(400, 16000))
    st8k = struct.pack("<%dh" % 400, *[v for v in tone(200, 8000) for _ in range(2)])
    f32 = struct.pack("<%df" % 200, *[v / 32768 for v in tone(200, 48000)])
    u8 = bytes((v >> 8) + 128 for v in tone(300, 11025))
    au = b".snd" + struct.pack(">IIIII", 24, len(s16), 3, 22050, 1) + s16[::-1]  # big-endian s16
    issue19 = base64.b64decode(  # the 76-byte WAV of issue 19 (IMA ADPCM, 1 000 000 032 Hz)
        "UklGRlYIAABXQVZFZm10IBQAAAARAAEAIMqaOwAAAACAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAGRh"
        "dGEAAAAAAAAAAA==")
    return {
        "s16_16k_mono.wav": wav(1, 1, 16000, 16, s16),
        "s16_8k_stereo.wav": wav(1, 2, 8000, 16, st8k),
        "f32_48k_mono.wav": wav(3, 1, 48000, 32, f32),
        "u8_11k_mono.wav": wav(1, 1, 11025, 8, u8),
        "s16_22k.au": au,
        "adpcm_1ghz_issue19.wav": issue19,
    }


def config():
    c = {"alignment_heads": [[1, 0], [2, 0], [2, 5], [3, 0]], "lang_ids": [50259, 50260, 50261],
         "suppress_ids": [1, 2, 7, 8, 9, 10, 14, 25], "suppress_ids_begin": [220, 50256]}
    return {"config.json": json.dumps(c).encode(), "empty.json": b"{}",
            "heads_only.json": json.dumps({"alignment_heads": [[0, 1]]}).encode()}


def bytes_to_unicode():
    """GPT-2's byte <-> printable-unicode table (openai/gpt-2 encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def split(first, second, prefix=b""):
    return prefix + struct.pack("<I", len(first)) + first + second


def tokenizer():
    b2u = bytes_to_unicode()
    toks = [b2u[b] for b in range(256)]
    merges = [("Ġ", "a"), ("Ġa", "n"), ("n", "d"), ("Ġ", "s"), ("Ġs", "o"), ("e", "r"), ("Ġ", "t")]
    for a, b in merges:
        toks.append(a + b)
    toks += ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|notimestamps|>", "<|0.00|>"]
    vocab_txt = ("\n".join(toks) + "\n").encode()
    tj = {"model": {"type": "BPE", "vocab": {t: i for i, t in enumerate(toks)},
                    "merges": ["%s %s" % m for m in merges]}}
    tok_json = json.dumps(tj, ensure_ascii=False).encode()
    vocab_json = json.dumps({t: i for i, t in enumerate(toks)}, ensure_ascii=False).encode()
    return {"txt_vocab": split(vocab_txt, tok_json, b"\0"),
            "json_vocab": split(vocab_json, tok_json, b"\1"),
            "no_merges": split(vocab_txt, b'{"model": {"merges": []}}', b"\0")}


def llama2c():
    dim, hidden, layers, heads, kv, vocab, seq = 8, 16, 1, 2, 2, 4, 4
    hs = dim // heads
    n = (vocab * dim + layers * dim + layers * dim * dim * 2 + layers * dim * kv * hs * 2 +
         layers * dim + layers * hidden * dim * 3 + dim + seq * hs)
    ck = struct.pack("<7i", dim, hidden, layers, heads, kv, vocab, seq)
    ck += struct.pack("<%df" % n, *[((i * 37) % 17 - 8) / 16 for i in range(n)])
    tk = struct.pack("<i", 8)
    for i, piece in enumerate([b"<unk>", b"<s>", b" a", b"b"]):
        tk += struct.pack("<fi", -float(i), len(piece)) + piece
    unshared = bytearray(ck)
    struct.pack_into("<i", unshared, 20, -vocab)
    unshared += struct.pack("<%df" % (vocab * dim), *([0.25] * (vocab * dim)))
    return {"stories_tiny": split(ck, tk), "unshared_classifier": split(bytes(unshared), tk),
            "checkpoint_only": split(ck, b"")}


def stop_text():
    """Stop strings, then pieces, split at 0xFF (fuzz/fuzz_stop_text.c)."""
    sep = b"\xff"
    return {"one_stop": b"\x01" + b"Paris" + sep + sep.join([b"The capital", b" is Pa", b"ri", b"s.", b" Yes"]),
            "two_stops_utf8": b"\x02" + b"\n\n" + sep + "caf\u00e9".encode() + sep +
            sep.join([b"un ", "caf\u00e9".encode()[:4], "caf\u00e9".encode()[4:], b"\n", b"\nend"]),
            "no_stop": b"\x00" + sep.join([b"abc", "\u4e2d\u6587".encode(), b"\xe2\x82", b"\xac"])}


def text_request():
    """Chat (first byte odd) and completion (even) bodies (fuzz/fuzz_text_request.c)."""
    bodies = {
        "chat": (1, {"model": "stories260K", "messages": [{"role": "system", "content": "Be brief."},
                                                           {"role": "user", "content": "Hello"}],
                     "temperature": 0.5, "max_tokens": 8, "stop": ["\n", "END"], "logprobs": True, "top_logprobs": 2,
                     "stream": True, "stream_options": {"include_usage": True}}),
        "chat_parts": (1, {"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]}),
        "completion": (0, {"prompt": "Once upon a time", "max_tokens": 16, "temperature": 0, "seed": 7,
                           "logit_bias": {"5": -100, "17": 2.5}, "top_k": 10, "top_p": 0.9, "min_p": 0.1,
                           "presence_penalty": 0.5, "frequency_penalty": -0.5, "logprobs": 3, "echo": True}),
        "completion_tokens": (0, {"prompt": [1, 2, 3, 4], "max_completion_tokens": 4, "stop": "x"}),
        "bad_types": (0, {"prompt": 5, "max_tokens": "x", "n": 2}),
    }
    return {k: bytes([flag]) + json.dumps(v).encode() for k, (flag, v) in bodies.items()}


def ws_frame(op, payload, fin=True, mask=b"\x11\x22\x33\x44"):
    """A masked client frame (RFC 6455 5.2)."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | op])
    if n < 126:
        head += bytes([0x80 | n])
    elif n <= 0xFFFF:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws():
    """Client byte streams for the WebSocket reader (fuzz/fuzz_ws.c): the first byte picks the
    feed size; then frames (binary PCM, fragmented text, ping, close)."""
    pcm = struct.pack("<300h", *range(-150, 150))
    return {
        "binary_one": b"\x07" + ws_frame(2, pcm),
        "fragmented": b"\x03" + ws_frame(1, b'{"type":', fin=False) + ws_frame(9, b"hi") +
        ws_frame(0, b'"finish"}'),
        "ping_close": b"\x10" + ws_frame(9, b"") + ws_frame(8, struct.pack(">H", 1000) + b"bye"),
        "long16": b"\x3f" + ws_frame(2, bytes(70000)[:5000]),
        "key": b"\x01" + b"dGhlIHNhbXBsZSBub25jZQ==" + ws_frame(2, b"ab"),
    }


# --- Whisper weight formats (fuzz_whisper_ggml/_hf/_mlx): one tiny model, D=4, 1 head, 1+1 layers,
# 1 mel bin, 300 tokens, in openai-whisper names, plus (ggml) one tensor of every block type.
W_D, W_VOCAB, W_MELS = 4, 300, 1


def whisper_tensors():
    """[(openai name, shape)] of the tiny model."""
    D = W_D
    t = [("encoder.positional_embedding", [8, D]), ("encoder.conv1.weight", [D, W_MELS, 3]),
         ("encoder.conv1.bias", [D]), ("encoder.conv2.weight", [D, D, 3]), ("encoder.conv2.bias", [D])]
    for side, cross in (("encoder", False), ("decoder", True)):
        if side == "decoder":
            t += [("decoder.positional_embedding", [6, D]), ("decoder.token_embedding.weight", [W_VOCAB, D])]
        p = side + ".blocks.0."
        for a in ("attn",) + (("cross_attn",) if cross else ()):
            for x in ("query", "key", "value", "out"):
                t.append((p + a + "." + x + ".weight", [D, D]))
                if x != "key":
                    t.append((p + a + "." + x + ".bias", [D]))
            t += [(p + a + "_ln.weight", [D]), (p + a + "_ln.bias", [D])]
        t += [(p + "mlp.0.weight", [4 * D, D]), (p + "mlp.0.bias", [4 * D]), (p + "mlp.2.weight", [D, 4 * D]),
              (p + "mlp.2.bias", [D]), (p + "mlp_ln.weight", [D]), (p + "mlp_ln.bias", [D])]
        t += [(side + (".ln_post" if side == "encoder" else ".ln") + ".weight", [D]),
              (side + (".ln_post" if side == "encoder" else ".ln") + ".bias", [D])]
    return t


def _n(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def whisper_ggml():
    hp = [W_VOCAB, 8, W_D, 1, 1, 6, W_D, 1, 1, W_MELS, 1]
    out = struct.pack("<12i", 0x67676D6C, *hp) + struct.pack("<2i", W_MELS, 201) + b"\0" * (4 * 201 * W_MELS)
    out += struct.pack("<i", 257) + b"".join(struct.pack("<i", 1) + bytes([b]) for b in range(256))
    out += struct.pack("<i", 2) + b"ab"
    body = b""
    for name, shape in whisper_tensors():
        f16 = len(shape) >= 2 and "positional" not in name
        body += struct.pack("<3i", len(shape), len(name), 1 if f16 else 0)
        body += struct.pack("<%di" % len(shape), *reversed(shape)) + name.encode()
        body += struct.pack("<%de" % _n(shape), *[0.25] * _n(shape)) if f16 else \
            struct.pack("<%df" % _n(shape), *[0.5] * _n(shape))
    quants = b""
    for ttype, block in ((2, 18), (3, 20), (6, 22), (7, 24), (8, 34)):
        name = b"extra.q%d" % ttype
        quants += struct.pack("<3i", 2, len(name), ttype) + struct.pack("<2i", 32, 2) + name
        quants += bytes(range(block)) * 2
    return {"tiny_f16": out + body, "tiny_quant_types": out + body + quants, "header_only": out}


def safetensors(tensors, dtype="F16"):
    header, blobs, off = {}, [], 0
    for name, shape in tensors:
        n = _n(shape)
        blob = struct.pack("<%de" % n, *[0.125] * n) if dtype == "F16" else struct.pack("<%df" % n, *[0.125] * n)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * ((8 - len(hj) % 8) % 8)
    return struct.pack("<Q", len(hj)) + hj + b"".join(blobs)


def hf_name(n):
    for a, b in ((".attn_ln.", ".self_attn_layer_norm."), (".cross_attn_ln.", ".encoder_attn_layer_norm."),
                 (".mlp_ln.", ".final_layer_norm."), (".attn.", ".self_attn."), (".cross_attn.", ".encoder_attn."),
                 (".query.", ".q_proj."), (".key.", ".k_proj."), (".value.", ".v_proj."), (".out.", ".out_proj."),
                 (".mlp.0.", ".fc1."), (".mlp.2.", ".fc2."), (".blocks.", ".layers."),
                 ("encoder.ln_post.", "encoder.layer_norm."), ("decoder.ln.", "decoder.layer_norm."),
                 (".positional_embedding", ".embed_positions.weight"), (".token_embedding.", ".embed_tokens.")):
        n = n.replace(a, b)
    return "model." + n


def whisper_hf():
    cfg = json.dumps({"num_mel_bins": W_MELS, "max_source_positions": 8, "d_model": W_D,
                      "encoder_attention_heads": 1, "encoder_layers": 1, "vocab_size": W_VOCAB,
                      "max_target_positions": 6, "decoder_attention_heads": 1, "decoder_layers": 1}).encode()
    tens = [(hf_name(n), s) for n, s in whisper_tensors()]
    st = safetensors(tens)
    index = json.dumps({"weight_map": {n: "model-00001-of-00001.safetensors" for n, _ in tens}}).encode()
    return {"single": split(cfg, b"\0" + st), "sharded": split(cfg, b"\1" + split(index, st)),
            "bf16_f32": split(cfg, b"\0" + safetensors(tens, "F32"))}


def npz(tensors):
    """np.savez's layout: a zip of stored .npy members (version 1.0 headers)."""
    import io
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, shape in tensors:
            n = _n(shape)
            h = ("{'descr': '<f2', 'fortran_order': False, 'shape': (%s), }" %
                 "".join("%d, " % x for x in shape)).encode()
            h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
            z.writestr(name + ".npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h +
                       struct.pack("<%de" % n, *[0.125] * n))
    return buf.getvalue()


def whisper_mlx():
    cfg = json.dumps({"n_mels": W_MELS, "n_audio_ctx": 8, "n_audio_state": W_D, "n_audio_head": 1,
                      "n_audio_layer": 1, "n_vocab": W_VOCAB, "n_text_ctx": 6, "n_text_state": W_D,
                      "n_text_head": 1, "n_text_layer": 1, "model_type": "whisper"}).encode()
    tens = []
    for n, s in whisper_tensors():
        if n == "encoder.positional_embedding":
            continue
        n = n.replace(".mlp.0.", ".mlp1.").replace(".mlp.2.", ".mlp2.")
        if len(s) == 3:
            s = [s[0], s[2], s[1]]
        tens.append((n, s))
    return {"safetensors": split(cfg, b"\0" + safetensors(tens)), "npz": split(cfg, b"\1" + npz(tens))}


def jinja():
    """Chat templates (ChatML with a default system prompt, Llama 3 with tools, Gemma turns, a macro
    and namespace one) each with a context after a NUL byte."""
    ctx = json.dumps({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"},
                                   {"role": "assistant", "content": "Yo"}, {"role": "user", "content": "2+2?"}],
                      "add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>",
                      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"a": 1.5}}}]}).encode()
    chatml = (b"{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
              b"{{ '<|im_start|>system\\nYou are helpful.<|im_end|>\\n' }}{% endif %}"
              b"{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
              b"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
    llama3 = (b"{{- bos_token }}{%- if tools is defined and tools is not none %}{{- tools | tojson(indent=4) }}"
              b"{%- endif %}{%- for m in messages | selectattr('role', 'ne', 'tool') %}"
              b"{{- '<|start_header_id|>' + m.role + '<|end_header_id|>\\n\\n' + m.content | trim + '<|eot_id|>' }}"
              b"{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}")
    gemma = (b"{{ bos_token }}{% set ns = namespace(sys='') %}{% for m in messages %}"
             b"{% if m['role'] == 'system' %}{% set ns.sys = m['content'] ~ '\\n\\n' %}{% continue %}{% endif %}"
             b"{% set role = 'model' if m['role'] == 'assistant' else m['role'] %}"
             b"{{ '<start_of_turn>' + role + '\\n' + (ns.sys if loop.index0 == 1 else '') + m['content'] | trim }}"
             b"<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")
    macro = (b"{% macro render(x, sep=', ') -%}{%- if x is mapping -%}{{ x | dictsort | map('join', '=') | join(sep) }}"
             b"{%- elif x is iterable and x is not string -%}[{{ x | join(sep) }}]{%- else -%}{{ x }}{%- endif -%}"
             b"{%- endmacro %}{% for m in messages[::-1] if m.content %}{{ loop.index }}:{{ render(m) }}|"
             b"{{ m.content[1:] ~ (m.content * 2) | upper | replace('H', 'h') }}{% else %}none{% endfor %}"
             b"{{ '%d' if 1 }}{{ [1, 2.5, none, true, 'x'] }}{{ {'a': (1,)} }}{{ range(3) | sum }}{{ 7 // 2 ** 2 % 5 }}")
    return {"chatml": chatml + b"\0" + ctx, "llama3_tools": llama3 + b"\0" + ctx, "gemma_ns": gemma + b"\0" + ctx,
            "macro_filters": macro + b"\0" + ctx, "no_context": chatml}


SEEDS = {"fuzz_jinja": jinja, "fuzz_ws": ws, "fuzz_audio": audio, "fuzz_config": config, "fuzz_tokenizer": tokenizer,
         "fuzz_llama2c": llama2c, "fuzz_stop_text": stop_text, "fuzz_text_request": text_request,
         "fuzz_whisper_ggml": whisper_ggml, "fuzz_whisper_hf": whisper_hf, "fuzz_whisper_mlx": whisper_mlx}


def main():
    if len(sys.argv) != 2:
        print("usage: fuzz_seeds.py OUT_DIR", file=sys.stderr)
        return 2
    for target, make in SEEDS.items():
        d = os.path.join(sys.argv[1], target)
        os.makedirs(d, exist_ok=True)
        for name, data in make().items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
