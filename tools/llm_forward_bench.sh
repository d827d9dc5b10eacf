#!/bin/bash
# llm_forward_bench.sh — before/after timing of two steno binaries on the LLM forward (issue #13,
# the git history of docs/PERFORMANCE.md: "LLM forward outside the matmuls"). Interleaves the binaries; per model
# (smollm2, gemma3), thread count (1, 2) and binary it runs three generations:
#   prompt  -f PROMPT -n 1 -b 512           prompt tok/s (wall) and CPU seconds
#   short   -p "Once upon a time" -n 1      load + 4 tokens: subtracted from the others' CPU seconds
#   decode  -p "Once upon a time" -n 256    decode tok/s (wall) and CPU seconds
# Output rows: rep model threads binary kind tok/s user_s sys_s load1.
# Usage: tools/llm_forward_bench.sh OUT BEFORE_BIN AFTER_BIN PROMPT_FILE [REPS]
# Everything runs under nice -n 10 (a shared machine); summarize with medians.
set -eu
out=$1; base=$2; new=$3; P=$4; reps=${5:-3}
: > "$out"
run() { # kind bin model threads args...
  local kind=$1 b=$2 m=$3 t=$4; shift 4
  local o tps
  o=$( { /usr/bin/time -f "TIME %U %S" nice -n 10 "$b" generate -m "$m" -t "$t" --temp 0 "$@" >/dev/null; } 2>&1 )
  if [ "$kind" = decode ]; then tps=$(echo "$o" | grep -o "decode: [0-9]* tokens in [0-9.]* s ([0-9.]*" | sed 's/.*(//')
  else tps=$(echo "$o" | grep -o "prompt: [0-9]* tokens in [0-9.]* s ([0-9.]*" | sed 's/.*(//'); fi
  echo "$r $m $t $b $kind $tps $(echo "$o" | grep TIME | cut -d' ' -f2,3) $(cut -d' ' -f1 /proc/loadavg)" >> "$out"
}
for r in $(seq "$reps"); do
  for m in smollm2 gemma3; do
    for t in 1 2; do
      for b in "$base" "$new"; do
        run prompt "$b" "$m" "$t" -f "$P" -n 1 -b 512
        run short "$b" "$m" "$t" -p "Once upon a time" -n 1
        run decode "$b" "$m" "$t" -p "Once upon a time" -n 256
      done
    done
  done
done
