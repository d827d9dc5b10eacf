#!/usr/bin/env bash
# fuzz.sh TARGET [MINUTES] — runs one fuzz target (audio, ct2, config, tokenizer, gguf, llama2c:
# fuzz/fuzz_TARGET.c) for MINUTES (default 10) by hand, from its seeds (scripts/fuzz_seeds.py, the
# target's own FUZZ_*_SEED_DIR seeds) and fuzz/corpus/fuzz_TARGET/. The growing corpus and any
# crash-*/leak-*/timeout-* reproducer stay in $STENO_FUZZ_DIR/TARGET (default /tmp/steno-fuzz);
# a reproducer, minimized (-minimize_crash=1), belongs in fuzz/corpus/fuzz_TARGET/ with a test.
#   BUILD  the build folder (default build-fuzz; configured with CC=clang -DSTENO_FUZZ=ON)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh TARGET [MINUTES]}
minutes=${2:-10}
build=${BUILD:-build-fuzz}
work=${STENO_FUZZ_DIR:-/tmp/steno-fuzz}/$target
name=fuzz_$target
[ -f "fuzz/$name.c" ] || { echo "fuzz.sh: no fuzz/$name.c" >&2; exit 2; }
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=${CC:-clang} cmake -S . -B "$build" -DSTENO_FUZZ=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j2 --target "$name" >/dev/null
mkdir -p "$work/corpus"
python3 scripts/fuzz_seeds.py "$work/seeds" >/dev/null
seed_env=FUZZ_$(echo "$target" | tr a-z A-Z)_SEED_DIR
env "$seed_env=$work/corpus" "$build/fuzz/$name" -runs=0 "$work/corpus" >/dev/null 2>&1 || true
dirs=("$work/corpus")
[ -d "$work/seeds/$name" ] && dirs+=("$work/seeds/$name")
[ -d "$PWD/fuzz/corpus/$name" ] && dirs+=("$PWD/fuzz/corpus/$name")
bin=$PWD/$build/fuzz/$name
cd "$work"
rm -f crash-* leak-* timeout-* oom-*
# new inputs go to the first folder ($work/corpus); the others are only read
ASAN_OPTIONS=detect_leaks=1 "$bin" "${dirs[@]}" -max_len=65536 -timeout=20 -rss_limit_mb=2048 \
  -max_total_time=$((minutes * 60)) -print_final_stats=1 > "$work/fuzz.log" 2>&1 || true
grep -E "^#[0-9]+ +DONE|ERROR|SUMMARY|stat::number_of_executed_units|stat::average_exec_per_sec" "$work/fuzz.log" || true
found=$(ls -d crash-* leak-* timeout-* oom-* 2>/dev/null || true) # ls fails when any glob is unmatched
if [ -n "$found" ]; then
  echo "fuzz.sh: $target: reproducers in $work: $(echo $found)" >&2
  exit 1
fi
echo "fuzz.sh: $target: no crash in $minutes min (log $work/fuzz.log)"
