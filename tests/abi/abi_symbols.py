"""abi_symbols.py — ctest abi_symbols: the exported symbol list is the public API, nothing else.

Three sets must be equal (docs/API.md, "Symbols"):
  - the committed list: the global: names of cmake/steno.map (the linker version script);
  - what the built library exports: `nm -D --defined-only <build>/libsteno.so`;
  - the functions declared in include/steno.h and include/steno_llm.h: every `steno_<name>(` left
    once comments are removed (a function-pointer typedef's `(*steno_x)(` does not match).
So an accidental export, a removed function, or a declaration without an entry in the list fails,
naming the symbols. Environment: STENO_SOURCE, STENO_SHARED_LIB (the built libsteno.so).
"""

import os
import re
import subprocess
import sys


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", " ", text, flags=re.S))


def map_symbols(path):
    """The global: names of a version script `{ global: a; b; local: *; };`."""
    with open(path) as f:
        text = strip_comments(f.read())
    m = re.search(r"global\s*:(.*?)local\s*:\s*\*\s*;", text, flags=re.S)
    if not m:
        fail("%s: no 'global: ... local: *;' block" % path)
    names = [n.strip() for n in m.group(1).split(";") if n.strip()]
    bad = [n for n in names if not re.fullmatch(r"steno_[a-z0-9_]+", n)]
    if bad:
        fail("%s: entries that are not plain steno_* names: %s" % (path, bad))
    dup = sorted(set(n for n in names if names.count(n) > 1))
    if dup:
        fail("%s: listed twice: %s" % (path, dup))
    if names != sorted(names):
        fail("%s: the list is not sorted (first out of order: %s)" %
             (path, next(b for a, b in zip(names, names[1:]) if b < a)))
    return set(names)


def header_functions(paths):
    names = set()
    for p in paths:
        with open(p) as f:
            names.update(re.findall(r"\b(steno_[a-z0-9_]+)\s*\(", strip_comments(f.read())))
    return names


def exported(lib):
    p = subprocess.run(["nm", "-D", "--defined-only", lib], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        fail("nm -D --defined-only %s: %s" % (lib, p.stderr.strip()))
    return set(ln.split()[-1].split("@")[0] for ln in p.stdout.splitlines() if ln.strip())


def diff(a_name, a, b_name, b):
    msgs = []
    if a - b:
        msgs.append("in %s but not in %s: %s" % (a_name, b_name, " ".join(sorted(a - b))))
    if b - a:
        msgs.append("in %s but not in %s: %s" % (b_name, a_name, " ".join(sorted(b - a))))
    return msgs


def main():
    source = os.environ.get("STENO_SOURCE")
    lib = os.environ.get("STENO_SHARED_LIB")
    if not source or not lib:
        fail("STENO_SOURCE and STENO_SHARED_LIB must be set (run through ctest)")
    map_path = os.path.join(source, "cmake", "steno.map")
    listed = map_symbols(map_path)
    declared = header_functions([os.path.join(source, "include", h) for h in ("steno.h", "steno_llm.h")])
    built = exported(lib)
    errors = diff("cmake/steno.map", listed, "the headers", declared) + \
        diff("cmake/steno.map", listed, os.path.basename(lib) + " (nm -D)", built)
    if errors:
        fail("the ABI symbol list is out of step (docs/API.md):\n  " + "\n  ".join(errors))
    print("abi_symbols: ok: %d symbols (cmake/steno.map = headers = nm -D %s)" % (len(listed), lib))


if __name__ == "__main__":
    main()
