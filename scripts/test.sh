#!/usr/bin/env bash
# test.sh — the project's test suite: a Release build with ctest (unit tests, CLI tests, the
# server tests of tests/server driven by the official openai client, selenium + Chromium and
# HAProxy, the installed library), the Python package's tests on its wheel, then an
# AddressSanitizer + UndefinedBehaviorSanitizer build (leak checks on) with ctest, then the
# libFuzzer targets (corpus replay + fixed-seed bounded runs). Exits non-zero if any fails.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install_deps.sh
bash scripts/fetch_model.sh tiny.en
bash scripts/fetch_model.sh base   # multilingual: tests/py/test_multilingual.py
bash scripts/fetch_llm_models.sh
bash scripts/fetch_vad.sh   # Silero VAD: tests/py/test_vad.py
bash scripts/fetch_chat_templates.sh   # llama.cpp's chat templates: tests/py/test_chat_templates.py
server_python=$(bash scripts/server_venv.sh)   # openai, selenium, prometheus-client (pinned, PyPI)
jobs=$(nproc)

status=0
echo "== Release build (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSTENO_SERVER_PYTHON="$server_python"
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j1 || status=1

echo "== Python package: the wheel in a fresh venv, pytest (python/tests, scripts/test_python.sh)"
bash scripts/test_python.sh build || status=1

echo "== ASan+UBSan build (build-asan/)"
cmake -S . -B build-asan -DSTENO_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTENO_SERVER_PYTHON="$server_python"
cmake --build build-asan -j"$jobs"
# The server runs sanitized under its soak (smaller count), bad-request and lifecycle tests; the
# client-side comparisons (openai client, browser, HAProxy, concurrency) exercise the same server
# code and run in the Release build only, to keep CI within its time budget; so does the prompt
# cache's HTTP test (107 s sanitized), whose C code — trie, snapshots, files — test_prompt_cache
# and test_kv_snapshot run sanitized; install_tree (80 s sanitized: the installed library and its
# pkg-config/CMake files are the same in both builds); and py_test_memory_flat, which measures peak
# RSS (ASan's shadow memory is not the program's; test_audio_stream checks the same code sanitized).
# server_test_whisper_xbatch (about 100 CPU s sanitized) too: its batcher runs sanitized in
# test_whisper_xbatch (joins, leaves, a blocked member, q8_0) and under the soak's concurrent
# transcriptions on --parallel 2 (the batcher is on by default). Three more keep CI within 45
# minutes on 2 cores (sanitized times): py_test_option_table (161 s: thousands of
# `steno VERB --opt VALUE --help` parses; the same table-driven parser runs sanitized under
# py_test_options and py_test_cli_bad_input), py_test_stream (121 s: the
# stream engine runs sanitized under server_test_stream_ws and test_audio_stream) and
# py_test_beam (71 s: beam search runs sanitized under py_test_batched, whose windows decode with
# 5 beams, and test_fast_rows). server_test_llm_models serves Qwen2.5-Coder-0.5B (the qwen2 forward
# runs sanitized in test_llm_parity and test_llm_arch; its HTTP path is SmolLM2's, sanitized in the
# soak).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j1 \
  -E '^(server_test_(openai_api|web_page|haproxy|concurrency|prompt_cache|whisper_xbatch|llm_models)|install_tree|py_test_(memory_flat|option_table|stream|beam))$' || status=1

echo "== libFuzzer targets: corpus replay + fixed-seed bounded runs (build-fuzz/)"
bash scripts/fuzz_smoke.sh || status=1

if [ $status -ne 0 ]; then echo "test.sh: FAILED" >&2; else echo "test.sh: all passed"; fi
exit $status
