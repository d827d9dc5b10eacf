"""test_llm_models.py — steno serve with Qwen2.5-Coder-0.5B-Instruct (Q4_K_M: the qwen2 architecture,
its BPE pre-tokenizer and chat template) through the official `openai` client:

  - /v1/models lists it; a coding question to Qwen is answered with Python code (a ```python block
    defining `factorial`), equal to `steno chat`'s greedy answer to the same message;
  - the streamed answer equals the plain one; the legacy completion equals `steno generate`;
  - four different chats at once on two slots (continuous batching) equal their solo answers;
  - a request naming a model the server does not hold gets a 404 JSON error.
The client is built with max_retries=0 so that no retry hides an error.
"""
import concurrent.futures as cf
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from serverlib import BIN, SANITIZE, Checks, Server  # noqa: E402

import openai  # noqa: E402

t = Checks()
QWEN = "qwen2.5-coder-0.5b"
N = 24 if SANITIZE else 64


def cli(args, stdin=None):
    return subprocess.run([BIN] + args, input=stdin, capture_output=True, text=True, check=True).stdout


with Server(["--llm-model", QWEN, "--parallel", "2", "--threads", "2"]) as s:
    c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=900)
    models = [m.id for m in c.models.list().data]
    t.check(models == [QWEN], f"models.list: {models}")

    q = "Write a Python function that returns the factorial of n."
    ref = cli(["chat", "-m", QWEN, "--temp", "0", "-n", str(N), "-t", "2"], stdin=q + "\n").strip()
    r = c.chat.completions.create(model=QWEN, messages=[{"role": "user", "content": q}], temperature=0, max_tokens=N)
    got = r.choices[0].message.content
    print(f"qwen answer: {got!r}")
    t.check("```python" in got and "def factorial(" in got, f"qwen's answer is not Python code: {got!r}")
    t.check(got.strip() == ref, f"chat: {got!r} vs CLI {ref!r}")
    parts = [ch.choices[0].delta.content or "" for ch in c.chat.completions.create(
        model=QWEN, messages=[{"role": "user", "content": q}], temperature=0, max_tokens=N, stream=True)
        if ch.choices]
    t.check("".join(parts) == got, f"streamed {''.join(parts)!r} vs {got!r}")

    ref = cli(["generate", "-m", QWEN, "-p", "def fibonacci(n):", "--temp", "0", "-n", "24", "-t", "2"])
    r = c.completions.create(model=QWEN, prompt="def fibonacci(n):", temperature=0, max_tokens=24)
    t.check(r.choices[0].text == ref.rstrip("\n"), f"completion {r.choices[0].text!r} vs CLI {ref!r}")

    prompts = ["Reverse a string in Python.", "What does `git rebase` do?", "Write a C hello world.",
               "Explain a hash map briefly."]

    def chat(p):
        return c.chat.completions.create(model=QWEN, messages=[{"role": "user", "content": p}], temperature=0,
                                         max_tokens=16).choices[0].message.content

    alone = [chat(p) for p in prompts]
    with cf.ThreadPoolExecutor(4) as ex:
        together = list(ex.map(chat, prompts))
    t.check(together == alone, f"batched chats differ from solo:\n{together}\n{alone}")

    try:
        c.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}])
        t.check(False, "unknown model accepted")
    except openai.NotFoundError as e:
        print(f"unknown model: {e.status_code}")
    except openai.APIStatusError as e:
        t.check(False, f"unknown model: status {e.status_code}, expected 404")

t.finish()
