#!/usr/bin/env bash
# Issue 15, item 10, in one device call: is the vendor side of cutune's comparisons measured as fairly as cutune's
# own kernels? For each shape (the two 1x1 layers the issue names and three of seed 001's 3x3 cases): a short tune,
# then `cutune baseline` (cuDNN's legacy algorithms and its v9 engines, and the tuned kernels, each cold, a one-launch
# CUDA graph after an L2 flush, and warm, a graph of launches back to back), then PyTorch's own timing of the same
# cuDNN fp32 convolution (bench/torch_conv_time.py: cudnn.benchmark, TF32 off, the same two modes), merged into
# fair.json (bench/fair_merge.py) with the GPU and the command.
# usage: bench/fair_baseline.sh BINDIR OUTDIR [TRIALS]   (BINDIR holds cutune and cutune-worker, e.g. .p15)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
export CUTUNE_WORKLOADS=$PWD/workloads
BIN=$(cd "$1" && pwd); OUT=$(mkdir -p "$2" && cd "$2" && pwd); TRIALS=${3:-150}
SHAPES=${FAIR_SHAPES:-"1,14,14,1024,256,1,1,1,0 1,7,7,2048,512,1,1,1,0 1,68,68,256,128,3,3,1,1 1,56,56,64,64,3,3,1,1 1,14,14,256,256,3,3,1,1"}
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.sm --format=csv > "$OUT/smi.csv"
: > "$OUT/baseline.jsonl"
for s in $SHAPES; do
  d=/tmp/fair/$s; rm -rf "$d"
  echo "== $s" | tee -a "$OUT/tune.log" >> "$OUT/baseline.log"
  "$BIN/cutune" tune --conv "$s" --trials "$TRIALS" --seed 1 --final 0 --no-sample --quiet --outdir "$d" \
    >> "$OUT/tune.log" 2>&1 || echo "tune $s: rc $?" >> "$OUT/tune.log"
  "$BIN/cutune" baseline --conv "$s" --outdir "$d" --json "$OUT/baseline.jsonl" >> "$OUT/baseline.log" 2>&1 ||
    echo "baseline $s: rc $?" >> "$OUT/baseline.log"
done
python3 bench/torch_conv_time.py "$SHAPES" "$OUT/torch.jsonl" > "$OUT/torch.log" 2>&1 || echo "torch: rc $?"
python3 bench/fair_merge.py "$OUT/baseline.jsonl" "$OUT/torch.jsonl" "$OUT/smi.csv" \
  "bench/fair_baseline.sh BINDIR OUTDIR $TRIALS (FAIR_SHAPES='$SHAPES')" > "$OUT/fair.json" 2> "$OUT/table.txt"
cat "$OUT/table.txt"
