"""Every ctypes mirror of a C struct (steno._lib.STRUCTS) has the C struct's size, and each field
its offset and size: a small C program compiled against include/ prints them (cc must exist)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

from steno import _lib
from conftest import REPO


def c_layout(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.fail("no C compiler (cc) to check the struct layouts with")
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "steno.h"', '#include "steno_llm.h"',
             "int main(void) {"]
    for name, cls in _lib.STRUCTS.items():
        lines.append('    printf("%s - %%zu %%zu\\n", sizeof(%s), _Alignof(%s));' % (name, name, name))
        for field, _ in cls._fields_:
            lines.append('    printf("%s %s %%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));'
                         % (name, field, name, field, name, field))
    lines += ["    return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c17", "-I", str(REPO / "include"), str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, stdout=subprocess.PIPE, text=True).stdout
    table = {}
    for line in out.splitlines():
        name, field, a, b = line.split()
        table[(name, field)] = (int(a), int(b))
    return table


def test_struct_layouts_match_c(tmp_path):
    table = c_layout(tmp_path)
    assert len(_lib.STRUCTS) >= 15
    for name, cls in _lib.STRUCTS.items():
        assert table[(name, "-")] == (ctypes.sizeof(cls), ctypes.alignment(cls)), name
        for field, ftype in cls._fields_:
            desc = getattr(cls, field)
            assert table[(name, field)] == (desc.offset, desc.size), "%s.%s" % (name, field)


def test_defaults_come_from_the_library():
    p = _lib.lib.steno_transcribe_default_params()
    assert p.compression_ratio_threshold == 2.4 and p.logprob_threshold == -1.0
    assert p.no_speech_threshold == 0.6 and p.best_of == 1 and p.patience == 1.0
    assert not p.temperatures and not p.on_segment
    s = _lib.lib.steno_sampler_default_params()
    assert s.top_k == 40 and abs(s.top_p - 0.95) < 1e-6 and abs(s.temperature - 0.8) < 1e-6
    c = _lib.lib.steno_llm_ctx_default_params()
    assert c.n_batch == 256
