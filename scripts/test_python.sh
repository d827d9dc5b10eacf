#!/usr/bin/env bash
# test_python.sh BUILD_DIR [PYTEST_ARGS...] — the steno Python package's tests, on the built wheel.
#
# 1. builds the `steno` CLI (the tests compare with its output) and the wheel
#    (scripts/build_wheel.sh BUILD_DIR BUILD_DIR/dist);
# 2. creates a fresh venv BUILD_DIR/py-venv and installs the wheel, pinned pytest and numpy (PyPI);
# 3. runs pytest on python/tests from BUILD_DIR with that venv: `import steno` is the installed
#    package with its bundled libsteno.so.3 (PYTHONPATH and STENO_LIBRARY are unset).
# Needs the tiny.en Whisper model (scripts/fetch_model.sh), SmolLM2 (scripts/fetch_llm_models.sh)
# and ../shared (audio clips, stories260K); a missing one fails its tests.
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 BUILD_DIR [PYTEST_ARGS...]" >&2
    exit 2
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$1"
BUILD="$(cd "$1" && pwd)"
shift
PY="${PYTHON:-python3}"
JOBS="${JOBS:-2}"
PYTEST_PIN="pytest==8.3.5"
NUMPY_PIN="numpy==2.2.6"

start=$(date +%s)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD" --target steno -j "$JOBS" >/dev/null
WHEEL="$(PYTHON="$PY" JOBS="$JOBS" "$ROOT/scripts/build_wheel.sh" "$BUILD" "$BUILD/dist" | tail -n 1)"
echo "wheel: $WHEEL"

VENV="$BUILD/py-venv"
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$PYTEST_PIN" "$NUMPY_PIN" ray==2.60.0 "$WHEEL"
built=$(date +%s)

cd "$BUILD"
set +e
env -u PYTHONPATH -u STENO_LIBRARY \
    STENO_BUILD_DIR="$BUILD" STENO_SOURCE="$ROOT" STENO_SHARED="${STENO_SHARED:-$ROOT/../shared}" \
    "$VENV/bin/pytest" -p no:cacheprovider -q --durations=10 "$ROOT/python/tests" "$@"
rc=$?
set -e
end=$(date +%s)
echo "test_python.sh: build+venv $((built - start)) s, pytest $((end - built)) s, exit $rc"
exit $rc
