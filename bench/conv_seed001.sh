#!/usr/bin/env bash
# Tunes the 7 seed-001 cases on the GPU; at the end of each case `tune --final 3` re-times its 3 best kernels and
# cuDNN's fastest fp32 forward algorithm (cudnnFindConvolutionForwardAlgorithmEx, FMA math, no TF32) in the same
# worker and harness, interleaved over 2 rounds.
# usage: bench/conv_seed001.sh [TRIALS=1000] [WORKDIR=bench_work] [RESULT_JSON=bench/results/conv_seed001_h200.json]
# Run through the device tool with the build folder and .dev carried, e.g.
#   bash bench/conv_seed001.sh 1000 /tmp/w $OUT/conv_seed001_h200.json
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
TRIALS=${1:-1000}
WORK=${2:-bench_work}
RESULT=${3:-bench/results/conv_seed001_h200.json}
LIST=${CUTUNE_BENCH_LIST:-seed001}
# Seconds per case at most (0: none), so that a whole run fits one device call; the JSON states the trials run.
BUDGET=${CUTUNE_BENCH_CASE_BUDGET:-0}
budget_flag=""; [ "$BUDGET" != 0 ] && budget_flag="--time-budget $BUDGET"
# Extra `cutune tune` flags, e.g. CUTUNE_BENCH_TUNE_ARGS=--prior (stated in the result's command).
TUNE_ARGS=${CUTUNE_BENCH_TUNE_ARGS:-}
mkdir -p "$WORK"
"$CUTUNE_BIN" devices --json > "$WORK/devices.json"
ncases=$(grep -c '^\[' workloads/$LIST.txt)
# CUTUNE_BENCH_CASES="1 2 3" runs a subset (bench/merge.py joins the parts of a run split over device calls).
CASES=${CUTUNE_BENCH_CASES:-$(seq 1 "$ncases")}
COMMAND="CUTUNE_BENCH_LIST=$LIST CUTUNE_BENCH_CASES='$(echo $CASES)' CUTUNE_BENCH_CASE_BUDGET=$BUDGET CUTUNE_BENCH_TUNE_ARGS='$TUNE_ARGS' bench/conv_seed001.sh $*"
: > "$WORK/tuning.jsonl"
: > "$WORK/final.jsonl"
for i in $CASES; do
  t0=$(date +%s.%N)
  # --final 3: the 3 best re-timed (>= 20 launches, >= 200 ms each), interleaved with cuDNN over 2 rounds
  "$CUTUNE_BIN" tune --workloads "$LIST" --case "$i" --trials "$TRIALS" --outdir "$WORK" --quiet --no-sample \
    --final 3 $budget_flag $TUNE_ARGS
  t1=$(date +%s.%N)
  echo "{\"case\":$i,\"wall_s\":$(python3 -c "print(round($t1 - $t0, 2))")}" >> "$WORK/tuning.jsonl"
done
python3 bench/curves.py "$WORK/tuningrecords" "$(dirname "$RESULT")/curves_$(basename "$RESULT" .json)"
python3 bench/assemble.py --devices "$WORK/devices.json" --tuning "$WORK/tuning.jsonl" \
  --baseline "$WORK/final.jsonl" --records "$WORK/tuningrecords" --command "$COMMAND" --out "$RESULT"
