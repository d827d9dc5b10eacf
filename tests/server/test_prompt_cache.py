"""test_prompt_cache.py — the prompt cache with Gemma 3 (sliding-window layers), over HTTP.

A 3-turn chat with a long system prompt (about 700 tokens: past Gemma 3's 512-token window), one
row (--parallel 1), and an unrelated request between the turns so that the row is taken by
someone else each time and the conversation survives only in the prompt cache.
1. Without a cache (--prompt-cache-bytes 0) the reference texts and times to first token.
2. With the cache: turns 2 and 3 report cached_tokens covering the previous turns (their prompt
   and answer), their texts equal the reference's, and their time to first token is at least 3x
   lower (printed). /metrics counts the hits.
3. A restart with the same --prompt-cache-dir loads the saved entries (log line) and turn 3 again
   reuses its prefix, with the same text.
4. A truncated entry file and one from another model (its model_sha256 changed) are ignored with a
   log line each; turn 3 still gives the same text.
Smaller under ASan+UBSan (a shorter system prompt, the timing check printed but not applied).
"""
import http.client
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from serverlib import SANITIZE, Checks, Server  # noqa: E402

t = Checks()
RULES = 12 if SANITIZE else 26
SYSTEM = "You are a careful assistant for a small public library. " + " ".join(
    f"Rule {i}: answer politely, cite the shelf number {i * 7} when a book is mentioned, and keep answers short."
    for i in range(1, RULES))
QUESTIONS = ["Where can I find books about birds?", "And about the sea?", "Thank you. What are your opening hours?"]
OTHER = [{"role": "user", "content": "Say hello in French."}]
MAX_TOKENS = 16


def chat(s, messages, n=MAX_TOKENS):
    """Streams a greedy chat completion: (text, seconds to the first token, usage)."""
    body = json.dumps({"model": "gemma3", "messages": messages, "temperature": 0, "max_tokens": n, "stream": True,
                       "stream_options": {"include_usage": True}})
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=600)
    t0 = time.monotonic()
    conn.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200, (r.status, r.read())
    text, ttft, usage = "", None, None
    for raw in r:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        d = json.loads(line[6:])
        if d.get("usage"):
            usage = d["usage"]
        for c in d.get("choices", []):
            if c["delta"].get("content"):
                if ttft is None:
                    ttft = time.monotonic() - t0
                text += c["delta"]["content"]
    conn.close()
    return text, ttft if ttft is not None else time.monotonic() - t0, usage


def cached(u):
    return (u.get("prompt_tokens_details") or {}).get("cached_tokens", 0)


def conversation(s, label, answers=None):
    """The 3 turns, an unrelated request after each. answers: the reference's (so that both runs
    send the same messages even if a text differed). Returns [(text, ttft, usage)] and the others'."""
    msgs, turns, others = [{"role": "system", "content": SYSTEM}], [], []
    for k, q in enumerate(QUESTIONS):
        msgs.append({"role": "user", "content": q})
        turns.append(chat(s, msgs))
        text, ttft, u = turns[-1]
        print(f"{label} turn {k + 1}: {u['prompt_tokens']} prompt tokens, {cached(u)} cached, "
              f"first token after {ttft:.3f} s: {text!r}")
        msgs.append({"role": "assistant", "content": answers[k] if answers else text})
        others.append(chat(s, OTHER, 8)[0])
    return turns, others, msgs


def headers_of(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return n, json.loads(f.read(n))


base = ["--llm-model", "gemma3", "--parallel", "1", "--prefill-chunk", "64"]
with Server(base + ["--prompt-cache-bytes", "0"]) as s:
    ref, ref_others, _ = conversation(s, "uncached")
answers = [r[0] for r in ref]

with tempfile.TemporaryDirectory(prefix="steno-pcache-") as d:
    with Server(base + ["--prompt-cache-dir", d]) as s:
        got, others, msgs = conversation(s, "cached", answers)
        for k in range(3):
            t.check(got[k][0] == ref[k][0], f"turn {k + 1}: {got[k][0]!r} vs uncached {ref[k][0]!r}")
        t.check(others == ref_others, f"the unrelated requests' texts differ: {others} vs {ref_others}")
        for k in (1, 2):
            prev = got[k - 1][2]
            need = prev["prompt_tokens"] + prev["completion_tokens"] - 2  # the answer's last token is not fed
            t.check(cached(got[k][2]) >= need,
                    f"turn {k + 1}: cached_tokens {cached(got[k][2])} do not cover the previous turn ({need})")
            ratio = ref[k][1] / got[k][1]
            print(f"turn {k + 1}: time to first token {ref[k][1]:.3f} s uncached, {got[k][1]:.3f} s cached: "
                  f"{ratio:.1f}x lower")
            if not SANITIZE:
                t.check(ratio >= 3, f"turn {k + 1}: time to first token only {ratio:.1f}x lower (want >= 3x)")
        st, body = s.get("/metrics")
        m = body.decode()
        hits = [ln for ln in m.splitlines() if ln.startswith("steno_prompt_cache_hits_total")]
        t.check(st == 200 and hits and float(hits[0].split()[-1]) >= 2, f"/metrics prompt-cache hits: {hits}")
    files = sorted(os.listdir(d))
    print(f"{len(files)} entry files after shutdown")
    t.check(len(files) >= 3 and all(f.endswith(".safetensors") for f in files), f"entry files: {files}")

    # ---- a restart reuses the saved prefixes
    with Server(base + ["--prompt-cache-dir", d]) as s:
        t.check("file(s) in" in s.log() and "loaded" in s.log(), "no log line for the loaded entries")
        text, _, u = chat(s, msgs[:6])
        print(f"after a restart, turn 3: {u['prompt_tokens']} prompt tokens, {cached(u)} cached")
        t.check(text == ref[2][0], f"after a restart, turn 3: {text!r} vs {ref[2][0]!r}")
        t.check(cached(u) >= got[2][2]["prompt_tokens"] - 1, f"after a restart, turn 3 reused only {cached(u)} tokens")

    # ---- a truncated file and another model's file are ignored, with a log line each
    by_len = sorted(files, key=lambda f: int(headers_of(os.path.join(d, f))[1]["__metadata__"]["n_tokens"]))
    longest, second = os.path.join(d, by_len[-1]), os.path.join(d, by_len[-2])
    with open(longest, "r+b") as f:
        f.truncate(os.path.getsize(longest) // 2)
    n, h = headers_of(second)
    raw = open(second, "rb").read()
    sha = h["__metadata__"]["model_sha256"].encode()
    open(second, "wb").write(raw[:8 + n].replace(sha, b"0" * 64) + raw[8 + n:])
    with Server(base + ["--prompt-cache-dir", d]) as s:
        log = s.log()
        t.check(f"ignoring {longest}: truncated" in log, "no log line for the truncated file")
        t.check(f"ignoring {second}: made with another model" in log, "no log line for the foreign file")
        text, _, u = chat(s, msgs[:6])
        print(f"with the damaged files, turn 3: {cached(u)} cached")
        t.check(text == ref[2][0], f"with the damaged files, turn 3: {text!r} vs {ref[2][0]!r}")
        t.check(cached(u) < got[2][2]["prompt_tokens"] - 1, "a damaged entry was used")

sys.exit(t.finish())
