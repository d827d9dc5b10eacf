"""Shared fixtures of the steno Python package tests (run by scripts/test_python.sh in a fresh venv
where the built wheel is installed; the repository's python/ folder is NOT on sys.path).

Environment:
  STENO_BUILD_DIR  the CMake build folder whose `steno` CLI the outputs are compared with
                   (default: <repo>/build)
  STENO_SHARED     the team's shared/ folder (default: <repo>/../shared): audio clips, stories260K
  STENO_SOURCE     the repository root (default: two folders above this one): include/ for the
                   struct-layout check
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path
from typing import Dict, List, Sequence

import pytest

HERE = Path(__file__).resolve().parent
REPO = Path(os.environ.get("STENO_SOURCE") or HERE.parent.parent)
BUILD = Path(os.environ.get("STENO_BUILD_DIR") or REPO / "build")
SHARED = Path(os.environ.get("STENO_SHARED") or REPO.parent / "shared")
AUDIO = SHARED / "audio"
STENO_BIN = BUILD / "steno"
STORIES = SHARED / "models" / "stories260K"
THREADS = 2


def manifest() -> List[Dict[str, str]]:
    with open(AUDIO / "manifest.tsv", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def english_clips(max_seconds: float = 30.0, count: int = 8) -> List[str]:
    """The first `count` English clips under max_seconds in the manifest (one per source family
    first, so that the selection is varied), as paths."""
    rows = [r for r in manifest() if r["language"] == "en" and float(r["seconds"]) < max_seconds]
    picked, families = [], set()
    for r in rows:
        fam = r["file"].split("_")[0]
        if fam not in families:
            families.add(fam)
            picked.append(r["file"])
    for r in rows:
        if len(picked) >= count:
            break
        if r["file"] not in picked:
            picked.append(r["file"])
    return [str(AUDIO / f) for f in picked[:count]]


def run_cli(args: Sequence[str], stdin: bytes = b"", timeout: float = 600) -> subprocess.CompletedProcess:
    if not STENO_BIN.exists():
        pytest.fail("the steno CLI is missing at %s (build the `steno` target or set STENO_BUILD_DIR)" % STENO_BIN)
    return subprocess.run([str(STENO_BIN)] + list(args), input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, check=False)


def cli_json(paths: Sequence[str], outdir: Path, *extra: str) -> Dict[str, dict]:
    """`steno transcribe --model tiny.en -f json` of paths (one run, model loaded once): the parsed
    JSON of each input by its path."""
    p = run_cli(["transcribe", "--model", "tiny.en", "-t", str(THREADS), "-f", "json", "-o", str(outdir),
                 "--verbose", "False", *extra, *paths])
    assert p.returncode == 0, p.stderr.decode("utf-8", "replace")
    out = {}
    for path in paths:
        stem = os.path.splitext(os.path.basename(path))[0]
        with open(outdir / (stem + ".json"), encoding="utf-8") as f:
            out[path] = json.load(f)
    return out


@pytest.fixture(scope="session")
def tiny():
    import steno

    return steno.WhisperModel("tiny.en", threads=THREADS)
