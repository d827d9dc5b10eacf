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


SEEDS = {"fuzz_ws": ws, "fuzz_audio": audio, "fuzz_config": config, "fuzz_tokenizer": tokenizer,
         "fuzz_llama2c": llama2c, "fuzz_stop_text": stop_text, "fuzz_text_request": text_request}


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
