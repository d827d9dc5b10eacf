"""steno.batch — transcribe many audio files on a Ray cluster, one Whisper model per node.

    python -m steno.batch --input LIST_OR_DIR --output DIR [options]

Input: a directory (its audio files, by extension, sorted by name; not recursive) or a text file
of paths, one per line (blank lines and lines starting with "#" are ignored; a relative path is
taken relative to the current directory; a path listed twice is done once). Paths are made
absolute and opened by the actor on its own node: every node must see them at the same path
(shared storage: NFS, a Kubernetes PersistentVolumeClaim, ...).

Work: one actor per alive node with CPUs (--actors-per-node), pinned there with Ray's
NodeAffinitySchedulingStrategy, loads the model once (steno.WhisperModel) and transcribes the
files handed to it one at a time. The driver keeps a queue and gives the next file to whichever
actor is idle, so fast nodes take more files. Every few seconds (and after a death) it looks at
ray.nodes(): nodes that joined get actors, actors on nodes that left are dropped.

Failures:
  * an actor that dies (node lost, worker killed, a crash in the library): its file goes back to
    the front of the queue and is done by another actor; a file under which actors died
    --max-actor-deaths times (default 3) is recorded as failed (it probably crashes steno);
  * a transcription error (steno.StenoError: not audio, unreadable, ...): the file is retried up
    to --max-retries times (default 3), then recorded as failed;
  * an actor whose model does not load (or whose node cannot import steno) is not replaced on
    that node; when no node can run an actor the run stops (exit status 2).
Failures do not stop the other files. At the end the failed files are listed (stdout, "FAILED
path: reason") and the exit status is 1.

Output names (the rule): a file's result is DIR/<name>.json (--format txt: DIR/<name>.txt; all:
both), where <name> is the file's basename without its last extension (talk.wav -> talk), the
name `steno transcribe` gives it — unless two or more inputs of the run share that name (a/x.wav
and b/x.wav, x.wav and x.flac): then each of them is named <name>-<h>, h the first 8 hex digits of
the SHA-1 of its absolute path (UTF-8). A result is written by the driver to
DIR/<name>.json.tmp-<pid> and renamed over DIR/<name>.json (os.replace), so a result file is
always complete. A file whose result(s) exist is skipped: a rerun does only what is missing (and
prints "0 done, N skipped"); delete a result to redo it.

The JSON result: {"path": absolute input path, then `steno transcribe --output-format json`'s
fields ("text", "segments" with id, seek, start, end, text, tokens, temperature, avg_logprob,
compression_ratio, no_speech_prob and, with --word-timestamps, words), "language"}, then
"language_probability" and "duration" (seconds of audio). The defaults are the CLI's (greedy
decoding: --beam-size 1 --best-of 1), so the text and segments equal the CLI's for the same
options. The .txt result is the CLI's txt output (one stripped segment text per line).

Progress goes to stderr (done/total, files/s, audio seconds/s, ETA, files per node); the summary
("N done, M skipped, F failed ...") to stdout.

Ray: --address ADDRESS (ray://host:10001, host:6379 or auto); default: $RAY_ADDRESS if set, else
a running local cluster (address="auto"), else a private single-node Ray started for the run.
Tested with ray==2.60.0 (docs/DEPLOY.md).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import socket
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Set

AUDIO_EXTENSIONS = frozenset(
    ".wav .flac .mp3 .m4a .mp4 .ogg .oga .opus .webm .aac .wma .aif .aiff .mkv .mov .amr".split()
)
FORMATS = ("json", "txt")
NODE_REFRESH_S = 2.0
NODE_COOLDOWN_S = 10.0
PROGRESS_EVERY_S = 2.0
#: no actor ready and none starting for this long while files remain: give up.
STALL_TIMEOUT_S = 300.0
#: actor creations that failed on one node before it is no longer used.
MAX_START_FAILURES_PER_NODE = 3


# --- inputs and output names ---------------------------------------------------------------------


def list_inputs(spec: str) -> List[str]:
    """The absolute paths of a directory's audio files (sorted), or of a list file's lines."""
    if os.path.isdir(spec):
        names = sorted(
            n
            for n in os.listdir(spec)
            if os.path.splitext(n)[1].lower() in AUDIO_EXTENSIONS and os.path.isfile(os.path.join(spec, n))
        )
        return [os.path.abspath(os.path.join(spec, n)) for n in names]
    paths, seen = [], set()
    with open(spec, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            p = os.path.abspath(line)
            if p not in seen:
                seen.add(p)
                paths.append(p)
    return paths


def output_names(paths: Sequence[str]) -> Dict[str, str]:
    """The output name of each path (the rule in the module docstring)."""
    stems = {p: os.path.splitext(os.path.basename(p))[0] for p in paths}
    count = collections.Counter(stems.values())
    names = {}
    for p, stem in stems.items():
        if count[stem] > 1:
            h = hashlib.sha1(p.encode("utf-8", "surrogateescape")).hexdigest()[:8]
            stem = "%s-%s" % (stem, h)
        names[p] = stem
    return names


def write_atomic(path: str, data: str) -> None:
    tmp = "%s.tmp-%d" % (path, os.getpid())
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def result_json(path: str, r: Dict[str, Any]) -> str:
    doc = {"path": path, "text": r["text"], "segments": r["segments"], "language": r["language"],
           "language_probability": r["language_probability"], "duration": r["duration"]}
    return json.dumps(doc)  # json.dump's defaults, as the CLI's JSON writer


def result_txt(r: Dict[str, Any]) -> str:
    return "".join(s["text"].strip() + "\n" for s in r["segments"])


# --- the actor -----------------------------------------------------------------------------------


class Transcriber:
    """A Ray actor (wrapped with ray.remote by the driver): one model, one file at a time."""

    def __init__(self, model: str, threads: int, model_dir: Optional[str]) -> None:
        self.error: Optional[str] = None
        self.model: Any = None
        try:
            import steno

            self.model = steno.WhisperModel(model, threads=threads, model_dir=model_dir)
        except Exception as e:  # reported by ready(): the driver stops using this node
            self.error = "%s: %s" % (type(e).__name__, e)

    def ready(self) -> Dict[str, Any]:
        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "ip": ray.util.get_node_ip_address(),  # type: ignore[no-untyped-call]
                "error": self.error}

    def transcribe(self, path: str, options: Dict[str, Any]) -> Dict[str, Any]:
        t0 = time.monotonic()
        segments, info = self.model.transcribe(path, **options)
        segs = []
        for s in segments:
            d = {"id": s.id, "seek": s.seek, "start": s.start, "end": s.end, "text": s.text,
                 "tokens": list(s.tokens), "temperature": s.temperature, "avg_logprob": s.avg_logprob,
                 "compression_ratio": s.compression_ratio, "no_speech_prob": s.no_speech_prob}
            if options.get("word_timestamps"):
                d["words"] = [{"word": w.word, "start": w.start, "end": w.end, "probability": w.probability}
                              for w in (s.words or [])]
            segs.append(d)
        return {"text": "".join(s["text"] for s in segs), "segments": segs, "language": info.language,
                "language_probability": info.language_probability, "duration": info.duration,
                "seconds": time.monotonic() - t0}


# --- the driver ----------------------------------------------------------------------------------


class BatchAbort(Exception):
    """The run cannot go on (no node can run an actor)."""


class _Actor:
    __slots__ = ("handle", "node_id", "label", "ready", "path", "since")

    def __init__(self, handle: Any, node_id: str, label: str) -> None:
        self.handle = handle
        self.node_id = node_id
        self.label = label
        self.ready = False
        self.path: Optional[str] = None  # the file in flight
        self.since = 0.0


def _fmt_s(s: float) -> str:
    s = int(round(s))
    return "%dh%02dm" % (s // 3600, s % 3600 // 60) if s >= 3600 else ("%dm%02ds" % (s // 60, s % 60) if s >= 60 else "%ds" % s)


class Driver:
    def __init__(self, ray: Any, args: argparse.Namespace, todo: List[str], names: Dict[str, str],
                 formats: Sequence[str], log: Any = sys.stderr) -> None:
        self.ray = ray
        self.args = args
        self.names = names
        self.formats = formats
        self.log = log
        self.pending = collections.deque(todo)
        self.total = len(todo)
        self.actors: Dict[Any, _Actor] = {}  # by the ObjectRef in flight (ready() or transcribe())
        self.idle: List[_Actor] = []
        self.per_node: Dict[str, List[_Actor]] = collections.defaultdict(list)  # live actors
        self.bad_nodes: Dict[str, str] = {}
        self.alive: Set[str] = set()
        self.ips_seen: Set[str] = set()
        #: a node whose actor died gets no new one before this (monotonic) time: a node that is
        #: going down would take it and lose it again before the cluster marks the node dead
        self.cooldown: Dict[str, float] = {}
        self.start_failures: "collections.Counter[str]" = collections.Counter()
        self.labels: Dict[str, str] = {}
        self.errors: "collections.Counter[str]" = collections.Counter()
        self.deaths: "collections.Counter[str]" = collections.Counter()
        self.failed: Dict[str, str] = {}
        self.done = 0
        self.retried = 0
        self.audio_s = 0.0
        self.done_per_node: "collections.Counter[str]" = collections.Counter()
        self.options = {"language": args.language, "beam_size": args.beam_size, "best_of": args.best_of,
                        "word_timestamps": args.word_timestamps}
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.affinity = NodeAffinitySchedulingStrategy
        self.actor_cls = ray.remote(max_restarts=0, max_task_retries=0)(Transcriber)

    def say(self, msg: str) -> None:
        print("steno.batch: " + msg, file=self.log, flush=True)

    # nodes and actors
    def refresh_nodes(self) -> None:
        now = time.monotonic()
        alive = {}
        for n in self.ray.nodes():
            if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= self.args.cpus_per_actor:
                alive[n["NodeID"]] = n
        self.alive = set(alive)
        ips = collections.Counter(n.get("NodeManagerAddress", "?") for n in alive.values())
        for nid, n in alive.items():
            if nid not in self.labels:  # a node seen for the first time: its IP, or IP/id when shared
                ip = n.get("NodeManagerAddress", "?")
                self.labels[nid] = ip if ips[ip] == 1 and ip not in self.ips_seen else "%s/%s" % (ip, nid[:6])
                self.ips_seen.add(ip)
                self.say("node %s (%s, %g CPUs) joined: %d actor(s)" % (
                    self.labels[nid], nid[:12], n["Resources"]["CPU"], self.args.actors_per_node))
        for nid in list(self.per_node):  # nodes that left: their actors are dead or will be
            if nid not in alive:
                for a in list(self.per_node[nid]):
                    self.drop(a, "node %s is gone" % self.labels.get(nid, nid[:8]))
        for nid in alive:
            if nid in self.bad_nodes or self.cooldown.get(nid, 0.0) > now:
                continue
            while len(self.per_node[nid]) < self.args.actors_per_node:
                self.start_actor(nid)

    def start_actor(self, node_id: str) -> None:
        h = self.actor_cls.options(
            num_cpus=self.args.cpus_per_actor,
            scheduling_strategy=self.affinity(node_id=node_id, soft=False),
        ).remote(self.args.model, self.args.threads, self.args.model_dir)
        a = _Actor(h, node_id, self.labels.get(node_id, node_id[:8]))
        a.since = time.monotonic()
        self.per_node[node_id].append(a)
        self.actors[h.ready.remote()] = a

    def drop(self, a: _Actor, why: str) -> None:
        """Forgets an actor (dead or to be abandoned); its file goes back to the queue."""
        lst = self.per_node.get(a.node_id, [])
        if a not in lst:
            return
        lst.remove(a)
        self.cooldown[a.node_id] = time.monotonic() + NODE_COOLDOWN_S
        if a in self.idle:
            self.idle.remove(a)
        for ref, b in list(self.actors.items()):
            if b is a:
                del self.actors[ref]
        try:
            self.ray.kill(a.handle, no_restart=True)
        except Exception:
            pass
        if a.path is not None:
            p, a.path = a.path, None
            self.deaths[p] += 1
            if self.deaths[p] >= self.args.max_actor_deaths:
                self.fail(p, "%d actors died while transcribing it (last: %s)" % (self.deaths[p], why))
            else:
                self.retried += 1
                self.pending.appendleft(p)
                self.say("actor on %s lost (%s); %s goes back to the queue" % (a.label, why, p))
        else:
            self.say("actor on %s lost (%s)" % (a.label, why))

    def fail(self, path: str, why: str) -> None:
        self.failed[path] = why
        self.say("FAILED %s: %s" % (path, why))

    def assign(self) -> None:
        while self.idle and self.pending:
            a = self.idle.pop(0)
            p = self.pending.popleft()
            a.path = p
            a.since = time.monotonic()
            self.actors[a.handle.transcribe.remote(p, self.options)] = a

    # results
    def on_ready(self, a: _Actor, ref: Any) -> None:
        ray = self.ray
        try:
            info = ray.get(ref)
        except ray.exceptions.RayError as e:
            self.start_failures[a.node_id] += 1
            why = "could not start: %s" % _short(e)
            if self.start_failures[a.node_id] >= MAX_START_FAILURES_PER_NODE:
                self.bad_nodes[a.node_id] = why
            self.drop(a, why)
            return
        if info["error"]:
            self.bad_nodes[a.node_id] = info["error"]
            self.say("node %s not used: the model did not load: %s" % (a.label, info["error"]))
            lst = self.per_node.get(a.node_id, [])
            if a in lst:
                lst.remove(a)
            ray.kill(a.handle, no_restart=True)
            return
        a.ready = True
        self.start_failures[a.node_id] = 0
        self.idle.append(a)

    def on_result(self, a: _Actor, ref: Any) -> None:
        ray = self.ray
        path = a.path
        assert path is not None
        try:
            r = ray.get(ref)
        except ray.exceptions.RayTaskError as e:  # raised by transcribe() itself: a steno error
            a.path = None
            self.idle.append(a)
            self.errors[path] += 1
            if self.errors[path] > self.args.max_retries:
                self.fail(path, _short(e))
            else:
                self.retried += 1
                self.pending.append(path)
                self.say("%s: %s (try %d of %d)" % (path, _short(e), self.errors[path], self.args.max_retries + 1))
            return
        except ray.exceptions.RayError as e:  # the actor died (RayActorError), its node was lost, ...
            self.drop(a, _short(e))
            self.refresh_due = 0.0
            return
        a.path = None
        self.idle.append(a)
        name = self.names[path]
        try:
            for fmt in self.formats:
                out = os.path.join(self.args.output, name + "." + fmt)
                write_atomic(out, result_json(path, r) if fmt == "json" else result_txt(r))
        except OSError as e:
            self.fail(path, "writing the result: %s" % e)
            return
        self.done += 1
        self.audio_s += float(r["duration"])
        self.done_per_node[a.label] += 1

    def progress(self, final: bool = False) -> None:
        el = time.monotonic() - self.t0
        finished = self.done + len(self.failed)
        rate = self.done / el if el > 0 else 0.0
        left = self.total - finished
        eta = ("ETA %s" % _fmt_s(left / rate)) if rate > 0 and left else ("ETA ?" if left else "")
        nodes = ", ".join("%s: %d" % kv for kv in sorted(self.done_per_node.items())) or "-"
        busy = sum(1 for a in self.actors.values() if a.ready)
        self.say("%d/%d files%s, %.2f files/s, %.1f audio-s/s, %s; %d actors busy; per node: %s" % (
            finished, self.total, (" (%d failed)" % len(self.failed)) if self.failed else "", rate,
            self.audio_s / el if el > 0 else 0.0, eta if not final else "elapsed %s" % _fmt_s(el), busy, nodes))

    def run(self) -> None:
        ray = self.ray
        self.t0 = time.monotonic()
        self.refresh_due = 0.0
        next_progress = self.t0 + PROGRESS_EVERY_S
        stalled_since: Optional[float] = None
        while self.pending or any(a.path is not None for a in self.actors.values()):
            now = time.monotonic()
            if now >= self.refresh_due:
                self.refresh_nodes()
                self.refresh_due = now + NODE_REFRESH_S
            self.assign()
            if not self.actors:  # no actor at all: wait for a node, unless none can ever be used
                if self.alive and all(n in self.bad_nodes for n in self.alive):
                    raise BatchAbort("no node can run the model: " + "; ".join(
                        "%s: %s" % (self.labels.get(k, k[:8]), v) for k, v in self.bad_nodes.items()))
                stalled_since = stalled_since or now
                if now - stalled_since > STALL_TIMEOUT_S:
                    raise BatchAbort("no actor could be started for %d s (no alive node with %g CPUs?)"
                                     % (STALL_TIMEOUT_S, self.args.cpus_per_actor))
                time.sleep(0.5)
                continue
            if self.idle or any(a.ready for a in self.actors.values()):
                stalled_since = None
            else:  # every actor is still starting
                stalled_since = stalled_since or now
                if now - stalled_since > STALL_TIMEOUT_S:
                    raise BatchAbort("no actor became ready in %d s (no node with %g free CPUs?)"
                                     % (STALL_TIMEOUT_S, self.args.cpus_per_actor))
            ready, _ = ray.wait(list(self.actors), num_returns=1, timeout=0.5)
            for ref in ready:
                a = self.actors.pop(ref, None)
                if a is None:
                    continue
                if a.ready:
                    self.on_result(a, ref)
                else:
                    self.on_ready(a, ref)
            if time.monotonic() >= next_progress:
                self.progress()
                next_progress = time.monotonic() + PROGRESS_EVERY_S
        self.progress(final=True)


def _short(e: BaseException) -> str:
    """An exception's message in one line: a task error's original exception (Ray's own message
    carries the remote traceback), else the last line of Ray's message."""
    cause = getattr(e, "cause", None)
    if type(e).__name__.startswith("RayTaskError") and isinstance(cause, BaseException):
        return "%s: %s" % (type(cause).__name__, " ".join(str(cause).split()))[:300]
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    msg = lines[-1] if lines else type(e).__name__
    return msg if len(msg) < 300 else msg[:297] + "..."


def connect(ray: Any, address: Optional[str]) -> str:
    kw = dict(log_to_driver=True, logging_level="WARNING", configure_logging=True)
    if address:
        if address != "auto" and "://" not in address and ":" in address:
            # a GCS address (HOST:PORT): ray.init retries an unreachable one for minutes
            host, _, port = address.rpartition(":")
            try:
                socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
            except (OSError, ValueError) as e:
                raise ConnectionError("nothing answers at %s (%s)" % (address, e)) from None
        ray.init(address=address, **kw)
        return address
    if os.environ.get("RAY_ADDRESS"):
        ray.init(**kw)
        return os.environ["RAY_ADDRESS"]
    try:
        ray.init(address="auto", **kw)
        return "auto"
    except ConnectionError:
        ray.init(**kw)
        return "local"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m steno.batch",
        description="Transcribe many audio files on a Ray cluster (one steno Whisper model per node).",
        epilog="Output names, retries and the JSON fields: see the module's docstring (pydoc steno.batch).")
    ap.add_argument("--input", required=True, help="a text file of paths (one per line) or a directory")
    ap.add_argument("--output", required=True, help="the results' directory (created if missing)")
    ap.add_argument("--model", default="tiny.en", help="model name or directory (default tiny.en)")
    ap.add_argument("--model-dir", default=None, help="where named models are looked up on the nodes")
    ap.add_argument("--threads", type=int, default=0, help="threads of each actor (0: all cores of its node)")
    ap.add_argument("--address", default=None, help="Ray address (default: $RAY_ADDRESS, a running cluster, else local)")
    ap.add_argument("--actors-per-node", type=int, default=1)
    ap.add_argument("--cpus-per-actor", type=float, default=1.0, help="Ray CPUs each actor reserves (default 1)")
    ap.add_argument("--language", default=None, help="language code (default: detect; en on .en models)")
    ap.add_argument("--beam-size", type=int, default=1, help="1 = greedy, the CLI's default")
    ap.add_argument("--best-of", type=int, default=1)
    ap.add_argument("--word-timestamps", action="store_true")
    ap.add_argument("--format", default="json", choices=["json", "txt", "all"])
    ap.add_argument("--max-retries", type=int, default=3, help="retries of a file after a transcription error")
    ap.add_argument("--max-actor-deaths", type=int, default=3,
                    help="actor deaths under one file after which it is recorded as failed")
    a = ap.parse_args(argv)
    if a.actors_per_node < 1 or a.threads < 0 or a.max_retries < 0 or a.max_actor_deaths < 1 or a.beam_size < 1:
        ap.error("--actors-per-node, --max-actor-deaths and --beam-size must be >= 1; --threads, --max-retries >= 0")
    return a


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    formats = FORMATS if args.format == "all" else (args.format,)
    try:
        paths = list_inputs(args.input)
    except OSError as e:
        print("steno.batch: --input %s: %s" % (args.input, e), file=sys.stderr)
        return 2
    os.makedirs(args.output, exist_ok=True)
    names = output_names(paths)
    todo = [p for p in paths
            if not all(os.path.exists(os.path.join(args.output, names[p] + "." + f)) for f in formats)]
    skipped = len(paths) - len(todo)
    if not todo:
        print("0 done, %d skipped, 0 failed" % skipped, flush=True)
        return 0
    try:
        import ray
    except ImportError:
        print("steno.batch: Ray is not installed (pip install ray==2.60.0)", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    # Ray prints its own messages (a node marked dead, worker output) on sys.stdout: they go to
    # stderr with the progress, and stdout keeps only the summary.
    stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        try:
            where = connect(ray, args.address)
        except Exception as e:  # no cluster there, version or authentication mismatch, ...
            print("steno.batch: cannot connect to Ray%s: %s: %s" % (
                " at " + args.address if args.address else "", type(e).__name__, _short(e)),
                file=sys.stderr, flush=True)
            return 2
        d = Driver(ray, args, todo, names, formats)
        d.say("%d files to do, %d skipped (results exist) in %s; Ray at %s" % (len(todo), skipped, args.output, where))
        d.run()
    except BatchAbort as e:
        print("steno.batch: %s" % e, file=sys.stderr, flush=True)
        return 2
    finally:
        ray.shutdown()
        sys.stdout = stdout
    el = time.monotonic() - t0
    print("%d done, %d skipped, %d failed; %.1f s of audio in %.1f s: %.3f files/s, %.2f audio-s/s; per node: %s"
          % (d.done, skipped, len(d.failed), d.audio_s, el, d.done / el, d.audio_s / el,
             ", ".join("%s %d" % kv for kv in sorted(d.done_per_node.items())) or "-"), flush=True)
    for p, why in d.failed.items():
        print("FAILED %s: %s" % (p, why), flush=True)
    return 1 if d.failed else 0


if __name__ == "__main__":
    sys.exit(main())
