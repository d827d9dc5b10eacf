"""install_tree.py — ctest install_tree: steno installed into a temporary prefix works as a library.

1. `cmake --install <build> --prefix <tmp>` lays out the shared and static libraries, the headers,
   steno.pc, the CMake package, the CLI and its manual page (cmake/install.cmake); the installed
   libsteno.so has SONAME libsteno.so.<major> and exports only steno_* symbols.
2. tests/install/hello_steno.c is built against that prefix three times — pkg-config (shared),
   libsteno.a with steno.pc's Requires.private / Libs.private, and find_package(steno) with
   CMAKE_PREFIX_PATH (tests/install/CMakeLists.txt) — and each program transcribes jfk.wav with
   tiny.en; the text must hold "ask not what your country can do for you". The shared builds must
   load the prefix's libsteno.so.<major> (ldd), found through their RPATH.
3. `cpack -G DEB` (cmake/package.cmake) builds the .deb; `dpkg-deb -c` must list the same files
   under /usr, its steno.pc must say prefix=/usr, and it must declare Depends.

Nothing is rebuilt: the libraries are the build's. Environment (tests/CMakeLists.txt):
  STENO_BUILD_DIR, STENO_SOURCE, STENO_SHARED, STENO_CC (the C compiler), STENO_CMAKE,
  STENO_CPACK, STENO_LIBDIR / STENO_INCLUDEDIR / STENO_BINDIR / STENO_MANDIR (GNUInstallDirs),
  STENO_SOVERSION, STENO_VERSION_FULL, STENO_SANITIZE ("1": the programs are built with
  -fsanitize=address,undefined, as the library is), STENO_MODEL_DIR (optional, as steno_eval.py).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "py"))
import steno_eval  # noqa: E402  (model_dir, shared_dir, fail)

fail = steno_eval.fail
PHRASE = "ask not what your country can do for you"


def env(name):
    v = os.environ.get(name)
    if not v:
        fail("%s is not set (run through ctest)" % name)
    return v


def run(cmd, what, extra_env=None, cwd=None):
    """Runs cmd; on failure fails the test naming `what` with the command's output."""
    e = dict(os.environ)
    if extra_env:
        e.update(extra_env)
    p = subprocess.run(cmd, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if p.returncode != 0:
        fail("%s: %s exited %d:\n%s" % (what, " ".join(cmd), p.returncode, p.stdout[-4000:]))
    return p.stdout


def check_layout(prefix, lay):
    so = os.path.join(prefix, lay["lib"], "libsteno.so")
    want = [
        so, so + "." + lay["sover"], so + "." + lay["version"],
        os.path.join(prefix, lay["lib"], "libsteno.a"),
        os.path.join(prefix, lay["inc"], "steno.h"),
        os.path.join(prefix, lay["inc"], "steno_llm.h"),
        os.path.join(prefix, lay["lib"], "pkgconfig", "steno.pc"),
        os.path.join(prefix, lay["lib"], "cmake", "steno", "stenoConfig.cmake"),
        os.path.join(prefix, lay["lib"], "cmake", "steno", "stenoConfigVersion.cmake"),
        os.path.join(prefix, lay["lib"], "cmake", "steno", "stenoTargets.cmake"),
        os.path.join(prefix, lay["lib"], "cmake", "steno", "stenoStaticTargets.cmake"),
        os.path.join(prefix, lay["bin"], "steno"),
        os.path.join(prefix, lay["man"], "man1", "steno.1"),
        os.path.join(prefix, os.path.dirname(lay["man"]), "doc", "steno", "README.md"),
        os.path.join(prefix, os.path.dirname(lay["man"]), "doc", "steno", "API.md"),
    ]
    missing = [w for w in want if not os.path.exists(w)]
    if missing:
        fail("install: missing " + ", ".join(missing))
    dyn = run(["readelf", "-d", so], "readelf")
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dyn)
    if not m or m.group(1) != "libsteno.so." + lay["sover"]:
        fail("install: %s has SONAME %s, expected libsteno.so.%s" % (so, m and m.group(1), lay["sover"]))
    syms = [ln.split()[-1] for ln in run(["nm", "-D", "--defined-only", so], "nm").splitlines() if ln.strip()]
    stray = [s for s in syms if not s.startswith("steno_")]
    if stray or not syms:
        fail("install: libsteno.so exports %d symbols, not steno_*: %s" % (len(syms), " ".join(stray[:20])))
    with open(os.path.join(prefix, lay["man"], "man1", "steno.1"), encoding="utf-8") as f:
        man = f.read()
    for verb in ("transcribe", "generate", "serve"):
        if '.SS "steno %s"' % verb not in man or "steno %s" % verb not in man:
            fail("install: steno.1 has no section for 'steno %s'" % verb)
    print("layout: ok (%d exported symbols, SONAME libsteno.so.%s)" % (len(syms), lay["sover"]))


def check_program(exe, prefix, lay, model, audio, label, shared=True):
    if shared:
        ldd = run(["ldd", exe], "ldd " + label)
        lib = os.path.join(prefix, lay["lib"], "libsteno.so." + lay["sover"])
        line = [ln for ln in ldd.splitlines() if "libsteno.so" in ln]
        if not line or os.path.realpath(line[0].split("=>")[1].split()[0]) != os.path.realpath(lib):
            fail("%s: does not load %s: %s" % (label, lib, line))
    t = time.time()
    out = run([exe, model, audio], label)
    if PHRASE not in out.lower():
        fail("%s: transcript lacks %r:\n%s" % (label, PHRASE, out))
    print("%s: ok (%.1f s): %s" % (label, time.time() - t, " ".join(out.split())[:120]))


def build_pkg_config(src, prefix, lay, work, cc, cflags):
    # PKG_CONFIG_LIBDIR = the prefix alone: steno.pc must not need any other .pc file (a machine
    # with the .deb and only the runtime libraries has none of FFmpeg's)
    pc_env = {"PKG_CONFIG_LIBDIR": os.path.join(prefix, lay["lib"], "pkgconfig")}
    flags = run(["pkg-config", "--cflags", "--libs", "steno"], "pkg-config", pc_env).split()
    exe = os.path.join(work, "hello_pc")
    libdir = os.path.join(prefix, lay["lib"])
    run([cc] + cflags + ["-o", exe, src] + flags + ["-Wl,-rpath," + libdir], "cc (pkg-config)")
    # The static library: `pkg-config --static --libs steno` (Libs.private) must be enough to link
    # libsteno.a (its dependencies are linked shared: Debian ships FFmpeg's shared libraries only).
    static = run(["pkg-config", "--static", "--libs", "steno"], "pkg-config --static", pc_env).split()
    for want in ("-lavformat", "-lcjson", "-lpcre2-8", "-lopenblas", "-lcrypto", "-lz"):
        if want not in static:
            fail("steno.pc: Libs.private lacks %s: %s" % (want, static))
    cflags_only = run(["pkg-config", "--cflags", "steno"], "pkg-config --cflags", pc_env).split()
    sexe = os.path.join(work, "hello_static")
    run([cc] + cflags + cflags_only + ["-o", sexe, src, os.path.join(libdir, "libsteno.a")] +
        [f for f in static if f != "-lsteno" and not f.startswith("-L")],
        "cc (libsteno.a with pkg-config --static's dependencies)")
    return exe, sexe


def build_cmake(source, prefix, work, cmake, cc, cflags):
    b = os.path.join(work, "cmake-build")
    run([cmake, "-S", os.path.join(source, "tests", "install"), "-B", b, "-DCMAKE_PREFIX_PATH=" + prefix,
         "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_C_COMPILER=" + cc, "-DCMAKE_C_FLAGS=" + " ".join(cflags)],
        "cmake configure (find_package)")
    run([cmake, "--build", b], "cmake build (find_package)")
    return os.path.join(b, "hello_steno")


def check_deb(build, work, lay):
    pkg = os.path.join(work, "pkg")
    run([env("STENO_CPACK"), "-G", "DEB", "--config", os.path.join(build, "CPackConfig.cmake"), "-B", pkg],
        "cpack -G DEB")
    debs = [f for f in os.listdir(pkg) if f.endswith(".deb")]
    if len(debs) != 1:
        fail("cpack: expected one .deb in %s, found %s" % (pkg, debs))
    deb = os.path.join(pkg, debs[0])
    listing = run(["dpkg-deb", "-c", deb], "dpkg-deb -c")
    files = set(ln.split()[5].split(" -> ")[0] for ln in listing.splitlines() if len(ln.split()) >= 6)
    u = "./usr/"
    want = [u + lay["lib"] + "/libsteno.so." + lay["version"], u + lay["lib"] + "/libsteno.so." + lay["sover"],
            u + lay["lib"] + "/libsteno.so", u + lay["lib"] + "/libsteno.a",
            u + lay["inc"] + "/steno.h", u + lay["inc"] + "/steno_llm.h",
            u + lay["lib"] + "/pkgconfig/steno.pc",
            u + lay["lib"] + "/cmake/steno/stenoConfig.cmake",
            u + lay["lib"] + "/cmake/steno/stenoConfigVersion.cmake",
            u + lay["bin"] + "/steno", u + lay["man"] + "/man1/steno.1"]
    missing = [w for w in want if w not in files]
    if missing:
        fail("%s lacks %s; it holds:\n%s" % (debs[0], ", ".join(missing), listing))
    depends = run(["dpkg-deb", "-f", deb, "Depends"], "dpkg-deb -f").strip()
    if "libavformat" not in depends or "libopenblas" not in depends:
        fail("%s: Depends lacks FFmpeg or OpenBLAS: %r" % (debs[0], depends))
    desc = run(["dpkg-deb", "-f", deb, "Description"], "dpkg-deb -f Description").splitlines()
    if len(desc) < 2 or any(ln.lstrip().startswith(";") for ln in desc) or desc[1].strip() == desc[0].strip():
        fail("%s: malformed Description (a summary line, then the long text): %r" % (debs[0], desc))
    x = os.path.join(work, "deb-root")
    run(["dpkg-deb", "-x", deb, x], "dpkg-deb -x")
    with open(os.path.join(x, "usr", lay["lib"], "pkgconfig", "steno.pc")) as f:
        if "prefix=/usr\n" not in f.read():
            fail("%s: steno.pc does not say prefix=/usr" % debs[0])
    print("deb: ok: %s (%d entries), Depends: %s" % (debs[0], len(files), depends))


def main():
    t0 = time.time()
    build, source = env("STENO_BUILD_DIR"), env("STENO_SOURCE")
    lay = {"lib": env("STENO_LIBDIR"), "inc": env("STENO_INCLUDEDIR"), "bin": env("STENO_BINDIR"),
           "man": env("STENO_MANDIR"), "sover": env("STENO_SOVERSION"), "version": env("STENO_VERSION_FULL")}
    cc, cmake = env("STENO_CC"), env("STENO_CMAKE")
    cflags = ["-O1", "-Wall", "-Werror"]
    if os.environ.get("STENO_SANITIZE") == "1":
        cflags += ["-fsanitize=address,undefined"]
    model = steno_eval.model_dir()
    audio = os.path.join(steno_eval.shared_dir(), "audio", "jfk.wav")
    if not os.path.isfile(audio):
        fail("%s is missing" % audio)
    src = os.path.join(source, "tests", "install", "hello_steno.c")

    work = tempfile.mkdtemp(prefix="steno-install-")
    try:
        prefix = os.path.join(work, "prefix")
        run([cmake, "--install", build, "--prefix", prefix], "cmake --install")
        check_layout(prefix, lay)
        exe, sexe = build_pkg_config(src, prefix, lay, work, cc, cflags)
        check_program(exe, prefix, lay, model, audio, "pkg-config build")
        check_program(sexe, prefix, lay, model, audio, "libsteno.a build", shared=False)
        check_program(build_cmake(source, prefix, work, cmake, cc, cflags), prefix, lay, model, audio,
                      "find_package build")
        check_deb(build, work, lay)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("install_tree: ok (%.1f s)" % (time.time() - t0))


if __name__ == "__main__":
    main()
