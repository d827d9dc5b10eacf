#!/usr/bin/env python3
"""check_layers.py — keeps the code's layering and sizes as docs/ARCHITECTURE.md states them.

Checks, over the product code (src/, cli/, server/):
  1. every `#include "…"` against the layer table in docs/ARCHITECTURE.md (the fenced block
     marked ```layers): a file in room R includes only R itself, the public headers of include/
     and the rooms R's row lists; the rows run bottom first and a row lists only earlier rows,
     so the table is an order (checked too: a row naming a later one stops the script);
  2. inside src/whisper/, the stage order of the same document's ```whisper-stages block: a stage
     includes only itself and the stages its row lists, in the same bottom-first order; the
     files directly under src/whisper/ (stage "(root)": fast.h, faithful.h, fast_internal.h,
     the interfaces the stages share) are the one exception to the order;
  3. no file in src/ over 800 lines and no folder in src/ holding more than 20 files;
  4. every path written in backquotes in docs/ARCHITECTURE.md exists (a `*` matches as in a
     shell glob), so the map stays true.

Prints one line per finding (`file:line: …`) and exits 1 if there is any; otherwise a summary
line. Run from anywhere: `python3 tools/check_layers.py` (ctest runs it as `layers`).
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "ARCHITECTURE.md")
MAX_LINES = 800
MAX_FILES = 20
PUBLIC = {"steno.h", "steno_llm.h"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
PATH_RE = re.compile(r"`((?:src|cli|server|include|tests|tools|docs|bench|python|scripts|fuzz|cmake)/[^`\s]*)`")


def fenced_block(text, tag, hub=None):
    """The rows of a ```tag block, {room: [rooms it may include]}, in the block's order. The rows
    run bottom first and a row may list only earlier rows, so the table is an order and no two
    rooms can include each other; `hub` (Whisper's root files) is the one exception both ways."""
    m = re.search(r"^```" + tag + r"\n(.*?)^```", text, re.S | re.M)
    if not m:
        sys.exit(f"check_layers: {DOC}: no ```{tag} block")
    rules = {}
    for line in m.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, deps = line.partition(":")
        name = name.strip()
        for d in deps.split():
            if d not in rules and hub not in (name, d):
                sys.exit(f"check_layers: {DOC}: ```{tag}: {name} lists {d}, "
                         f"which is not a row above it")
        rules[name] = deps.split()
    return rules


def room_of(rel):
    """The room of a product file: src/<room>/…, or cli / server."""
    parts = rel.split("/")
    return parts[1] if parts[0] == "src" else parts[0]


def included_room(inc, own_room):
    if inc in PUBLIC:
        return "include"
    if "/" not in inc:
        return own_room  # a header beside the file (cli/, server/ use these)
    return inc.split("/", 1)[0]


def whisper_stage(path_in_whisper):
    """'decoder' for decoder/beam.c and decoder/spec/spec.c; '(root)' for fast.h."""
    parts = path_in_whisper.split("/")
    return parts[0] if len(parts) > 1 else "(root)"


def product_files():
    for top in ("src", "cli", "server"):
        for dp, dn, fn in os.walk(os.path.join(ROOT, top)):
            dn.sort()
            for f in sorted(fn):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dp, f), ROOT)


def main():
    text = open(DOC, encoding="utf-8").read()
    layers = fenced_block(text, "layers")
    stages = fenced_block(text, "whisper-stages", hub="(root)")
    problems = []
    n_inc = n_files = 0
    for rel in product_files():
        n_files += 1
        room = room_of(rel)
        if room not in layers:
            problems.append(f"{rel}:1: room '{room}' is not in the layer table of docs/ARCHITECTURE.md")
            continue
        allowed = set(layers[room]) | {room, "include"}
        lines = open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace").read().split("\n")
        if rel.startswith("src/") and len(lines) - 1 > MAX_LINES:
            problems.append(f"{rel}:1: {len(lines) - 1} lines (at most {MAX_LINES})")
        for i, line in enumerate(lines, 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            n_inc += 1
            inc = m.group(1)
            target = included_room(inc, room)
            if target not in allowed:
                problems.append(f"{rel}:{i}: room {room} includes room {target} ({inc}); "
                                f"{room}'s row lets it include only: {' '.join(layers[room]) or 'nothing'}")
                continue
            if rel.startswith("src/whisper/") and inc.startswith("whisper/"):
                src_stage = whisper_stage(rel[len("src/whisper/"):])
                dst_stage = whisper_stage(inc[len("whisper/"):])
                if src_stage not in stages:
                    problems.append(f"{rel}:{i}: whisper stage '{src_stage}' is not in the stage table")
                elif dst_stage != src_stage and dst_stage not in stages[src_stage]:
                    problems.append(f"{rel}:{i}: whisper stage {src_stage} includes stage {dst_stage} "
                                    f"({inc}); {src_stage}'s row lets it include only: {' '.join(stages[src_stage])}")
    for dp, dn, fn in os.walk(os.path.join(ROOT, "src")):
        files = [f for f in fn if not f.startswith(".")]
        if len(files) > MAX_FILES:
            problems.append(f"{os.path.relpath(dp, ROOT)}/:1: {len(files)} files (at most {MAX_FILES})")
    for i, line in enumerate(text.split("\n"), 1):
        for p in PATH_RE.findall(line):
            if not glob.glob(os.path.join(ROOT, p.rstrip("/"))):
                problems.append(f"docs/ARCHITECTURE.md:{i}: names {p}, which does not exist")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problems", file=sys.stderr)
        return 1
    print(f"check_layers: {n_inc} includes in {n_files} files, 0 violations; "
          f"no file in src/ over {MAX_LINES} lines, no folder over {MAX_FILES} files; "
          f"every path in docs/ARCHITECTURE.md exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
