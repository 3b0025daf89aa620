#!/usr/bin/env bash
# scripts/test.sh: the second command of the README, and what CI runs. Installs what is missing,
# builds with warnings as errors, runs the whole cmocka suite (ctest), the runners' Python tests and
# the perfpred Python package's tests,
# then builds again under AddressSanitizer + UndefinedBehaviorSanitizer and runs the suite again,
# runs the concurrent-prediction tests under ThreadSanitizer (build-tsan/), and finally runs each
# libFuzzer harness of tests/fuzz for a short smoke time (PP_FUZZ_SMOKE_SECONDS, default 3: the
# whole script stays under 10 minutes on 2 cores; one harness per core) where clang is present
# (build-fuzz/). The sanitizer build runs at -O1, as ASan's documentation advises.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs="$(nproc)"

echo "== build (warnings are errors)"
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERFPRED_WERROR=ON >/dev/null
cmake --build build-test -j"$jobs"
echo "== cmocka suite"
(cd build-test && ctest --output-on-failure -j"$jobs")

echo "== runners (Python unittest)"
if [ -d tests/runners ]; then
  /usr/bin/python3 -m unittest discover -s tests/runners
fi

echo "== the Python package (unittest, against build-test's library)"
PERFPRED_LIB="$PWD/build-test/libperfpred.so" PERFPRED_CLI="$PWD/build-test/perfpred" \
  PYTHONPATH="$PWD/python" /usr/bin/python3 -m unittest discover -s tests/python

echo "== build under ASan + UBSan"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DPERFPRED_WERROR=ON -DPERFPRED_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
echo "== cmocka suite under ASan + UBSan"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs")

echo "== concurrent predictions under ThreadSanitizer"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERFPRED_WERROR=ON -DPERFPRED_TSAN=ON \
  >/dev/null
cmake --build build-tsan -j"$jobs" --target test_predictor
# XGBoost's OpenMP threads and OpenBLAS's are not built for TSan (it cannot see their barriers):
# one thread each, so that the threads TSan watches are the test's own and perfpred's locks.
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1 build-tsan/test_predictor

echo "== fuzz smoke (libFuzzer, ${PP_FUZZ_SMOKE_SECONDS:-3} s per harness)"
if command -v clang-14 >/dev/null 2>&1 || command -v clang >/dev/null 2>&1; then
  PP_FUZZ_JOBS="$jobs" bash scripts/fuzz.sh "${PP_FUZZ_SMOKE_SECONDS:-3}"
else
  echo "clang not found: fuzz smoke skipped"
fi
