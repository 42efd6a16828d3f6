#!/usr/bin/env bash
# Runs the GPU tests (tests/test_gpu_*: planted wrong, faulting, hanging and cheating kernels, tuning and the
# worker on a real GPU) from a build carried to the lent machine, outside ctest (the build tree's paths do not
# exist there). usage: bench/gpu_tests.sh BINDIR OUTLOG   BINDIR holds cutune, cutune-worker and tests/ (the
# test_gpu_* executables and libfake_nvml.so), e.g. .new after `cp build/cutune* .new/ && cp build/tests/test_gpu*
# build/tests/libfake_nvml.so .new/tests/`; the shared libraries the lent machine lacks go in .dev/lib (cJSON,
# XGBoost, libgomp, and libcmocka.so.0 for the test executables). Exit status: the number of failed tests.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
BIN=$(cd "$1" && pwd)
LOG=$2
export CUTUNE_BIN=$BIN/cutune CUTUNE_WORKER=$BIN/cutune-worker CUTUNE_FIXTURES=$PWD/tests/fixtures
export CUTUNE_FAKE_NVML=$BIN/tests/libfake_nvml.so CUTUNE_WORKLOADS=$PWD/workloads
fails=0
: > "$LOG"
for t in "$BIN"/tests/test_gpu*; do
  name=$(basename "$t")
  export CUTUNE_TEST_TMP=/tmp/gpu_tests/$name
  rm -rf "$CUTUNE_TEST_TMP" && mkdir -p "$CUTUNE_TEST_TMP"
  t0=$(date +%s)
  "$t" >> "$LOG" 2>&1
  rc=$?
  verdict=passed; [ $rc = 77 ] && verdict=skipped; [ $rc != 0 ] && [ $rc != 77 ] && { verdict="FAILED ($rc)"; fails=$((fails + 1)); }
  echo "== $name: $verdict in $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
done
exit $fails
