"""test_kv_budget.py — --kv-budget: admission by KV-cache bytes (SmolLM2, --parallel 4).

SmolLM2's caches take 23 040 bytes per token in steps of 256 tokens, so a request of up to 256
tokens may grow its row to 5.9 MB. With --kv-budget 8M:
1. a request that could never fit (max_tokens 2000: 47 MB) gets a 400 kv_budget_exceeded naming
   max_tokens, and the server goes on;
2. 4 concurrent requests of 5.9 MB each run one at a time — /metrics, polled during the run, never
   shows more than one running job and shows the others queued — and each text equals the same
   request's alone on an unlimited server.
"""
import concurrent.futures as cf
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from serverlib import Checks, Server  # noqa: E402

t = Checks()
PROMPTS = ["Once upon a time", "The capital of France is", "Write a haiku about the sea.", "List three colors:"]


def complete(s, prompt, n=40):
    st, body = s.post_json("/v1/completions", {"model": "smollm2", "prompt": prompt, "max_tokens": n,
                                               "temperature": 0})
    return st, json.loads(body)


with Server(["--llm-model", "smollm2", "--parallel", "4"]) as s:
    alone = [complete(s, p)[1]["choices"][0]["text"] for p in PROMPTS]

with Server(["--llm-model", "smollm2", "--parallel", "4", "--kv-budget", "8M"]) as s:
    st, d = complete(s, "Once upon a time", 2000)
    err = d.get("error", {})
    print(f"max_tokens 2000 under --kv-budget 8M: {st} {err.get('message')}")
    t.check(st == 400 and err.get("code") == "kv_budget_exceeded" and err.get("param") == "max_tokens",
            f"a request that never fits: {st} {d}")

    seen = {"running": 0, "queued": 0}
    done = threading.Event()

    def poll():
        while not done.is_set():
            _, body = s.get("/metrics")
            for line in body.decode().splitlines():
                if line.startswith("steno_jobs_running "):
                    seen["running"] = max(seen["running"], int(float(line.split()[1])))
                if line.startswith("steno_queue_depth "):
                    seen["queued"] = max(seen["queued"], int(float(line.split()[1])))
            time.sleep(0.02)

    poller = threading.Thread(target=poll)
    poller.start()
    with cf.ThreadPoolExecutor(len(PROMPTS)) as ex:
        got = list(ex.map(lambda p: complete(s, p), PROMPTS))
    done.set()
    poller.join()
    print(f"4 requests of 5.9 MB each under 8M: at most {seen['running']} running, up to {seen['queued']} queued")
    for p, (st, d), ref in zip(PROMPTS, got, alone):
        t.check(st == 200 and d["choices"][0]["text"] == ref, f"{p!r} under the budget: {st} {d}")
    t.check(seen["running"] == 1, f"{seen['running']} jobs ran at once; the budget holds one")
    t.check(seen["queued"] >= 1, "no request waited")
    st, _ = complete(s, "Once upon a time", 8)
    t.check(st == 200, "the server answers after the budgeted run")

sys.exit(t.finish())
