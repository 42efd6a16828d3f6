#!/usr/bin/env bash
# Issue 15 on a GPU, in one device call: the planted kernels in the GPU worker (bench/plants_gpu.sh), the GPU tests
# of the new binary, and what the one protocol costs in tuning speed: seed 001's case 2 (64 trials) and a 4096^3
# fp16 GEMM (16 trials), the previous binary (OLD) and the new one (NEW) back to back on the same GPU.
# usage: bench/trust_gpu.sh OLD_DIR NEW_DIR OUTDIR    (each DIR holds cutune, cutune-worker and tests/, as .new)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
export CUTUNE_WORKLOADS=$PWD/workloads
OLD=$(cd "$1" && pwd); NEW=$(cd "$2" && pwd); OUTDIR=$(mkdir -p "$3" && cd "$3" && pwd)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.sm --format=csv > "$OUTDIR/smi.csv"
if [ -z "${TRUST_SPEED_ONLY:-}" ]; then
  bash bench/plants_gpu.sh "$NEW/cutune" "$OUTDIR/plants_gpu.log" > /dev/null; echo "plants: rc $?"
  bash bench/gpu_tests.sh "$NEW" "$OUTDIR/gpu_tests.log" > /dev/null; echo "gpu tests: $? failed"
fi
: > "$OUTDIR/speed.jsonl"
for what in conv gemm; do
  for who in old new; do
    bin=$OLD/cutune; [ $who = new ] && bin=$NEW/cutune
    d=/tmp/trust_${what}_$who; rm -rf "$d"
    t0=$(date +%s%N)
    if [ $what = conv ]; then
      "$bin" tune --workloads seed001 --case 2 --trials 64 --seed 1 --final 0 --no-sample --quiet --outdir "$d" \
        > "$OUTDIR/${what}_$who.log" 2>&1
    else
      "$bin" tune --gemm M=4096 N=4096 K=4096 t=16 --dtype fp16 --tpl wgmma --seed 1 --quiet --outdir "$d" \
        > "$OUTDIR/${what}_$who.log" 2>&1
    fi
    rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    printf '{"what":"%s","bin":"%s","rc":%d,"wall_s":%d.%03d,"last":"%s"}\n' "$what" "$who" "$rc" $((ms / 1000)) \
      $((ms % 1000)) "$(tail -1 "$OUTDIR/${what}_$who.log" | tr -d '"\\')" >> "$OUTDIR/speed.jsonl"
    cp "$d"/tuningrecords/*.json "$OUTDIR/records_${what}_$who.json" 2>/dev/null || true
  done
done
cat "$OUTDIR/speed.jsonl"
