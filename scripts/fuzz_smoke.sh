#!/usr/bin/env bash
# fuzz_smoke.sh [RUNS] — the CI part of fuzzing, deterministic: builds every libFuzzer target
# (fuzz/fuzz_*.c) through CMake (-DSTENO_FUZZ=ON, clang, ASan+UBSan) in $BUILD (default
# build-fuzz), then for each target (1) replays its seeds (scripts/fuzz_seeds.py, the target's own
# FUZZ_*_SEED_DIR models) and its committed reproducers (fuzz/corpus/<target>/), and (2) runs a
# fixed-seed, bounded fuzzing run (-seed=1 -runs=RUNS, default 50000; new inputs go to a temporary
# copy of the seeds only, so every CI run executes the same inputs). Exits non-zero on any crash, leak, UB report, invariant
# failure (abort) or timeout. Long runs by hand: scripts/fuzz.sh TARGET MINUTES.
#   CC  a clang with libFuzzer (default: clang)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50000}
build=${BUILD:-build-fuzz}
cc=${CC:-clang}
work=$(mktemp -d /tmp/steno-fuzz-smoke.XXXXXX)
trap 'rm -rf "$work"' EXIT
command -v "$cc" >/dev/null || { echo "fuzz_smoke: $cc not found (scripts/install_deps.sh installs clang)" >&2; exit 1; }

CC=$cc cmake -S . -B "$build" -DSTENO_FUZZ=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=()
for f in fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
echo "fuzz_smoke: building ${targets[*]}"
cmake --build "$build" -j2 --target "${targets[@]}" >/dev/null
python3 scripts/fuzz_seeds.py "$work/seeds"

status=0
for t in "${targets[@]}"; do
  bin=$PWD/$build/fuzz/$t
  seeds=$work/seeds/$t
  mkdir -p "$seeds"
  env "FUZZ_$(echo "${t#fuzz_}" | tr a-z A-Z)_SEED_DIR=$seeds" "$bin" -runs=0 "$seeds" >/dev/null 2>&1 || true
  dirs=("$seeds")
  [ -d "fuzz/corpus/$t" ] && dirs+=("$PWD/fuzz/corpus/$t")
  log=$work/$t.log
  start=$SECONDS
  # replay: every file once (libFuzzer runs each input given as a file argument)
  files=$(find "${dirs[@]}" -type f | sort)
  # shellcheck disable=SC2086
  if ! (cd "$work" && ASAN_OPTIONS=detect_leaks=1 "$bin" -timeout=20 -rss_limit_mb=2048 $files > "$log.replay" 2>&1); then
    echo "fuzz_smoke: $t: replay FAILED"; tail -n 30 "$log.replay"; status=1; continue
  fi
  # bounded, fixed-seed run; -reload=0 and no output corpus keep it deterministic. The prompt
  # cache's target writes, hashes and reads a directory per input (~250 runs/s): an eighth
  r=$runs
  [ "$t" = fuzz_prompt_cache ] && r=$((runs / 8))
  if ! (cd "$work" && ASAN_OPTIONS=detect_leaks=1 "$bin" "${dirs[@]}" -seed=1 -runs="$r" -reload=0 \
        -max_len=65536 -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 > "$log" 2>&1); then
    echo "fuzz_smoke: $t: FAILED"; tail -n 30 "$log"; status=1; continue
  fi
  n=$(echo "$files" | wc -l)
  echo "fuzz_smoke: $t: $n corpus files replayed, $(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$') runs (seed 1), $((SECONDS - start)) s"
done
[ "$status" -eq 0 ] && echo "fuzz_smoke: all targets passed"
exit "$status"
