#!/usr/bin/env bash
# fuzz_smoke.sh [SECONDS] — builds the libFuzzer target fuzz/fuzz_gguf.c (GGUF reader + LLM loader,
# clang -fsanitize=fuzzer,address,undefined) and runs it for a bounded time (default 60 s) from
# two valid seed models it writes itself. Exits non-zero when the fuzzer finds a crash, a leak or
# undefined behaviour (the reproducer is left in the work directory and named in the output).
#   STENO_FUZZ_DIR  work directory (default /tmp/steno-fuzz-gguf): binary, corpus, crash files
#   CC              a clang with libFuzzer (default: clang)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
work=${STENO_FUZZ_DIR:-/tmp/steno-fuzz-gguf}
cc=${CC:-clang}
mkdir -p "$work/corpus"

if ! command -v "$cc" >/dev/null; then
  echo "fuzz_smoke: $cc not found (scripts/install_deps.sh installs clang)" >&2
  exit 1
fi

# The LLM side of the library: formats, kernels, models, tokenizers (everything steno_llm_load uses).
srcs=(
  src/formats/gguf.c src/formats/llama2c.c
  src/kernels/quant.c src/kernels/quant_avx2.c src/kernels/matmul.c src/kernels/matmul_f32.c src/kernels/attention.c
  src/kernels/ops.c
  src/kernels/ggml_simd.c src/kernels/attention_q.c src/kernels/kvquant.c src/llm/*.c
  src/text/llm_vocab.c src/text/spm.c src/text/bpe_gguf.c src/text/bigram_heap.c src/text/chat_template.c
  src/core/error.c src/core/threadpool.c
)
echo "fuzz_smoke: building $work/fuzz_gguf"
"$cc" -std=c17 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iinclude -Isrc $(pkg-config --cflags openblas) fuzz/fuzz_gguf.c "${srcs[@]}" \
  -lpcre2-8 $(pkg-config --libs openblas) -lm -lpthread -o "$work/fuzz_gguf"

FUZZ_GGUF_SEED_DIR="$work/corpus" "$work/fuzz_gguf" -runs=0 "$work/corpus" >/dev/null 2>&1 || true
echo "fuzz_smoke: fuzzing for ${seconds}s (corpus $work/corpus)"
cd "$work"
status=0
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ./fuzz_gguf corpus -max_len=65536 -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
  -print_final_stats=1 > fuzz.log 2>&1 || status=$?
tail -n 25 fuzz.log
if [ "$status" -ne 0 ]; then
  echo "fuzz_smoke: FAILED (exit $status); reproducers: $(ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* 2>/dev/null | tr '\n' ' ')" >&2
  exit 1
fi
echo "fuzz_smoke: no crash in ${seconds}s"
