#!/usr/bin/env bash
# test.sh — the project's test suite: a Release build with ctest, then an AddressSanitizer +
# UndefinedBehaviorSanitizer build (leak checks on) with ctest, then a bounded libFuzzer run of
# the GGUF reader. Exits non-zero if any fails.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install_deps.sh
bash scripts/fetch_model.sh tiny.en
bash scripts/fetch_model.sh base   # multilingual: tests/py/test_multilingual.py
bash scripts/fetch_llm_models.sh
jobs=$(nproc)

status=0
echo "== Release build (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j1 || status=1

echo "== ASan+UBSan build (build-asan/)"
cmake -S . -B build-asan -DSTENO_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j1 || status=1

echo "== libFuzzer targets: corpus replay + fixed-seed bounded runs (build-fuzz/)"
bash scripts/fuzz_smoke.sh || status=1

if [ $status -ne 0 ]; then echo "test.sh: FAILED" >&2; else echo "test.sh: all passed"; fi
exit $status
