#!/usr/bin/env bash
# Issue 20's tensor-core Conv2D benchmark on the GPU: seed001 and resnet50 at batch 1 and batch 32, in fp16 NHWC,
# tf32 NHWC and tf32 NCHW, each case tuned (igemm_tc and the other templates that apply) and then re-timed by
# `tune --final 3` against cuDNN's fastest algorithm in the same dtype and layout (tensor-core math allowed), in the
# same worker and harness (bench/conv_seed001.sh does one group; bench/conv_tc_merge.py joins the groups into one
# JSON with each group's geomean and worst case).
# usage: bench/conv_tc.sh OUTDIR [GROUPS]
#   GROUPS: words LIST:DTYPE:LAYOUT (default: the 12 groups of the issue); OUTDIR gets one folder per group and
#   conv_tc_h200.json. Split a run over device calls with GROUPS and CUTUNE_BENCH_CASES (conv_seed001.sh), and
#   join the folders with bench/conv_tc_merge.py.
# Environment: TRIALS (default 300), CUTUNE_BENCH_CASE_BUDGET (seconds per case, default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: bench/conv_tc.sh OUTDIR [GROUPS]}
shift
GROUPS_=${*:-"seed001_b1:fp16:nhwc seed001_b32:fp16:nhwc resnet50:fp16:nhwc resnet50_b32:fp16:nhwc
seed001_b1:tf32:nhwc seed001_b32:tf32:nhwc resnet50:tf32:nhwc resnet50_b32:tf32:nhwc
seed001_b1:tf32:nchw seed001_b32:tf32:nchw resnet50:tf32:nchw resnet50_b32:tf32:nchw"}
TRIALS=${TRIALS:-300}
export CUTUNE_BENCH_CASE_BUDGET=${CUTUNE_BENCH_CASE_BUDGET:-20}
mkdir -p "$OUT"
for g in $GROUPS_; do
  IFS=: read -r list dtype layout <<< "$g"
  dir="$OUT/${list}_${dtype}_${layout}"
  mkdir -p "$dir"
  echo "== $list $dtype $layout" >&2
  CUTUNE_BENCH_LIST=$list CUTUNE_BENCH_TUNE_ARGS="--dtype $dtype --layout $layout" \
    bash bench/conv_seed001.sh "$TRIALS" "$dir/work" "$dir/result.json" > "$dir/table.txt" 2> "$dir/stderr.log" ||
    echo "group $g failed: see $dir/stderr.log" >&2
done
python3 bench/conv_tc_merge.py --out "$OUT/conv_tc_h200.json" --command "bench/conv_tc.sh $OUT $*" "$OUT"/*/result.json
