"""serverlib.py — starts `steno serve` for a test and talks to it.

Used by every tests/server/test_*.py (run by ctest with the venv's python from
scripts/server_venv.sh, which has the official `openai` client and selenium). The server binds
127.0.0.1 on a free port (--port 0 --port-file), so tests never collide and never leave loopback.

Environment (set by tests/CMakeLists.txt): STENO_BIN, STENO_SHARED, STENO_SOURCE, STENO_SANITIZE.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BIN = os.environ.get("STENO_BIN", "build/steno")
SHARED = os.environ.get("STENO_SHARED", os.path.join(os.path.dirname(__file__), "../../../shared"))
SOURCE = os.environ.get("STENO_SOURCE", os.path.join(os.path.dirname(__file__), "../.."))
SANITIZE = os.environ.get("STENO_SANITIZE", "0") == "1"
AUDIO = os.path.join(SHARED, "audio")


def audio(name):
    return os.path.join(AUDIO, name)


class Server:
    """`with Server(["--whisper-model", "tiny.en"]) as s:` — s.url, s.port, s.log()."""

    def __init__(self, args, startup_timeout=120, env=None):
        self.args = list(args)
        self.startup_timeout = startup_timeout
        self.env = env
        self.proc = None

    def __enter__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="steno-serve-")
        port_file = os.path.join(self.dir.name, "port")
        self.log_path = os.path.join(self.dir.name, "stderr.log")
        self.log_file = open(self.log_path, "wb")
        cmd = [BIN, "serve", "--host", "127.0.0.1", "--port", "0", "--port-file", port_file] + self.args
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        self.proc = subprocess.Popen(cmd, stdout=self.log_file, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + self.startup_timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"steno serve exited with {self.proc.returncode}:\n{self.log()}")
            if os.path.exists(port_file):
                text = open(port_file).read().strip()
                if text:
                    self.port = int(text)
                    self.url = f"http://127.0.0.1:{self.port}"
                    break
            time.sleep(0.05)
        else:
            self.stop()
            raise RuntimeError("steno serve did not start listening:\n" + self.log())
        while time.time() < deadline:  # /health turns 200 once the models are loaded
            try:
                status, _ = self.get("/health")
                if status == 200:
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"steno serve exited with {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("steno serve did not become ready:\n" + self.log())

    def log(self):
        if not self.log_file.closed:
            self.log_file.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def get(self, path, headers=None):
        req = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def post_json(self, path, body, headers=None, timeout=600):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, headers=h, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self, sig=signal.SIGTERM, timeout=120):
        """Stops the server; returns its exit status."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None

    def __exit__(self, *exc):
        rc = self.stop()
        self.log_file.close()
        text = self.log()
        if SANITIZE and ("ERROR: AddressSanitizer" in text or "runtime error:" in text or "LeakSanitizer" in text):
            print(text, file=sys.stderr)
            raise AssertionError("sanitizer report in the server's log")
        self.exit_status = rc
        self.dir.cleanup()
        return False


def multipart(fields, files):
    """A multipart/form-data body: fields {name: value}, files {name: (filename, bytes)}."""
    boundary = "----stenotest7MA4YWxkTrZu0gW"
    out = bytearray()
    for k, v in fields.items():
        for item in v if isinstance(v, list) else [v]:
            out += f"--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{item}\r\n".encode()
    for k, (fn, data) in files.items():
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"; filename=\"{fn}\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode() + data + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), f"multipart/form-data; boundary={boundary}"


def cli_transcribe(path, fmt="txt", extra=()):
    """The CLI's output for the same input (the reference the server must equal)."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([BIN, "transcribe", "-f", fmt, "-o", d, *extra, path], check=True,
                       stdout=subprocess.DEVNULL)
        base = os.path.splitext(os.path.basename(path))[0]
        with open(os.path.join(d, base + "." + fmt), encoding="utf-8") as f:
            return f.read()


class Checks:
    """Counts checks and prints the closing line ctest's runner and people read."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL:", what, flush=True)
        return cond

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed else 0)
