"""test_stream_ws.py — GET /v1/stream, live transcription over a WebSocket (docs/SERVER.md
"Streaming"), driven by the `websockets` client (pinned in scripts/server_venv.sh) and raw sockets:

  1. the same committed text as `steno stream` for the same input: jfk.wav as s16le in 1-s binary
     messages with catch_up=0 against `steno stream --catch-up no` (each push is one step), then
     {"type":"finish"} → the rest, {"type":"done"} and a normal close; also as f32le (5 s);
  2. bad handshakes refused with their status before any upgrade: no Upgrade header (426), a wrong
     version (426), a malformed key (400), a rate other than 16000 (400), an unknown format (400);
     the accept key is RFC 6455's for the RFC's sample key;
  3. bad frames closed with their code: an unmasked frame (1002), a reserved opcode (1002), a
     frame declaring more than 1 MiB (1009), a text message that is not {"type":"finish"} (1003);
     a ping is answered with a pong carrying its payload;
  4. a client that disconnects mid-stream: its session is counted as cancelled (status 499 in
     /metrics' steno_requests_total{endpoint="/v1/stream"}) and the server serves the next one;
  5. the API key applies (401 without it).
"""
import base64
import hashlib
import json
import os
import re
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from serverlib import BIN, SANITIZE, Checks, Server, audio  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

t = Checks()


def pcm16(path):
    return subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-i", path, "-f", "s16le", "-ac", "1", "-ar", "16000",
                           "-"], stdout=subprocess.PIPE, check=True).stdout


STEP = 32000  # 1 s of s16le
JFK = pcm16(audio("jfk.wav"))
if SANITIZE:  # CI size under ASan+UBSan: the first 4 s (the same code paths, a third of the hypotheses)
    JFK = JFK[:4 * STEP]
    print("CI size (ASan): the first 4 s of jfk.wav, also for the f32le and after-disconnect sessions")


def cli_text(pcm, fmt="s16le"):
    p = subprocess.run([BIN, "stream", "--model", "tiny.en", "-t", "2", "--format", fmt, "--catch-up", "no", "-"],
                       input=pcm, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    t.check(p.returncode == 0, f"steno stream exited {p.returncode}: {p.stderr[-300:]!r}")
    lines = p.stdout.decode().splitlines()
    return [re.sub(r"^\[[^]]*\] ", "", ln) for ln in lines]


def ws_texts(s, pcm, query="", chunk=STEP):
    out, done = [], None
    # ping_interval=None: with catch_up=0 the server answers a ping after the hypotheses of the
    # messages before it, which a loaded CI machine can stretch past websockets' 20-s ping timeout
    with connect(f"ws://127.0.0.1:{s.port}/v1/stream?catch_up=0{query}", max_size=2 ** 20, open_timeout=60,
                 ping_interval=None,
                 close_timeout=60) as ws:
        for i in range(0, len(pcm), chunk):
            ws.send(pcm[i:i + chunk])
        ws.send(json.dumps({"type": "finish"}))
        for msg in ws:
            m = json.loads(msg)
            if m["type"] == "commit":
                t.check(0 <= m["start"] <= m["end"], f"commit times {m}")
                out.append(m["text"])
            elif m["type"] == "done":
                done = m
            else:
                t.check(False, f"unexpected message {m}")
    t.check(done is not None and abs(done["duration"] - len(pcm) / (4 if "f32le" in query else 2) / 16000) < 0.01,
            f"no done message with the duration: {done}")
    return out


def handshake(s, path="/v1/stream", headers=None, key="dGhlIHNhbXBsZSBub25jZQ=="):
    """Sends an upgrade request on a raw socket; returns (socket, status, headers dict)."""
    h = {"Host": f"127.0.0.1:{s.port}", "Upgrade": "websocket", "Connection": "Upgrade",
         "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": key}
    h.update(headers or {})
    req = f"GET {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items() if v is not None) + "\r\n"
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=60)
    sock.sendall(req.encode())
    data = b""
    while b"\r\n\r\n" not in data:
        c = sock.recv(4096)
        if not c:
            break
        data += c
    head = data.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    status = int(head[0].split()[1]) if head and len(head[0].split()) > 1 else 0
    hdrs = {}
    for ln in head[1:]:
        k, _, v = ln.partition(":")
        hdrs.setdefault(k.strip().lower(), v.strip())
    return sock, status, hdrs


def frame(op, payload, mask=True, fin=True, declared=None):
    n = len(payload) if declared is None else declared
    b0 = (0x80 if fin else 0) | op
    if n < 126:
        head = bytes([b0, (0x80 if mask else 0) | n])
    elif n <= 0xFFFF:
        head = bytes([b0, (0x80 if mask else 0) | 126]) + struct.pack(">H", n)
    else:
        head = bytes([b0, (0x80 if mask else 0) | 127]) + struct.pack(">Q", n)
    if not mask:
        return head + payload
    k = b"\x01\x02\x03\x04"
    return head + k + bytes(c ^ k[i % 4] for i, c in enumerate(payload))


def read_frames(sock, timeout=60):
    """Frames from the server until its close frame or EOF: [(opcode, payload)]."""
    sock.settimeout(timeout)
    buf, out = b"", []
    while True:
        while len(buf) >= 2:
            n = buf[1] & 0x7F
            h = 2
            if n == 126:
                if len(buf) < 4:
                    break
                n, h = struct.unpack(">H", buf[2:4])[0], 4
            elif n == 127:
                if len(buf) < 10:
                    break
                n, h = struct.unpack(">Q", buf[2:10])[0], 10
            if len(buf) < h + n:
                break
            out.append((buf[0] & 0x0F, buf[h:h + n]))
            buf = buf[h + n:]
            if out[-1][0] == 8:
                return out
        try:
            c = sock.recv(65536)
        except (socket.timeout, ConnectionResetError):
            return out
        if not c:
            return out
        buf += c


def close_code(frames):
    for op, p in frames:
        if op == 8 and len(p) >= 2:
            return struct.unpack(">H", p[:2])[0]
    return None


def stream_count(s, status):
    code, body = s.get("/metrics")
    m = re.search(r'steno_requests_total\{endpoint="/v1/stream",status="%d"\} (\d+)' % status, body.decode())
    return int(m.group(1)) if m else 0


with Server(["--whisper-model", "tiny.en", "--threads", "2", "--parallel", "2"]) as s:
    # 1. the CLI's text, s16le and f32le
    want = cli_text(JFK)
    got = ws_texts(s, JFK)
    t.check(got == want and len(want) >= 2, f"WebSocket commits differ from steno stream's:\n ws  {got}\n cli {want}")
    # f32le: the same samples (x / 32768 is exact) give the same text as s16le
    short = JFK if SANITIZE else JFK[:5 * STEP]
    want_short = want if SANITIZE else cli_text(short)
    f32 = struct.pack("<%df" % (len(short) // 2),
                      *[x / 32768.0 for x in struct.unpack("<%dh" % (len(short) // 2), short)])
    got32 = ws_texts(s, f32, "&format=f32le", chunk=2 * STEP)
    t.check(got32 == want_short and want_short, f"f32le commits differ from steno stream's: {got32} {want_short}")
    print("same text as the CLI:", " | ".join(got))

    # 2. handshakes
    expect = base64.b64encode(hashlib.sha1(b"dGhlIHNhbXBsZSBub25jZQ==258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
                              .digest()).decode()
    sock, st, h = handshake(s)
    t.check(st == 101 and h.get("sec-websocket-accept") == expect == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
            f"handshake: {st} {h}")
    # 3a. ping → pong, then an unmasked frame → 1002
    sock.sendall(frame(9, b"hello"))
    sock.sendall(frame(2, b"\0\0", mask=False))
    fr = read_frames(sock)
    t.check((10, b"hello") in fr, f"no pong with the ping's payload: {fr}")
    t.check(close_code(fr) == 1002, f"unmasked frame: close code {close_code(fr)}")
    sock.close()
    for what, hdrs, path, want_status in (
            ("no Upgrade", {"Upgrade": None}, "/v1/stream", 426),
            ("version 8", {"Sec-WebSocket-Version": "8"}, "/v1/stream", 426),
            ("bad key", {"Sec-WebSocket-Key": "short"}, "/v1/stream", 400),
            ("rate 8000", {}, "/v1/stream?rate=8000", 400),
            ("format mp3", {}, "/v1/stream?format=mp3", 400),
            ("step_ms 5", {}, "/v1/stream?step_ms=5", 400)):
        sock, st, h = handshake(s, path, hdrs)
        t.check(st == want_status, f"{what}: status {st}, want {want_status}")
        if want_status == 426:  # RFC 6455 4.4 / RFC 7231 6.5.15: say what to upgrade to
            t.check(h.get("sec-websocket-version") == "13" and h.get("upgrade") == "websocket",
                    f"{what}: the 426 lacks Upgrade/Sec-WebSocket-Version: {h}")
        sock.close()
    for what, data, want_code in (("reserved opcode 3", frame(3, b"x"), 1002),
                                  ("frame over 1 MiB", frame(2, b"", declared=2 ** 21)[:14], 1009),
                                  ("text not finish", frame(1, b'{"type":"hello"}'), 1003),
                                  ("control frame fragmented", frame(9, b"x", fin=False), 1002)):
        sock, st, _ = handshake(s)
        sock.sendall(data)
        fr = read_frames(sock)
        t.check(st == 101 and close_code(fr) == want_code, f"{what}: close code {close_code(fr)}, want {want_code}")
        sock.close()

    # 4. a disconnect mid-stream is a cancelled session; the server goes on
    before = stream_count(s, 499)
    sock, st, _ = handshake(s)
    for i in range(0, 4 * STEP, 8000):
        sock.sendall(frame(2, JFK[i:i + 8000]))
    time.sleep(0.5)
    sock.close()
    deadline = time.time() + 60
    while time.time() < deadline and stream_count(s, 499) == before:
        time.sleep(0.2)
    t.check(stream_count(s, 499) == before + 1, "a client that left mid-stream is not counted as status 499")
    t.check(stream_count(s, 200) >= 2, "finished sessions are not counted with status 200")
    t.check(ws_texts(s, short) == want_short, "the session after a disconnect differs")

with Server(["--whisper-model", "tiny.en", "--api-key", "sekrit"]) as s:
    sock, st, _ = handshake(s)
    t.check(st == 401, f"no API key: status {st}")
    sock.close()
    sock, st, _ = handshake(s, headers={"Authorization": "Bearer sekrit"})
    t.check(st == 101, f"with the API key: status {st}")
    sock.close()

t.finish()
