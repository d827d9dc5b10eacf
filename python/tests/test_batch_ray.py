"""test_batch_ray.py — `python -m steno.batch` on a two-node Ray cluster, with a node killed mid-run.

The cluster runs in a private network namespace (python/tests/ray_cluster.py: unshare --net --pid
--mount-proc, only `lo` inside; node 1 at 127.0.0.1, node 2 at 127.0.0.2, one CPU each), so Ray
can reach nothing but this machine's loopback. The test:

  1. transcribes the 40 dev clips (shared/audio/manifest.tsv, all but the 120 s one) with the CLI,
     `steno transcribe --model tiny.en -t 1 -f json` (two processes, half the clips each): the
     reference;
  2. one node: steno.batch on the first 8 clips (--threads 1), throughput printed;
  3. two nodes: the same 8 clips, throughput printed;
  4. two nodes, all 40 clips from scratch; once 5 results are written, node 2 (its raylet,
     agents and workers) is SIGKILLed: the file it was transcribing must go back to the queue;
     once the driver has seen the loss a new node joins at 127.0.0.2 and must get an actor and
     files; the run must end with all 40 results and exit status 0;
  5. every result of 2-4 must equal the CLI's JSON for its clip (text, language, every segment
     field: ids, seeks, timestamps, texts, tokens, temperature, log-probs);
  6. a rerun of 4 must write nothing (mtimes and inodes unchanged, "0 done, 40 skipped").

Not skipped when something is missing: no ray, no unshare/nsenter/ip, not root, no steno CLI or
no tiny.en model are failures with the reason. Needs 3-4 minutes on 2 cores.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from ray_cluster import ClusterError, NetnsRayCluster, require_tools  # noqa: E402

REPO = Path(os.environ.get("STENO_SOURCE") or HERE.parent.parent)
BUILD = Path(os.environ.get("STENO_BUILD_DIR") or REPO / "build")
SHARED = Path(os.environ.get("STENO_SHARED") or REPO.parent / "shared")
AUDIO = SHARED / "audio"
STENO_BIN = BUILD / "steno"
N_CLIPS = 40
N_SUBSET = 8
KILL_AFTER = 5
SUMMARY = re.compile(r"^(\d+) done, (\d+) skipped, (\d+) failed(?:; ([\d.]+) s of audio in ([\d.]+) s: "
                     r"([\d.]+) files/s, ([\d.]+) audio-s/s)?", re.M)


def dev_clips() -> List[Tuple[str, float]]:
    """The 40 dev clips: the manifest's rows but the longest (120 s), in manifest order."""
    with open(AUDIO / "manifest.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    longest = max(rows, key=lambda r: float(r["seconds"]))
    rows = [r for r in rows if r is not longest][:N_CLIPS]
    return [(os.path.abspath(AUDIO / r["file"]), float(r["seconds"])) for r in rows]  # as the driver


def cli_reference(paths: List[str], outdir: Path) -> Dict[str, dict]:
    """`steno transcribe` JSON of each path, two CLI processes (one thread each) in parallel."""
    outdir.mkdir()
    halves = [paths[0::2], paths[1::2]]
    procs = [subprocess.Popen([str(STENO_BIN), "transcribe", "--model", "tiny.en", "-t", "1", "-f", "json",
                               "-o", str(outdir), "--verbose", "False", *h],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for h in halves]
    for p in procs:
        _, err = p.communicate(timeout=400)
        assert p.returncode == 0, "steno transcribe failed: %s" % err.decode("utf-8", "replace")[-2000:]
    out = {}
    for path in paths:
        with open(outdir / (os.path.splitext(os.path.basename(path))[0] + ".json"), encoding="utf-8") as f:
            out[path] = json.load(f)
    return out


def batch_cmd(listfile: Path, outdir: Path, address: str) -> List[str]:
    return [sys.executable, "-m", "steno.batch", "--input", str(listfile), "--output", str(outdir),
            "--model", "tiny.en", "--threads", "1", "--address", address]


def run_batch(cluster: NetnsRayCluster, listfile: Path, outdir: Path, log: Path, timeout: float = 300
              ) -> Tuple[int, str, str]:
    with open(log, "wb") as err:
        p = cluster.popen(batch_cmd(listfile, outdir, cluster.address), cwd=str(log.parent),
                          stdout=subprocess.PIPE, stderr=err)
        out, _ = p.communicate(timeout=timeout)
    return p.returncode, out.decode(), log.read_text(errors="replace")


def summary(stdout: str) -> Tuple[int, int, int, float, float]:
    m = SUMMARY.search(stdout)
    assert m, "no summary line in the driver's output: %r" % stdout
    return (int(m[1]), int(m[2]), int(m[3]), float(m[6] or 0), float(m[7] or 0))


def per_node_counts(stdout: str) -> Dict[str, int]:
    """The summary line's "per node: A 3, B 5" as {A: 3, B: 5}."""
    line = next((ln for ln in stdout.splitlines() if SUMMARY.match(ln)), "")
    return {k: int(v) for k, v in re.findall(r"(\S+) (\d+)(?:,|$)", line.split("per node: ")[-1])}


def check_results(outdir: Path, ref: Dict[str, dict], paths: List[str]) -> None:
    names = sorted(p.name for p in outdir.iterdir())
    assert not [n for n in names if ".tmp-" in n], "temporary files left in %s: %s" % (outdir, names)
    want = sorted(os.path.splitext(os.path.basename(p))[0] + ".json" for p in paths)
    assert names == want, "results in %s: %s, expected %s" % (outdir, names, want)
    for path in paths:
        with open(outdir / (os.path.splitext(os.path.basename(path))[0] + ".json"), encoding="utf-8") as f:
            got = json.load(f)
        cli = ref[path]
        assert got["path"] == path
        assert got["text"] == cli["text"], path
        assert got["language"] == cli["language"], path
        assert len(got["segments"]) == len(cli["segments"]), path
        for g, c in zip(got["segments"], cli["segments"]):
            assert g == c, "%s: segment %s differs from the CLI's:\n%s\n%s" % (path, c.get("id"), g, c)
        assert got["duration"] > 0


def test_batch_on_two_node_ray_cluster_with_node_loss(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    try:
        require_tools()
    except ClusterError as e:
        pytest.fail("cannot run the Ray batch test: %s" % e)
    if not STENO_BIN.exists():
        pytest.fail("the steno CLI is missing at %s (build the `steno` target or set STENO_BUILD_DIR)" % STENO_BIN)
    clips = dev_clips()
    assert len(clips) == N_CLIPS
    paths = [p for p, _ in clips]
    assert len({os.path.splitext(os.path.basename(p))[0] for p in paths}) == N_CLIPS
    t_start = time.monotonic()
    timings: List[str] = []
    rates: Dict[str, Tuple[float, float]] = {}

    all_list = tmp_path / "all.txt"
    all_list.write_text("".join(p + "\n" for p in paths))
    sub_list = tmp_path / "subset.txt"
    sub_list.write_text("".join(p + "\n" for p in paths[:N_SUBSET]))

    with NetnsRayCluster(tmp_path) as cluster:
        cluster.verify_isolated()
        t = time.monotonic()
        ref = cli_reference(paths, tmp_path / "cli")
        timings.append("CLI reference %.1f s" % (time.monotonic() - t))
        t = time.monotonic()
        cluster.start_head(num_cpus=1)
        timings.append("head %.1f s" % (time.monotonic() - t))

        # 2. one node
        rc, out, err = run_batch(cluster, sub_list, tmp_path / "one", tmp_path / "one.log")
        assert rc == 0, "1-node run exited %d:\n%s\n%s" % (rc, out, err[-4000:])
        done, skipped, failed, fps, aps = summary(out)
        assert (done, skipped, failed) == (N_SUBSET, 0, 0), out
        rates["1 node"] = (fps, aps)
        check_results(tmp_path / "one", ref, paths[:N_SUBSET])

        # 3. two nodes
        t = time.monotonic()
        cluster.add_node("127.0.0.2", num_cpus=1)
        timings.append("node 2 %.1f s" % (time.monotonic() - t))
        rc, out, err = run_batch(cluster, sub_list, tmp_path / "two", tmp_path / "two.log")
        assert rc == 0, "2-node run exited %d:\n%s\n%s" % (rc, out, err[-4000:])
        done, skipped, failed, fps, aps = summary(out)
        assert (done, skipped, failed) == (N_SUBSET, 0, 0), out
        assert per_node_counts(out).get("127.0.0.2", 0) >= 1, "node 2 did no work: %s" % out
        rates["2 nodes"] = (fps, aps)
        check_results(tmp_path / "two", ref, paths[:N_SUBSET])

        # 4. two nodes, 40 clips, node 2 killed mid-run
        outdir = tmp_path / "all"
        log = tmp_path / "all.log"
        t = time.monotonic()
        with open(log, "wb") as errf:
            p = cluster.popen(batch_cmd(all_list, outdir, cluster.address), cwd=str(tmp_path),
                              stdout=subprocess.PIPE, stderr=errf)
            try:
                deadline = time.monotonic() + 240
                n = 0
                while p.poll() is None and time.monotonic() < deadline:
                    n = len(list(outdir.glob("*.json"))) if outdir.exists() else 0
                    if n >= KILL_AFTER:
                        break
                    time.sleep(0.1)
                assert p.poll() is None and n >= KILL_AFTER, (
                    "the driver ended (or stalled) before %d results: %s" % (KILL_AFTER, log.read_text()[-4000:]))
                killed = cluster.kill_node("127.0.0.2")
                t_kill = time.monotonic()
                timings.append("node 2 killed after %d results (%d processes), %.1f s in" % (
                    n, len(killed), time.monotonic() - t))
                # a replacement joins once the driver has seen the loss: it must get an actor
                while p.poll() is None and time.monotonic() < deadline and "actor on 127.0.0.2 lost" not in log.read_text():
                    time.sleep(0.2)
                assert p.poll() is None, "the driver ended before the loss was seen: " + log.read_text()[-4000:]
                timings.append("loss seen %.1f s after the kill" % (time.monotonic() - t_kill))
                cluster.add_node("127.0.0.2", num_cpus=1)
                timings.append("node 2 back %.1f s in" % (time.monotonic() - t))
                out, _ = p.communicate(timeout=300)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        err = log.read_text(errors="replace")
        out = out.decode()
        timings.append("40-clip run %.1f s" % (time.monotonic() - t))
        assert p.returncode == 0, "the 40-clip run exited %d:\n%s\n%s" % (p.returncode, out, err[-6000:])
        done, skipped, failed, fps, aps = summary(out)
        assert (done, skipped, failed) == (N_CLIPS, 0, 0), out
        rates["2 nodes, node 2 killed mid-run"] = (fps, aps)
        assert "actor on 127.0.0.2 lost" in err, "the driver did not report node 2's actor lost:\n" + err[-4000:]
        requeued = re.findall(r"actor on 127\.0\.0\.2 lost .*; (.*) goes back to the queue", err)
        assert requeued, "no file in flight on node 2 was handed back:\n" + err[-4000:]
        rejoined = re.findall(r"node (127\.0\.0\.2/\w+) \(\w+, 1 CPUs\) joined", err)
        assert rejoined, "the driver did not take the node that joined:\n" + err[-4000:]
        per_node = per_node_counts(out)
        assert per_node.get(rejoined[0], 0) >= 1, "the node that joined did no work: " + out
        assert per_node.get("127.0.0.2", 0) >= 1, "node 2 did no work before it was killed: " + out
        check_results(outdir, ref, paths)

        # 6. a rerun does nothing
        before = {f.name: (f.stat().st_mtime_ns, f.stat().st_ino) for f in outdir.iterdir()}
        rc, out, err = run_batch(cluster, all_list, outdir, tmp_path / "rerun.log", timeout=120)
        assert rc == 0, out + err
        assert summary(out)[:3] == (0, N_CLIPS, 0), out
        after = {f.name: (f.stat().st_mtime_ns, f.stat().st_ino) for f in outdir.iterdir()}
        assert after == before, "the rerun rewrote results"

    with capsys.disabled():
        print("\ntest_batch_ray: throughput (tiny.en, 1 thread per actor; %d clips, %.1f s of audio for "
              "the 1/2-node runs; %.1f s for the 40-clip run):" % (
                  N_SUBSET, sum(s for _, s in clips[:N_SUBSET]), sum(s for _, s in clips)))
        for k, (fps, aps) in rates.items():
            print("  %-32s %.3f files/s, %.2f audio-s/s" % (k, fps, aps))
        print("  requeued after the kill: %s" % ", ".join(os.path.basename(r) for r in requeued))
        print("  %s; total %.1f s" % ("; ".join(timings), time.monotonic() - t_start))
