#!/usr/bin/env bash
# Builds cutune and runs every test twice: a strict release build (-Werror) and an ASan+UBSan build; then runs
# the fuzz targets of every parser for a few seconds each.
# This is the test command README.md gives; .ci/run runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# The layout first: no include cycle between src/ folders, no .c file over 1,000 lines (scripts/check-layout.py).
python3 scripts/check-layout.py
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUTUNE_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCUTUNE_SANITIZE=ON -DCUTUNE_WERROR=ON >/dev/null
cmake --build build-asan -j"$jobs"
# The sanitizer pass runs the random-schedule tests on fewer cases (CUTUNE_TEST_QUICK); the release pass runs all.
(cd build-asan && CUTUNE_TEST_QUICK=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j"$jobs")
# Every parser under libFuzzer (clang, ASan+UBSan), briefly, starting from the committed corpora and reproducers.
FUZZ_SECONDS=${FUZZ_SECONDS:-10} bash scripts/fuzz.sh
