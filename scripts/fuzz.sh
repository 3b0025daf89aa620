#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [HARNESS...]: builds the libFuzzer harnesses of tests/fuzz (Debian's
# clang, ASan + UBSan, in build-fuzz/ so the normal build is untouched) and runs each for SECONDS
# (default 60), PP_FUZZ_JOBS at a time (default 1). Each starts from its committed seeds
# (tests/fuzz/corpus/<name>) and grows a working corpus in build-fuzz/corpus/<name>; a crash is
# left as build-fuzz/artifacts/<name>/crash-* and the script exits 1. To keep a fixed crash fixed,
# copy its input to tests/fuzz/regressions/<name>/: tests/test_fuzz_replay.c replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
shift || true
cc="$(command -v clang-14 || command -v clang || true)"
if [ -z "$cc" ]; then
  echo "fuzz.sh: clang not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 2
fi
# -O1 with line tables, as libFuzzer's documentation builds its targets: a fifth less compile
# time than -O2 -g (the smoke in scripts/test.sh builds it on every run), and lines in a stack trace
CC="$cc" cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DPERFPRED_FUZZ=ON \
  -DPERFPRED_TESTS=OFF >/dev/null
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  harnesses=(onnx yaml layer_csv net_csv gnn_weights gnn_manifest overhead lm_set lm_cache deepbench
             mobile neusight gpu_artifacts power_sweep intervals)
fi
targets=()
for h in "${harnesses[@]}"; do targets+=(--target "fuzz_$h"); done
cmake --build build-fuzz -j"${PP_FUZZ_JOBS:-2}" "${targets[@]}"
# one harness: its run, then the summary lines and what it found, into build-fuzz/fuzz_<h>.out
fuzz_one() {
  local h="$1" out="build-fuzz/fuzz_$1.out"
  mkdir -p "build-fuzz/corpus/$h" "build-fuzz/artifacts/$h"
  touch "build-fuzz/artifacts/$h/.start"
  # detect_leaks on: a leak is a finding like a crash; -timeout: an input slower than 10 s is one too
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    "build-fuzz/fuzz_$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$h/" \
    "build-fuzz/corpus/$h" "tests/fuzz/corpus/$h" >"build-fuzz/fuzz_$h.log" 2>&1 || true
  { echo "== fuzz_$h: ${secs} s"
    grep -aE "^(#[0-9]+[[:space:]]+DONE|stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)|==[0-9]+==ERROR|SUMMARY)" \
      "build-fuzz/fuzz_$h.log" || true; } >"$out"
  # what this run found (earlier runs' findings stay beside it, not counted again)
  find "build-fuzz/artifacts/$h" -type f -newer "build-fuzz/artifacts/$h/.start" \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) |
    tr '\n' ' ' >"build-fuzz/fuzz_$h.found"
}
# PP_FUZZ_JOBS harnesses at a time (default 1: one core), each summary printed in the list's order
par="${PP_FUZZ_JOBS:-1}"
status=0
for ((i = 0; i < ${#harnesses[@]}; i += par)); do
  group=("${harnesses[@]:i:par}")
  for h in "${group[@]}"; do fuzz_one "$h" & done
  wait
  for h in "${group[@]}"; do
    cat "build-fuzz/fuzz_$h.out"
    found="$(cat "build-fuzz/fuzz_$h.found")"
    if [ -n "$found" ]; then
      echo "fuzz_$h: FOUND $found(log: build-fuzz/fuzz_$h.log)" >&2
      status=1
    fi
  done
done
exit $status
