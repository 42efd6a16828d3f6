#!/usr/bin/env bash
# The planted kernels (tests/plants/, issue 15) in the GPU worker: every plant, emulator-only or not, checked by
# `tune --kernel --backend cuda` against its honest reference; the log of tests/it_plants.sh goes to OUTLOG.
# usage: bench/plants_gpu.sh CUTUNE OUTLOG     (CUTUNE: a cutune binary built here and carried, e.g. .p15/cutune)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
bash tests/it_plants.sh "$BIN" /tmp/plants_gpu cuda > "$2" 2>&1
rc=$?
cat "$2"
exit $rc
