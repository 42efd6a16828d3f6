#!/usr/bin/env bash
# The one core (issue 14) against the binary before it, side by side on one GPU in one device call per part:
#   conv    seed 001's 7 cases: `tune --trials T --seed 1 --final 0` then `baseline` (the 3 best kernels and cuDNN's
#           fastest fp32 algorithm re-timed in one worker), old then new binary per case, interleaved;
#   gemm    4096^3 NN fp16 (mma + wgmma templates) and fp32 (SIMT): `tune --gemm` with each binary (same trials,
#           seed and time budget), the best vendor kernel once (`baseline --gemm`, cuBLAS + cuBLASLt);
#   mcgs    `optimize` over kernels/ with rules only, seeds 1 and 2, each binary;
#   export  the new binary only: a GEMM tuned, exported and built with cmake + nvcc alone, its driver run; a kernel
#           optimized, its best variant exported (`export --optimized`) and built and run the same way; `energy` of
#           the GEMM's representatives at the current power cap.
# Every part writes PART.json (numbers + the commands) and its logs under OUTDIR. bench/core_merge.py joins the parts
# into bench/results/core_h200.json.
# usage: bench/core_h200.sh PART OUTDIR     Env: OLD_BIN (.old/cutune, the previous commit's CLI), NEW_BIN
# (build/cutune), CORE_CONV_TRIALS (200), CORE_GEMM_TRIALS (96), CORE_GEMM_BUDGET (45), CORE_MCGS_BUDGET (20).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
blas=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))' \
       2>/dev/null || true)
[ -n "$blas" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$blas"
# Both binaries read the workload lists of this checkout (each has its own build tree's path compiled in).
export CUTUNE_WORKLOADS=$PWD/workloads
PART=$1
OUTDIR=$(mkdir -p "$2" && cd "$2" && pwd)
ROOT=$PWD
OLD=$(cd "$(dirname "${OLD_BIN:-.old/cutune}")" && pwd)/$(basename "${OLD_BIN:-.old/cutune}")
NEW=$(cd "$(dirname "${NEW_BIN:-build/cutune}")" && pwd)/$(basename "${NEW_BIN:-build/cutune}")
T_CONV=${CORE_CONV_TRIALS:-200}
T_GEMM=${CORE_GEMM_TRIALS:-96}
B_GEMM=${CORE_GEMM_BUDGET:-45}
B_MCGS=${CORE_MCGS_BUDGET:-20}
WORK=/tmp/core_work
mkdir -p "$WORK"
"$NEW" devices --json > "$OUTDIR/devices.json"
: > "$OUTDIR/$PART.jsonl"

# timed LABEL BIN-NAME COMMAND...: runs it with its output in OUTDIR/PART.log, and one JSON line of its wall time
timed() {
  local label=$1 who=$2; shift 2
  local t0; t0=$(date +%s%N)
  local rc=0
  "$@" >> "$OUTDIR/$PART.log" 2>&1 || rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '{"what":"%s","bin":"%s","rc":%d,"wall_s":%d.%03d,"command":"%s"}\n' "$label" "$who" "$rc" \
    $((ms / 1000)) $((ms % 1000)) "$(echo "$*" | sed "s#$ROOT/##g; s#$WORK/##g")" >> "$OUTDIR/$PART.jsonl"
}

case "$PART" in
conv)
  for i in 1 2 3 4 5 6 7; do
    for who in old new; do
      bin=$OLD; [ $who = new ] && bin=$NEW
      timed "tune case $i" $who "$bin" tune --workloads seed001 --case "$i" --trials "$T_CONV" --seed 1 --final 0 \
        --no-sample --quiet --outdir "$WORK/conv_$who"
    done
    for who in old new; do
      bin=$OLD; [ $who = new ] && bin=$NEW
      timed "baseline case $i" $who "$bin" baseline --workloads seed001 --case "$i" --outdir "$WORK/conv_$who" \
        --json "$WORK/conv_$who/final_case$i.jsonl"
    done
  done
  for who in old new; do cat "$WORK"/conv_$who/final_case*.jsonl > "$OUTDIR/conv_final_$who.jsonl" || true; done
  for who in old new; do (cd "$WORK/conv_$who" && tar czf "$OUTDIR/conv_records_$who.tgz" tuningrecords) || true; done
  ;;
gemm)
  for dt in fp16 fp32; do
    tpl=mma,wgmma; [ $dt = fp32 ] && tpl=simt
    for who in old new; do
      bin=$OLD; [ $who = new ] && bin=$NEW
      timed "tune gemm $dt" $who "$bin" tune --gemm M=4096 N=4096 K=4096 t="$T_GEMM" --dtype $dt --layout nn \
        --tpl $tpl --seed 1 --time-budget "$B_GEMM" --quiet --outdir "$WORK/gemm_$who"
    done
    timed "vendor gemm $dt" new "$NEW" baseline --gemm M=4096 N=4096 K=4096 --dtype $dt --layout nn --budget 15 \
      --outdir "$WORK/gemm_new"
    cp "$WORK/gemm_new/tuningresults/vendor_gemm_nn_${dt}_M_4096_N_4096_K_4096.json" "$OUTDIR/vendor_$dt.json" || true
    for who in old new; do
      cp "$WORK/gemm_$who/tuningrecords/gemm_nn_${dt}_M_4096_N_4096_K_4096.json" "$OUTDIR/gemm_${dt}_$who.json" || true
    done
  done
  ;;
mcgs)
  for seed in 1 2; do
    for who in old new; do
      bin=$OLD; [ $who = new ] && bin=$NEW
      rm -rf "$WORK/mcgs_${who}_$seed"
      COMPILE_CACHE_DIR=$WORK/cc_${who}_$seed timed "optimize seed $seed" $who "$bin" optimize --input kernels \
        --outdir "$WORK/mcgs_${who}_$seed" --gpus 0 --budget-builds "$B_MCGS" --no-llm --seed $seed
      cp "$WORK/mcgs_${who}_$seed/summary.json" "$OUTDIR/mcgs_${who}_$seed.json" || true
    done
  done
  ;;
export)
  E=$WORK/export
  rm -rf "$E"; mkdir -p "$E"
  timed "tune gemm fp16" new "$NEW" tune --gemm M=4096 N=4096 K=4096 t=32 --dtype fp16 --tpl wgmma --seed 1 \
    --time-budget 25 --quiet --outdir "$E"
  timed "tune gemm fp32" new "$NEW" tune --gemm M=1024 N=2048 K=3072 t=32 --dtype fp32 --seed 1 --time-budget 15 \
    --quiet --outdir "$E"
  timed "export" new "$NEW" export --outdir "$E"
  timed "cmake configure" new cmake -S "$E/kernels" -B "$E/build" -DCMAKE_BUILD_TYPE=Release
  timed "cmake build" new cmake --build "$E/build" -j 16
  timed "gemm_driver" new "$E/build/gemm/gemm_driver" --iters 20 --min-ms 100
  timed "energy gemm" new "$NEW" energy --outdir "$E" --power-caps current --test
  cp -r "$E/kernel_outputs" "$OUTDIR/" 2>/dev/null || true
  # an optimized kernel's best variant, exported and built the same way
  O=$WORK/opt
  rm -rf "$O"
  COMPILE_CACHE_DIR=$WORK/cc_export timed "optimize softmax_row" new "$NEW" optimize --input kernels/softmax_row.json \
    --outdir "$O" --gpus 0 --budget-builds 10 --no-llm --seed 1
  timed "export --optimized" new "$NEW" export --optimized "$O" --outdir "$O/exp"
  for d in "$O"/exp/kernels/opt/*/; do
    n=$(basename "$d")
    timed "cmake configure opt $n" new cmake -S "$d" -B "$O/build_$n" -DCMAKE_BUILD_TYPE=Release
    timed "cmake build opt $n" new cmake --build "$O/build_$n" -j 16
    timed "driver opt $n" new "$O/build_$n/driver" --iters 20 --min-ms 100
  done
  timed "energy optimized" new "$NEW" energy --optimized "$O" --outdir "$O" --power-caps current --test
  cp "$E"/build/gemm/*.log "$OUTDIR/" 2>/dev/null || true
  cp -r "$O/kernel_outputs" "$OUTDIR/opt_kernel_outputs" 2>/dev/null || true
  ;;
*)
  echo "unknown part '$PART' (conv, gemm, mcgs or export)" >&2
  exit 2
  ;;
esac
echo "part $PART done"
