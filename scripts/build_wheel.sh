#!/usr/bin/env bash
# build_wheel.sh BUILD_DIR OUT_DIR — the steno Python wheel (python/) with libsteno.so.3 inside.
#
# Builds the CMake target steno_shared in BUILD_DIR (configuring a Release build there first when
# BUILD_DIR has no CMakeCache.txt), stages python/ with the library copied to
# steno/_native/libsteno.so.3, and packs it with pip (isolated build: the pinned setuptools/wheel of
# python/pyproject.toml, from PyPI) into OUT_DIR/steno-<version>-py3-none-<platform>.whl.
# Prints the wheel's path as the last line. The wheel's libsteno.so.3 links the system's FFmpeg,
# OpenBLAS, cJSON, PCRE2 and libcrypto (scripts/install_deps.sh).
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR" >&2
    exit 2
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$1"
OUT="$2"
PY="${PYTHON:-python3}"
JOBS="${JOBS:-2}"

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD" --target steno_shared -j "$JOBS" >/dev/null
LIB="$BUILD/libsteno.so.3"
[ -e "$LIB" ] || { echo "$0: $LIB was not built" >&2; exit 1; }

STAGE="$BUILD/py-stage"
rm -rf "$STAGE"
mkdir -p "$STAGE"
cp "$ROOT/python/pyproject.toml" "$ROOT/python/setup.py" "$ROOT/python/README.md" "$STAGE/"
cp -r "$ROOT/python/steno" "$STAGE/steno"
find "$STAGE" -name __pycache__ -prune -exec rm -rf {} +
mkdir -p "$STAGE/steno/_native"
cp -L "$LIB" "$STAGE/steno/_native/libsteno.so.3"

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
rm -f "$OUT"/steno-*.whl
"$PY" -m pip wheel --quiet --no-deps --wheel-dir "$OUT" "$STAGE" >&2
WHEEL="$(ls "$OUT"/steno-*.whl)"
echo "$WHEEL"
