#!/usr/bin/env python3
"""bench_batching.py — continuous batching over HTTP: aggregate decode throughput of N concurrent
streams (N = 1, 2, 4, 8, 16 by default) against one `steno serve`, and the latency of running
streams while a long prompt arrives.

  python3 tools/bench_batching.py --steno build/steno --model smollm2 [--tokens 64]
                                  [--streams 1,2,4,8,16] [--reps 3] [--long 2000]
                                  [--prefill-chunk N] [--compute ggml|fast]

Starts `steno serve --parallel max(streams)` on a free loopback port, then for each N sends N
completions at once (distinct prompts, temperature 0, max_tokens = --tokens), --reps times, and
prints the median aggregate rate (completion tokens of all streams / wall seconds) and its ratio
to N = 1. Then 4 streams run while a --long-token prompt arrives: time to first token of the long
prompt, and the p50/p99 gap between tokens of the running streams before and during its prefill.
Any OpenAI-compatible server can be measured instead with --url (e.g. llama-server -np 16).
Standard library only.
"""
import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

PROMPTS = ["Once upon a time", "The history of the city", "In a small village by the sea", "My favourite recipe is",
           "The scientist opened the door", "Yesterday the weather", "A short poem about rivers", "Dear diary,",
           "The rules of the game are", "On the first day of school", "The old man said", "Ten facts about owls:",
           "The train left the station", "When the music stopped", "Instructions for planting a tree:",
           "The letter began with"]


def post(host, port, path, obj, timeout=600):
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    c.request("POST", path, json.dumps(obj), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        raise RuntimeError(f"{path}: {r.status} {data[:200]!r}")
    return json.loads(data)


def stream_times(host, port, obj, out):
    """Streams a completion; appends the arrival time of every token event to out."""
    c = http.client.HTTPConnection(host, port, timeout=600)
    c.request("POST", "/v1/completions", json.dumps(dict(obj, stream=True)), {"Content-Type": "application/json"})
    r = c.getresponse()
    for line in r:
        if line.startswith(b"data: ") and not line.startswith(b"data: [DONE]"):
            out.append(time.perf_counter())
    c.close()


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steno", default="build/steno")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--url", help="host:port of a running server instead of starting steno")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--streams", default="1,2,4,8,16")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--long", type=int, default=2000)
    ap.add_argument("--prefill-chunk", type=int, default=0, help="steno serve --prefill-chunk (0: its default)")
    ap.add_argument("--compute", default="ggml", help="steno serve --compute (ggml or fast)")
    a = ap.parse_args()
    streams = [int(x) for x in a.streams.split(",")]
    proc = None
    if a.url:
        host, port = a.url.rsplit(":", 1)
        port = int(port)
    else:
        host = "127.0.0.1"
        s = socket.socket()
        s.bind((host, 0))
        port = s.getsockname()[1]
        s.close()
        par = max(max(streams), 5)
        # the batched pass uses threads x parallel, capped at the CPUs: --threads 1 gives it all
        proc = subprocess.Popen([a.steno, "serve", "--llm-model", a.model, "--port", str(port), "--parallel", str(par),
                                 "--threads", "1", "-q", "--max-queue", "64"] +
                                (["--prefill-chunk", str(a.prefill_chunk)] if a.prefill_chunk else []) +
                                ["--compute", a.compute],
                                stderr=subprocess.DEVNULL)
        for _ in range(600):
            try:
                c = http.client.HTTPConnection(host, port, timeout=2)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
    try:
        req = lambda p: {"model": a.model, "prompt": p, "max_tokens": a.tokens, "temperature": 0}
        post(host, port, "/v1/completions", req(PROMPTS[0]))  # warm-up
        print(f"{a.model}, {a.tokens} tokens per stream, median of {a.reps}; CPU: {cpu_name()}, {os.cpu_count()} threads")
        print("| streams | aggregate tok/s | per stream tok/s | vs 1 stream |")
        print("|---:|---:|---:|---:|")
        base = None
        for n in streams:
            rates = []
            for _ in range(a.reps):
                t0 = time.perf_counter()
                with ThreadPoolExecutor(n) as ex:
                    res = list(ex.map(lambda i: post(host, port, "/v1/completions", req(PROMPTS[i % len(PROMPTS)])),
                                      range(n)))
                wall = time.perf_counter() - t0
                rates.append(sum(r["usage"]["completion_tokens"] for r in res) / wall)
            r = statistics.median(rates)
            base = base or r
            print(f"| {n} | {r:.1f} | {r / n:.1f} | {r / base:.2f}x |", flush=True)
        if a.long > 0:
            times = [[] for _ in range(4)]
            body = {"model": a.model, "max_tokens": 200, "temperature": 0}
            th = [threading.Thread(target=stream_times, args=(host, port, dict(body, prompt=PROMPTS[i]), times[i]))
                  for i in range(4)]
            for x in th:
                x.start()
            time.sleep(1.0)
            long_prompt = " ".join(["the cat sat on the mat"] * (a.long // 6))
            t_long = time.perf_counter()
            first = []
            stream_times(host, port, {"model": a.model, "prompt": long_prompt, "max_tokens": 1, "temperature": 0}, first)
            t_first = first[0] if first else float("nan")
            for x in th:
                x.join()
            before, during = [], []
            for ts in times:
                for p, q in zip(ts, ts[1:]):
                    (during if t_long <= q <= t_first else before if q < t_long else []).append(q - p)
            print(f"long prompt (~{a.long} tokens) while 4 streams run: time to first token {t_first - t_long:.2f} s; "
                  f"inter-token gap of the running streams before it p50 {pct(before, .5) * 1000:.0f} ms "
                  f"p99 {pct(before, .99) * 1000:.0f} ms, during its prefill p50 {pct(during, .5) * 1000:.0f} ms "
                  f"p99 {pct(during, .99) * 1000:.0f} ms ({len(during)} gaps)")
    finally:
        if proc:
            proc.terminate()
            proc.wait(60)


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    sys.exit(main())
