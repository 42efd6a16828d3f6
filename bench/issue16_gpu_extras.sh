#!/usr/bin/env bash
# Issue 16's rough edges on the GPU, beside bench/lookup_gpu.sh: --time-budget within a batch (a 400-trial run cut
# at 5 s: its wall time and the trials it kept), and resume refusing a log of another backend (an emulator log,
# then the same shape on the GPU into the same folder: refused, the log unchanged).
# usage: bench/issue16_gpu_extras.sh BINDIR OUTFILE
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
BIN=$(cd "$1" && pwd)
OUT=$2
export CUTUNE_WORKER=$BIN/cutune-worker CUTUNE_WORKLOADS=$PWD/workloads
W=/tmp/issue16_extras
rm -rf "$W" && mkdir -p "$W"
{
  echo "== time budget: tune --conv 1,34,34,512,256,3,3,1,1 --trials 400 --time-budget 5"
  t0=$(date +%s.%N)
  "$BIN/cutune" tune --conv 1,34,34,512,256,3,3,1,1 --trials 400 --time-budget 5 --quiet --outdir "$W/tb" 2>&1 | tail -2
  t1=$(date +%s.%N)
  echo "wall_s $(python3 -c "print(round($t1 - $t0, 2))")"
  echo "records $(cat "$W"/tb/tuningrecords/case*_conv2d_*.json | wc -l)"
  echo "== resume of an emulator log on the GPU"
  "$BIN/cutune" tune --backend emu --conv 1,6,6,8,4,3,3,1,1 --trials 8 --quiet --outdir "$W/rr" > /dev/null 2>&1
  before=$(md5sum "$W"/rr/tuningrecords/case*.json)
  "$BIN/cutune" tune --conv 1,6,6,8,4,3,3,1,1 --trials 16 --quiet --outdir "$W/rr" 2>&1 | tail -2
  echo "exit ${PIPESTATUS[0]}"
  [ "$before" = "$(md5sum "$W"/rr/tuningrecords/case*.json)" ] && echo "log unchanged" || echo "LOG CHANGED"
} > "$OUT" 2>&1
cat "$OUT"
