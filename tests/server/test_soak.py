"""test_soak.py — a long mixed load: SOAK_REQUESTS requests (default 500, sized for CI; 150 under ASan+UBSan; 1000 and more by hand; over 100),
16 at a time, in a fixed-seed shuffled mix of good requests (transcriptions, completions,
operations endpoints) and every bad kind (malformed multipart, missing file, undecodable audio,
the hostile WAV, unknown response_format, wrong JSON types, unknown model, invalid UTF-8, a body
over the limit) plus clients that disconnect mid-upload and mid-stream.
Checks: no crash (the server answers to the end and exits 0 on SIGTERM; the harness fails on any
sanitizer report in its log), every bad request answered with its 4xx, every good one correct,
and the server's RSS at rest after the run within 10 % of its RSS at rest after the first 100 requests
(printed, with the RSS under load every 100 requests).
"""
import http.client
import json
import os
import random
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(__file__))
from serverlib import SANITIZE, SHARED, Checks, Server, audio, multipart  # noqa: E402

t = Checks()
N = int(os.environ.get("SOAK_REQUESTS", "150" if SANITIZE else "500"))
if N <= 100:
    sys.exit("test_soak.py: SOAK_REQUESTS must be over 100 (the RSS check compares the end with request 100)")
CONCURRENCY = 16
STORIES = os.path.join(SHARED, "models/stories260K/stories260K.bin")
CLIPS = {n: open(audio(n), "rb").read() for n in ("alsa_Front_Center.wav", "timit_LDC93S1.wav", "arctic_aew_a0001.wav")}
HOSTILE_WAV = bytes.fromhex(
    "524946465608000057415645666d74201400000011000100" "20ca9a3b0000000080000000000000000000000000000000"
    "0000000000000000000000000000000064617461000000000000000000")
PROMPTS = ["Once upon a time", "The little dog", "Lily and Ben"]


def req(s, method, path, body=b"", headers=None, timeout=300):
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def form(s, fields, files):
    body, ctype = multipart(fields, files)
    return req(s, "POST", "/v1/audio/transcriptions", body, {"Content-Type": ctype})


def jpost(s, path, obj):
    data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return req(s, "POST", path, data, {"Content-Type": "application/json"})


def error_code(data):
    try:
        return json.loads(data)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None


def disconnect_mid_upload(s):
    body, ctype = multipart({}, {"file": ("a.wav", CLIPS["arctic_aew_a0001.wav"])})
    sk = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    sk.sendall(f"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\n"
               f"Content-Length: {len(body)}\r\n\r\n".encode() + body[: len(body) // 3])
    sk.close()
    return True


def disconnect_mid_stream(s, kind):
    if kind == "audio":
        body, ctype = multipart({"stream": "true"}, {"file": ("a.wav", CLIPS["arctic_aew_a0001.wav"])})
        head = f"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\n"
    else:
        body = json.dumps({"prompt": "Once upon a time", "max_tokens": 200, "stream": True}).encode()
        head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    sk = socket.create_connection(("127.0.0.1", s.port), timeout=60)
    sk.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
    got = sk.recv(64)  # the status line has arrived: the stream runs
    sk.close()
    return got.startswith(b"HTTP/1.1 200")


def make_tasks(refs):
    rng = random.Random(20261201)
    kinds = (["transcribe"] * 15 + ["complete"] * 20 + ["ops"] * 15 + ["bad"] * 40 + ["drop_upload"] * 5 +
             ["drop_stream"] * 5)
    return [rng.choice(kinds) + ":" + str(rng.randrange(1 << 30)) for _ in range(N)]


BAD = [
    ("no boundary", lambda s: req(s, "POST", "/v1/audio/transcriptions", b"x", {"Content-Type": "multipart/form-data"}),
     400, "invalid_multipart"),
    ("truncated multipart", lambda s: req(s, "POST", "/v1/audio/transcriptions",
                                           b"--BB\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nxx",
                                           {"Content-Type": "multipart/form-data; boundary=BB"}), 400, "invalid_multipart"),
    ("missing file", lambda s: form(s, {"model": "whisper-1"}, {}), 400, "missing_file"),
    ("undecodable", lambda s: form(s, {}, {"file": ("x.txt", b"not audio " * 100)}), 400, "invalid_audio"),
    ("hostile wav", lambda s: form(s, {}, {"file": ("h.wav", HOSTILE_WAV)}), 400, "invalid_audio"),
    ("response_format", lambda s: form(s, {"response_format": "doc"}, {"file": ("a.wav", CLIPS["timit_LDC93S1.wav"])}),
     400, "invalid_value"),
    ("json type", lambda s: jpost(s, "/v1/completions", {"prompt": "x", "max_tokens": "many"}), 400, "invalid_value"),
    ("bad json", lambda s: jpost(s, "/v1/completions", b"{\"prompt\": "), 400, "invalid_json"),
    ("unknown model", lambda s: jpost(s, "/v1/completions", {"model": "nope", "prompt": "x"}), 404, "model_not_found"),
    ("invalid utf-8", lambda s: jpost(s, "/v1/completions", b"{\"prompt\": \"\xff\xfe\"}"), 400, "invalid_utf8"),
    ("too large", lambda s: form(s, {}, {"file": ("big.wav", b"\0" * 1_100_000)}), 413, "request_too_large"),
    ("no endpoint", lambda s: req(s, "GET", "/v2/whatever"), 404, "not_found"),
]


def run_task(s, task, refs):
    kind, seed = task.split(":")
    seed = int(seed)
    if kind == "transcribe":
        name = sorted(CLIPS)[seed % len(CLIPS)]
        st, d = form(s, {"response_format": "text"}, {"file": (name, CLIPS[name])})
        return st == 200 and " ".join(d.decode().split()) == refs[name], f"transcribe {name}: {st} {d[:120]!r}"
    if kind == "complete":
        p = PROMPTS[seed % len(PROMPTS)]
        st, d = jpost(s, "/v1/completions", {"prompt": p, "max_tokens": 24, "temperature": 0})
        ok = st == 200 and json.loads(d)["choices"][0]["text"] == refs[p]
        return ok, f"complete {p!r}: {st} {d[:160]!r}"
    if kind == "ops":
        path = ["/health", "/v1/models", "/metrics"][seed % 3]
        st, d = req(s, "GET", path)
        return st == 200 and d, f"GET {path}: {st}"
    if kind == "bad":
        what, fn, want, code = BAD[seed % len(BAD)]
        st, d = fn(s)
        return st == want and error_code(d) == code, f"bad {what}: {st} {d[:160]!r} (want {want} {code})"
    if kind == "drop_upload":
        return disconnect_mid_upload(s), "disconnect mid-upload"
    if kind == "drop_stream":
        return disconnect_mid_stream(s, "audio" if seed % 2 else "text"), "disconnect mid-stream"
    return False, kind


with Server(["--whisper-model", "tiny.en", "--llm-model", STORIES, "--parallel", "2", "--threads", "1",
             "--max-body", "1000000", "--max-queue", "256", "-q"]) as s:
    refs = {}
    for name, data in CLIPS.items():
        st, d = form(s, {"response_format": "text"}, {"file": (name, data)})
        refs[name] = " ".join(d.decode().split())
        t.check(st == 200, f"reference transcription of {name}: {st}")
    for p in PROMPTS:
        st, d = jpost(s, "/v1/completions", {"prompt": p, "max_tokens": 24, "temperature": 0})
        refs[p] = json.loads(d)["choices"][0]["text"]
    tasks = make_tasks(refs)
    lock = threading.Lock()
    failures, done, rss = [], [0], {}
    by_kind = {}

    def one(task):
        try:
            ok, what = run_task(s, task, refs)
        except Exception as e:  # noqa: BLE001 — any client-side error is a failure to report
            ok, what = False, f"{task}: {type(e).__name__}: {e}"
        with lock:
            done[0] += 1
            k = task.split(":")[0]
            by_kind[k] = by_kind.get(k, 0) + 1
            if not ok:
                failures.append(what)
            if done[0] % 100 == 0:
                rss.setdefault("series", []).append(s.rss_kb() // 1024)

    # Both RSS readings are taken at rest (no request in flight, after the server's idle trim), so
    # they compare what the server keeps, not what a burst happened to hold at that instant.
    t0 = time.time()
    with ThreadPoolExecutor(CONCURRENCY) as ex:
        list(ex.map(one, tasks[:100]))
        time.sleep(1.0)
        rss["after100"] = s.rss_kb()
        for i in range(100, len(tasks), 250):
            list(ex.map(one, tasks[i:i + 250]))
            time.sleep(1.0)
            rss.setdefault("rest", []).append(s.rss_kb() // 1024)
    wall = time.time() - t0
    time.sleep(1.0)
    rss["end"] = s.rss_kb()
    for f in failures[:20]:
        print("  failure:", f)
    t.check(not failures, f"{len(failures)} of {N} requests failed")
    st, _ = req(s, "GET", "/health")
    t.check(st == 200, "the server still answers after the soak")
    growth = (rss["end"] - rss["after100"]) / rss["after100"]
    print(f"soak: {N} requests, {CONCURRENCY} at a time, {wall:.1f} s; mix {by_kind}; "
          f"RSS after 100 requests {rss['after100'] / 1024:.1f} MB, after {N} {rss['end'] / 1024:.1f} MB "
          f"({growth * 100:+.1f} %); RSS under load every 100 requests (MB): {rss['series']}; at rest every 250: {rss.get('rest', [])}")
    t.check(growth <= 0.10, f"RSS grew {growth * 100:.1f} % (limit 10 %)")
t.check(s.exit_status == 0, f"exit status after SIGTERM: {s.exit_status}")
t.finish()
