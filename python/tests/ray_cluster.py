"""ray_cluster.py — a Ray cluster of local nodes inside a private network namespace, for tests.

    with NetnsRayCluster(workdir) as c:       # a new net + pid + mount namespace, only `lo` in it
        c.start_head()                        # node 1: 127.0.0.1, --num-cpus 1
        c.add_node("127.0.0.2")               # node 2: 127.0.0.2 (loopback too), --num-cpus 1
        c.popen([sys.executable, "-m", "steno.batch", ...])   # runs inside the namespace
        c.kill_node("127.0.0.2")              # SIGKILL of that node's raylet, agents and workers
    # leaving: `ray stop --force` inside, then SIGKILL of the namespace's init (which kills every
    # process left in the namespace: nothing of the cluster can outlive the test)

The namespace is made by `unshare --net --pid --fork --mount-proc` (root): Ray sees only the
loopback interface, so no Ray traffic can leave this machine, and `ray stop` (which finds Ray
processes by name) sees only this cluster's processes, not other Ray clusters on the machine.
Commands run in it through `nsenter`. The nodes' processes are told apart by their
--node-ip-address (every node has its own 127.x address).
"""

from __future__ import annotations

import os
import shutil
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

# The namespace's init (pid 1): brings `lo` up, says "ready", then reaps orphans until killed.
_INIT = r"""
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
print("ready", flush=True)
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        time.sleep(0.2)
"""


class ClusterError(RuntimeError):
    pass


def require_tools() -> None:
    """Raises ClusterError (with what is missing) unless this machine can run the cluster."""
    missing = [t for t in ("unshare", "nsenter", "ip") if shutil.which(t) is None]
    if missing:
        raise ClusterError("missing %s (util-linux, iproute2): the Ray test needs a private network "
                           "namespace" % ", ".join(missing))
    if os.geteuid() != 0:
        raise ClusterError("the Ray test makes a network namespace (unshare --net): run it as root")
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ClusterError("ray is not installed in %s (scripts/test_python.sh installs the pinned "
                           "ray)" % sys.executable)


def _children(pid: int) -> List[int]:
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _descendants(pid: int) -> List[int]:
    out, todo = [], [pid]
    while todo:
        for c in _children(todo.pop()):
            out.append(c)
            todo.append(c)
    return out


def _cmdline(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


class NetnsRayCluster:
    def __init__(self, workdir: Path, env: Optional[Dict[str, str]] = None) -> None:
        require_tools()
        self.workdir = Path(workdir)
        bindir = Path(sys.executable).parent
        self.ray_bin = str(bindir / "ray")
        if not os.path.exists(self.ray_bin):
            raise ClusterError("no `ray` command beside %s" % sys.executable)
        # Short: Ray's Unix sockets live under it (108-byte limit on socket paths).
        self.temp_dir = tempfile.mkdtemp(prefix="stray-")
        self.env = dict(os.environ)
        self.env.update({
            "RAY_USAGE_STATS_ENABLED": "0",
            "PATH": "%s:%s" % (bindir, os.environ.get("PATH", "")),
            # a dead node is noticed after ~3 missed 1-s health checks instead of ~5 x 3 s
            "RAY_health_check_period_ms": "1000",
            "RAY_health_check_timeout_ms": "1000",
            "RAY_health_check_failure_threshold": "3",
        })
        # Token authentication (Ray 2.60's default for new local clusters) with a token of this
        # cluster only: nothing depends on ~/.ray/auth_token or on another cluster's settings.
        self.env.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)})
        for k in ("RAY_ADDRESS", "RAY_AUTH_TOKEN_PATH"):
            self.env.pop(k, None)
        if env:
            self.env.update(env)
        self.port: Optional[int] = None
        self.init_pid: Optional[int] = None
        self._holder: "Optional[subprocess.Popen[bytes]]" = None
        self.nodes: List[str] = []
        self.log = self.workdir / "ray_cluster.log"

    # the namespace
    def __enter__(self) -> "NetnsRayCluster":
        self._holder = subprocess.Popen(
            ["unshare", "--net", "--pid", "--fork", "--mount-proc", sys.executable, "-c", _INIT],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        assert self._holder.stdout is not None and self._holder.stderr is not None
        line = self._holder.stdout.readline().decode().strip()
        if line != "ready":
            err = self._holder.stderr.read().decode("utf-8", "replace") if self._holder.poll() is not None else ""
            self._holder.kill()
            raise ClusterError("unshare --net --pid did not start a namespace (%r): %s" % (line, err))
        kids = _children(self._holder.pid)
        if len(kids) != 1:
            self._holder.kill()
            raise ClusterError("cannot find the namespace's init under unshare (pid %d)" % self._holder.pid)
        self.init_pid = kids[0]
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.init_pid is None:
            return
        try:
            if self.nodes:
                self.run([self.ray_bin, "stop", "--force"], timeout=60, check=False)
        finally:
            try:
                os.kill(self.init_pid, signal.SIGKILL)  # the kernel kills all that is left inside
            except ProcessLookupError:
                pass
            if self._holder is not None:
                self._holder.wait(timeout=30)
            self.init_pid = None
            shutil.rmtree(self.temp_dir, ignore_errors=True)

    def wrap(self, cmd: Sequence[str]) -> List[str]:
        assert self.init_pid is not None, "the namespace is not up"
        return ["nsenter", "-t", str(self.init_pid), "--net", "--pid", "--mount", "--"] + list(cmd)

    def run(self, cmd: Sequence[str], timeout: float = 120, check: bool = True, **kw: Any) -> "subprocess.CompletedProcess[bytes]":
        with open(self.log, "ab") as log:
            log.write(("$ %s\n" % " ".join(cmd)).encode())
            log.flush()
            p = subprocess.run(self.wrap(cmd), env=self.env, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, timeout=timeout, **kw)
        if check and p.returncode != 0:
            raise ClusterError("%s exited %d; see %s" % (" ".join(cmd[:3]), p.returncode, self.log))
        return p

    def popen(self, cmd: Sequence[str], **kw: Any) -> "subprocess.Popen[bytes]":
        return subprocess.Popen(self.wrap(cmd), env=self.env, stdin=subprocess.DEVNULL, **kw)

    def verify_isolated(self) -> None:
        """Fails unless the namespace has no interface but `lo`."""
        p = subprocess.run(self.wrap(["ip", "-o", "link", "show"]), stdout=subprocess.PIPE, check=True)
        names = [ln.split(":")[1].strip() for ln in p.stdout.decode().splitlines() if ":" in ln]
        if names != ["lo"]:
            raise ClusterError("the namespace has interfaces %s, not only lo" % names)

    # nodes
    def start_head(self, num_cpus: int = 1) -> str:
        # A free port inside the namespace is any port: nothing else listens there.
        self.port = 6379
        self.run([self.ray_bin, "start", "--head", "--node-ip-address=127.0.0.1", "--port=%d" % self.port,
                  "--num-cpus=%d" % num_cpus, "--include-dashboard=false", "--disable-usage-stats",
                  "--temp-dir=%s" % self.temp_dir], timeout=120)
        self.nodes.append("127.0.0.1")
        return self.address

    @property
    def address(self) -> str:
        assert self.port is not None, "the head is not started"
        return "127.0.0.1:%d" % self.port

    def add_node(self, ip: str, num_cpus: int = 1) -> None:
        self.run([self.ray_bin, "start", "--address=%s" % self.address, "--node-ip-address=%s" % ip,
                  "--num-cpus=%d" % num_cpus, "--disable-usage-stats", "--temp-dir=%s" % self.temp_dir],
                 timeout=120)
        self.nodes.append(ip)
        self.wait_nodes(len(self.nodes))

    def alive_nodes(self) -> int:
        code = ("import ray; ray.init(address=%r, logging_level='ERROR'); "
                "print(sum(1 for n in ray.nodes() if n['Alive']))" % self.address)
        p = subprocess.run(self.wrap([sys.executable, "-c", code]), env=self.env, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, timeout=60, cwd=self.workdir)
        try:
            return int(p.stdout.decode().split()[-1])
        except (IndexError, ValueError):
            return -1

    def wait_nodes(self, n: int, timeout: float = 60) -> None:
        t = time.monotonic() + timeout
        while time.monotonic() < t:
            if self.alive_nodes() == n:
                return
            time.sleep(0.5)
        raise ClusterError("the cluster did not reach %d alive nodes in %g s" % (n, timeout))

    def node_pids(self, ip: str) -> List[int]:
        """The processes of node `ip`: those started with its address (raylet, log monitor,
        agents) and all their descendants (the workers: their command line is "ray::...")."""
        assert self.init_pid is not None
        marks = ("--node-ip-address=%s " % ip, "--node_ip_address=%s " % ip)
        everything = _descendants(self.init_pid)
        roots = [p for p in everything if any(m in _cmdline(p) + " " for m in marks)]
        pids = set(roots)
        for r in roots:
            pids.update(_descendants(r))
        return sorted(pids)

    def kill_node(self, ip: str) -> List[int]:
        """SIGKILLs every process of node `ip` at once: the node is lost, as when a machine dies."""
        pids = self.node_pids(ip)
        if not pids:
            raise ClusterError("no process of node %s found" % ip)
        for p in pids:
            try:
                os.kill(p, signal.SIGSTOP)  # freeze first, so that none reacts to the others' death
            except ProcessLookupError:
                pass
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.nodes.remove(ip)
        return pids

