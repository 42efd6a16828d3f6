#!/usr/bin/env bash
# Sets up cutune and runs its main job in a folder of its own (quickstart/, or $CUTUNE_QUICKSTART_DIR): with a GPU,
# seed 001 in test mode (first and last case, 100 trials, top 2); without one, the same pipeline on the host emulator
# with tiny shapes, saying so. It stays out of the repository root, whose kernels/ is the optimizer's suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUTUNE_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
BIN=$PWD/build/cutune
OUT=${CUTUNE_QUICKSTART_DIR:-quickstart}
mkdir -p "$OUT"
echo "== cutune devices"
if $BIN devices; then
  echo "== tuning seed 001 in test mode on the GPU (records in $OUT/tuningrecords)"
  $BIN tune --workloads seed001 --test --outdir "$OUT"
else
  echo
  echo "No GPU was found, so nothing can be timed on a GPU here. Running the whole pipeline on the host emulator:"
  echo "it tunes three tiny Conv2D shapes, checks every generated kernel against a CPU reference, and records CPU times."
  $BIN tune --backend emu --workloads tiny --trials 40 --outdir "$OUT"
fi
$BIN report --outdir "$OUT"
echo "== done, in $OUT/: tuningrecords/ (raw logs), tuningresults/ (representatives), performance/ (GFLOP/s per line)"
