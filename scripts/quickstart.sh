#!/usr/bin/env bash
# Sets up cutune and runs its main job. With a GPU: seed 001 in test mode (first and last case, 100 trials, top 2).
# Without one: the same pipeline on the host emulator with tiny shapes, saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUTUNE_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
BIN=build/cutune
echo "== cutune devices"
if $BIN devices; then
  echo "== tuning seed 001 in test mode on the GPU (records in ./tuningrecords)"
  $BIN tune --workloads seed001 --test
else
  echo
  echo "No GPU was found, so nothing can be timed on a GPU here. Running the whole pipeline on the host emulator:"
  echo "it tunes three tiny Conv2D shapes, checks every generated kernel against a CPU reference, and records CPU times."
  $BIN tune --backend emu --workloads tiny --trials 40 --outdir .
fi
$BIN report
echo "== done: tuningrecords/ (raw logs), tuningresults/ (representatives), performance/ (GFLOP/s per line)"
