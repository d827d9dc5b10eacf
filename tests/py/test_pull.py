"""test_pull.py — `steno pull` and `steno models` against a local Hugging Face-style server.

The server (a ThreadingHTTPServer on 127.0.0.1, random port) serves the REAL tiny.en model files
(steno_eval.model_dir()) in the Hub's layout:
  GET /api/models/<repo>/tree/<rev>      the listing: [{"type","path","size","oid","lfs"?}]
  GET /<repo>/resolve/<rev>/<file>       the file, with Range support (206 + Content-Range)
and can misbehave on request: close the connection after N bytes, ignore Range, list a wrong
sha256, serve altered bytes. HF_ENDPOINT points steno at it; STENO_MODELS_DIR is a temp dir.

Contract checked (docs/MODELS.md "steno pull"):
  * a pulled model transcribes jfk.wav exactly as the original directory does;
  * an interrupted pull fails with one line, and the next one resumes with Range: bytes=N-;
    a server that ignores Range (200) restarts the file and still succeeds;
  * wrong sha256 / git blob sha1, HTTP 404, connection refused, unknown name, no write
    permission, disk full: exit 1, ONE line on stderr naming the file/URL/path, no model
    installed (the model directory never appears);
  * usage errors exit 2; `steno models` lists the model with format, weight type, size and path.
Every subprocess and the server have timeouts. Standard library only.
"""

import hashlib
import http.server
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steno_eval as se  # noqa: E402

STENO = se.steno_bin()
MODEL = se.model_dir()
JFK = os.path.join(se.shared_dir(), "audio", "jfk.wav")
if not os.path.isfile(JFK):
    se.fail("test clip missing: %s" % JFK)
REPO = "Systran/faster-whisper-tiny.en"
FILES = [f for f in ("config.json", "model.bin", "tokenizer.json", "vocabulary.txt")
         if os.path.isfile(os.path.join(MODEL, f))]
TMP = tempfile.mkdtemp(prefix="steno_pull_test_")
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "runtime error:")
TIMEOUT = 600 if os.environ.get("STENO_SANITIZE") == "1" else 300
CUT = 10_000_000  # bytes of model.bin sent before an "interrupted" connection is closed


def file_meta(path):
    """(size, sha256, git blob sha1) of a file."""
    data = open(path, "rb").read()
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    return len(data), hashlib.sha256(data).hexdigest(), blob


META = {f: file_meta(os.path.join(MODEL, f)) for f in FILES}


class Hub(http.server.ThreadingHTTPServer):
    """The behaviour knobs are reset by reset(); log holds (path, Range header, status)."""
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that hangs up mid-file (the disk-full and corrupt cases) is expected

    def reset(self):
        self.cut = {}            # file -> bytes to send before closing, on its next request
        self.ignore_range = False
        self.bad_sha = set()     # files listed with a wrong sha256
        self.altered = set()     # files served with one byte changed (listing unchanged)
        self.log = []


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60

    def log_message(self, *args):
        pass

    def send_plain(self, code, body=b""):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        hub, rng = self.server, self.headers.get("Range")
        prefix_api, prefix_file = "/api/models/%s/tree/main" % REPO, "/%s/resolve/main/" % REPO
        if self.path == prefix_api:
            listing = []
            for f in FILES:
                size, sha, blob = META[f]
                e = {"type": "file", "path": f, "size": size, "oid": blob}
                if size > 1_000_000:  # the Hub stores big files in LFS, with their sha256
                    e["lfs"] = {"oid": "0" * 64 if f in hub.bad_sha else sha, "size": size,
                                "pointerSize": 134}
                listing.append(e)
            listing.append({"type": "file", "path": "README.md", "size": 10, "oid": "1" * 40})
            hub.log.append((self.path, rng, 200))
            return self.send_plain(200, json.dumps(listing).encode())
        name = self.path[len(prefix_file):] if self.path.startswith(prefix_file) else None
        if name not in FILES:
            hub.log.append((self.path, rng, 404))
            return self.send_plain(404, b"Repository not found")
        data = open(os.path.join(MODEL, name), "rb").read()
        if name in hub.altered:
            data = data[:-1] + bytes([data[-1] ^ 1])
        start = 0
        if rng and not hub.ignore_range and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
        code = 206 if start else 200
        hub.log.append((self.path, rng, code))
        self.send_response(code)
        self.send_header("Content-Length", str(len(data) - start))
        if code == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.end_headers()
        cut = hub.cut.pop(name, None)
        if cut is not None:
            self.wfile.write(data[start:start + cut])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(data[start:])


HUB = Hub(("127.0.0.1", 0), Handler)
HUB.reset()
HUB.timeout = 60
threading.Thread(target=HUB.serve_forever, daemon=True).start()
ENDPOINT = "http://127.0.0.1:%d" % HUB.server_address[1]


class CaseFailure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise CaseFailure(msg)


def env_for(models_dir, endpoint=ENDPOINT):
    env = dict(os.environ, STENO_MODELS_DIR=models_dir, HF_ENDPOINT=endpoint)
    env.pop("HF_TOKEN", None)
    return env


def run(args, env, preexec_fn=None):
    """Runs steno; returns (rc, stdout, stderr, ctx). Signals and sanitizer reports fail."""
    cmd = [STENO] + list(args)
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT, env=env, preexec_fn=preexec_fn)
    except subprocess.TimeoutExpired:
        raise CaseFailure("timed out after %d s: %s" % (TIMEOUT, " ".join(cmd)))
    except subprocess.SubprocessError as e:  # preexec_fn failed (setuid not permitted here)
        raise CaseFailure("cannot start %s: %s" % (" ".join(cmd), e))
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    ctx = "\n  command: %s\n  exit: %d\n  stderr: %r" % (" ".join(cmd), p.returncode, err[-2000:])
    check(p.returncode >= 0, "killed by signal %d%s" % (-p.returncode, ctx))
    check(not any(m in err for m in SANITIZER_MARKS), "sanitizer report on stderr" + ctx)
    return p.returncode, out, err, ctx


def fresh_dir(name):
    d = os.path.join(TMP, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def expect_failure(rc, err, ctx, *needles):
    """Exit 1, one line on stderr starting "steno: ", containing every needle."""
    check(rc == 1, "exit %d, expected 1%s" % (rc, ctx))
    lines = err.splitlines()
    check(len(lines) == 1 and lines[0].startswith("steno: "), "not one 'steno: ' line" + ctx)
    for n in needles:
        check(n in lines[0], "stderr lacks %r%s" % (n, ctx))


def check_not_installed(models, name="tiny.en"):
    check(not os.path.exists(os.path.join(models, name)), "%s/%s exists after a failed pull"
          % (models, name))


def check_installed(models, name="tiny.en"):
    d = os.path.join(models, name)
    for f in FILES:
        check(file_meta(os.path.join(d, f)) == META[f], "%s/%s differs from the served file" % (d, f))
    check(os.path.isfile(os.path.join(d, ".complete")), "%s has no .complete" % d)
    check(not os.path.exists(os.path.join(d, "README.md")), "README.md was downloaded")
    check(not os.path.exists(d + ".partial"), "%s.partial left behind" % d)


def transcript(model, env):
    rc, out, err, ctx = run(["transcribe", "--model", model, "-f", "txt", "-o", "-", JFK], env)
    check(rc == 0, "transcribe failed" + ctx)
    check(out.strip(), "empty transcript" + ctx)
    return out


CASES = []


def case(fn):
    CASES.append(fn)
    return fn


@case
def full_pull_then_transcribe():
    models = fresh_dir("full")
    env = env_for(models)
    rc, out, err, ctx = run(["pull", "tiny.en"], env)
    check(rc == 0, "pull failed" + ctx)
    check(err == "", "stderr is not a terminal, yet pull wrote to it (no --progress)" + ctx)
    check("tiny.en" in out and models in out, "no 'pulled ...' line on stdout" + ctx)
    check_installed(models)
    want = transcript(MODEL, env)
    got = transcript("tiny.en", env)
    check(got == want, "transcript with the pulled model %r != original %r" % (got, want))
    # an installed model is left alone; --force replaces it (with the progress bar asked for)
    n_requests = len(HUB.log)
    rc, out, err, ctx = run(["pull", "tiny.en"], env)
    check(rc == 0 and "already installed" in err, "second pull did not say so" + ctx)
    check(len(HUB.log) == n_requests, "an installed model was downloaded again")
    rc, out, err, ctx = run(["pull", "tiny.en", "--force", "--progress"], env)
    check(rc == 0, "--force pull failed" + ctx)
    check("model.bin" in err and "100%" in err and "ETA" in err, "no progress bar" + ctx)
    check_installed(models)
    check(sorted(os.listdir(models)) == [".tiny.en.lock", "tiny.en"],
          "leftovers after --force: %s" % os.listdir(models))
    return "transcript %r identical" % got.strip()[:40]


@case
def models_lists_the_pull():
    models = os.path.join(TMP, "full")
    os.makedirs(os.path.join(models, "other.partial"), exist_ok=True)
    os.makedirs(os.path.join(models, "silero_vad"), exist_ok=True)  # scripts/fetch_vad.sh's layout
    with open(os.path.join(models, "silero_vad", "silero_vad_v6.safetensors"), "wb") as f:
        f.write(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    rc, out, err, ctx = run(["models"], env_for(models))
    check(rc == 0, "steno models failed" + ctx)
    line = [ln for ln in out.splitlines() if ln.startswith("tiny.en ")]
    check(len(line) == 1, "tiny.en not listed:\n%s" % out)
    size = sum(os.stat(os.path.join(models, "tiny.en", f)).st_blocks * 512
               for f in os.listdir(os.path.join(models, "tiny.en")))
    for want in ("CTranslate2 Whisper", "float16", "%.1f MB" % (size / 1e6),
                 os.path.join(models, "tiny.en")):
        check(want in line[0], "%r not in %r" % (want, line[0]))
    partial = [ln for ln in out.splitlines() if ln.startswith("other ")]
    check(len(partial) == 1 and "partial download" in partial[0], "partial not shown:\n%s" % out)
    vad = [ln for ln in out.splitlines() if ln.startswith("silero_vad ")]
    check(len(vad) == 1 and "Silero VAD" in vad[0] and "float32" in vad[0],
          "the VAD weights are not named (helper-28 saw 'unknown'):\n%s" % out)
    rc, out, err, ctx = run(["models", "--bogus"], env_for(models))
    check(rc == 2, "models --bogus: exit %d, expected 2%s" % (rc, ctx))
    return line[0]


def cut_then_retry(name, ignore_range):
    """A pull whose model.bin connection closes after CUT bytes, then a second pull; returns the
    (Range header, status) of the second request for model.bin."""
    models = fresh_dir(name)
    env = env_for(models)
    HUB.reset()
    HUB.cut["model.bin"] = CUT
    HUB.ignore_range = ignore_range
    rc, out, err, ctx = run(["pull", "tiny.en"], env)
    expect_failure(rc, err, ctx, "model.bin", "connection closed after %d" % CUT)
    check_not_installed(models)
    part = os.path.join(models, "tiny.en.partial", "model.bin")
    check(os.path.getsize(part) == CUT, "partial model.bin has %d bytes, expected %d"
          % (os.path.getsize(part), CUT))
    rc, out, err, ctx = run(["pull", "tiny.en"], env)
    check(rc == 0, "the second pull failed" + ctx)
    check_installed(models)
    return [(r, c) for p, r, c in HUB.log if p.endswith("/model.bin")][-1]


@case
def interrupted_then_resumed():
    last = cut_then_retry("resume", ignore_range=False)
    check(last == ("bytes=%d-" % CUT, 206), "second request for model.bin: %r" % (last,))
    return "resumed with %s" % last[0]


@case
def server_ignores_range():
    last = cut_then_retry("norange", ignore_range=True)
    check(last == ("bytes=%d-" % CUT, 200), "expected a Range request answered 200: %r" % (last,))
    return "restarted after %r" % (last,)


@case
def wrong_sha256_refused():
    models = fresh_dir("badsha")
    HUB.reset()
    HUB.bad_sha.add("model.bin")
    rc, out, err, ctx = run(["pull", "tiny.en"], env_for(models))
    expect_failure(rc, err, ctx, "model.bin", "sha256 mismatch", "0" * 64, META["model.bin"][1])
    check_not_installed(models)
    check(not os.path.exists(os.path.join(models, "tiny.en.partial", "model.bin")),
          "the corrupt model.bin was kept")
    return err.strip()[:90]


@case
def wrong_git_blob_refused():
    models = fresh_dir("badblob")
    HUB.reset()
    HUB.altered.add("config.json")
    rc, out, err, ctx = run(["pull", "tiny.en"], env_for(models))
    expect_failure(rc, err, ctx, "config.json", "git blob sha1 mismatch", META["config.json"][2])
    check_not_installed(models)
    return err.strip()[:90]


@case
def repo_404():
    models = fresh_dir("404")
    HUB.reset()
    rc, out, err, ctx = run(["pull", "nobody/nothing"], env_for(models))
    expect_failure(rc, err, ctx, "404", ENDPOINT + "/api/models/nobody/nothing/tree/main")
    check(os.listdir(models) == [], "files left after a 404: %s" % os.listdir(models))
    return err.strip()


@case
def concurrent_pull_refused():
    import fcntl
    models = fresh_dir("locked")
    HUB.reset()
    with open(os.path.join(models, ".tiny.en.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another pull of tiny.en holds it
        rc, out, err, ctx = run(["pull", "tiny.en"], env_for(models))
    expect_failure(rc, err, ctx, "another steno pull is downloading tiny.en")
    check_not_installed(models)
    return err.strip()


@case
def connection_refused():
    models = fresh_dir("refused")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    endpoint = "http://127.0.0.1:%d" % port
    rc, out, err, ctx = run(["pull", "tiny.en"], env_for(models, endpoint))
    expect_failure(rc, err, ctx, "cannot reach %s" % endpoint)
    check_not_installed(models)
    return err.strip()


@case
def unknown_name():
    rc, out, err, ctx = run(["pull", "tiny-en"], env_for(fresh_dir("unknown")))
    expect_failure(rc, err, ctx, "unknown model 'tiny-en'", "tiny.en", "large-v3-turbo")
    return err.strip()[:80]


@case
def no_write_permission():
    # A models dir under a regular file: mkdir fails (ENOTDIR) even as root.
    blocker = os.path.join(TMP, "a_file")
    open(blocker, "w").close()
    rc, out, err, ctx = run(["pull", "tiny.en"], env_for(os.path.join(blocker, "sub")))
    expect_failure(rc, err, ctx, os.path.join(blocker, "sub"), "Not a directory")
    # A read-only dir: as root, chmod does not stop writes, so the child drops to nobody.
    models = fresh_dir("readonly")
    os.chmod(models, 0o555)
    os.chmod(TMP, 0o755)
    drop = (lambda: (os.setgid(65534), os.setuid(65534))) if os.getuid() == 0 else None
    rc, out, err, ctx = run(["pull", "tiny.en"], env_for(models), preexec_fn=drop)
    expect_failure(rc, err, ctx, models, "Permission denied")
    check(os.listdir(models) == [], "files written into a read-only dir")
    return "ENOTDIR and EACCES (%s)" % ("as nobody" if drop else "as this user")


def try_mount_tmpfs(path, size):
    if os.getuid() != 0 or not shutil.which("mount"):
        return False
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", path],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    return p.returncode == 0


@case
def disk_full():
    models = fresh_dir("full_disk")
    HUB.reset()
    if try_mount_tmpfs(models, "20m"):
        how = "a 20 MB tmpfs (ENOSPC)"
        try:
            rc, out, err, ctx = run(["pull", "tiny.en"], env_for(models))
            expect_failure(rc, err, ctx, os.path.join(models, "tiny.en.partial", "model.bin"),
                           "No space left on device")
            check_not_installed(models)
        finally:
            subprocess.run(["umount", models], timeout=30)
    else:
        # mount is not permitted here: the file-size limit makes write(2) fail with EFBIG,
        # the same error path as ENOSPC (SIGXFSZ ignored, as a full disk sends no signal).
        how = "RLIMIT_FSIZE 20 MB (EFBIG; mount not permitted)"

        def limit():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (20 << 20, 20 << 20))
        rc, out, err, ctx = run(["pull", "tiny.en"], env_for(models), preexec_fn=limit)
        expect_failure(rc, err, ctx, os.path.join(models, "tiny.en.partial", "model.bin"),
                       "File too large")
        check_not_installed(models)
    return how


@case
def repo_and_url_forms():
    models = fresh_dir("forms")
    env = env_for(models)
    HUB.reset()
    rc, out, err, ctx = run(["pull", REPO], env)
    check(rc == 0, "pull OWNER/REPO failed" + ctx)
    check_installed(models, "faster-whisper-tiny.en")
    env = env_for(models, "http://127.0.0.1:9")  # the URL's own server must win
    rc, out, err, ctx = run(["pull", "--name", "viaurl", ENDPOINT + "/" + REPO + "/resolve/main/"], env)
    check(rc == 0, "pull URL failed" + ctx)
    check_installed(models, "viaurl")
    rc, out, err, ctx = run(["pull", "--name=viatree", "--revision=ignored",
                             ENDPOINT + "/" + REPO + "/tree/main"], env)
    check(rc == 0, "pull tree/ URL failed" + ctx)
    check_installed(models, "viatree")
    return "OWNER/REPO, resolve/ URL, tree/ URL"


@case
def usage_errors():
    env = env_for(fresh_dir("usage"))
    for args in (["pull"], ["pull", "tiny", "base"], ["pull", "--bogus", "tiny"],
                 ["pull", "tiny", "--revision"]):
        rc, out, err, ctx = run(args, env)
        check(rc == 2, "exit %d, expected 2%s" % (rc, ctx))
        check(len(err.splitlines()) == 1, "not one line" + ctx)
    rc, out, err, ctx = run(["pull", "--help"], env)
    check(rc == 0 and "usage: steno pull" in out and "--revision" in out, "pull --help" + ctx)
    rc, out, err, ctx = run(["models", "--help"], env)
    check(rc == 0 and "usage: steno models" in out, "models --help" + ctx)
    return "exit 2 for 4 bad command lines"


def main():
    failed = 0
    try:
        for fn in CASES:
            try:
                msg = fn()
                print("PASS %s: %s" % (fn.__name__, msg), flush=True)
            except CaseFailure as e:
                failed += 1
                print("FAIL %s: %s" % (fn.__name__, e), flush=True)
    finally:
        HUB.shutdown()
        shutil.rmtree(TMP, ignore_errors=True)
    print("%d passed, %d failed" % (len(CASES) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
