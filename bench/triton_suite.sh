#!/usr/bin/env bash
# Issue 18 on a GPU: the Triton suite (kernels/triton/), rules only, BUDGET builds per kernel, for each seed of
# SEEDS; after seed 1, cutune's best against @triton.autotune over the same configurations for each kernel of
# AUTOTUNE (bench/triton_autotune.py, against this call's s1, or AUTOTUNE_RUN: a seed-1 folder of an earlier call).
# Each seed starts cold: its own fresh Triton cache (CUTUNE_TRITON_CACHE_DIR) and compile cache, so every compile
# counts in its time, as in a user's first run. Kept per run: summary.json, the kernels' folders (variants'
# kernel.py, events.jsonl, spec.json, the trace; no PTX, TTGIR or SASS), the log, rc and wall seconds.
# Writes into OUT: triton_suite.tgz (everything of the call, the layout bench/triton_merge.py reads) and beside it
# the small files: env.txt (GPU, driver, clocks, versions, commands), runs.txt (name rc wall_s command),
# autotune_KERNEL.json, triton_suite.json and triton_suite.md (the merge of this call).
# usage: bench/triton_suite.sh OUT
# Env: SEEDS ("1 2"), BUDGET (50), KERNELS (kernels/triton), RUN_TIMEOUT (seconds per optimize run, 3000: a run
# killed has no summary), AUTOTUNE ("matmul softmax_row"; empty: none), AUTOTUNE_TIMEOUT (seconds per kernel,
# 1800), AUTOTUNE_REPS (3), AUTOTUNE_PRECOMPILE (0; N: bench/triton_autotune.py --precompile N), CUTUNE_PYTHON
# (python3: the Python with torch and triton), KEEP_WORK (1: keep OUT/work).
# A call may do part of it, each into its own OUT; bench/triton_merge.py joins the calls afterwards:
#   KEEP_WORK=1 SEEDS=1 AUTOTUNE= bench/triton_suite.sh A     (seed 1, its folder kept in A/work/s1)
#   SEEDS= AUTOTUNE_RUN=A/work/s1 AUTOTUNE=matmul bench/triton_suite.sh B    (against that seed 1, same machine)
#   SEEDS=2 AUTOTUNE= bench/triton_suite.sh C
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
SRC=$PWD
OUT=$1; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
SEEDS=${SEEDS-1 2}; BUDGET=${BUDGET:-50}; KERNELS=${KERNELS:-kernels/triton}; AUTOTUNE=${AUTOTUNE-matmul softmax_row}
PY=${CUTUNE_PYTHON:-python3}
KIN=$KERNELS  # as given, for the commands recorded
case $KERNELS in /*) ;; *) KERNELS=$SRC/$KERNELS ;; esac
CUT=$(cd "$(dirname "$CUTUNE_BIN")" && pwd)/$(basename "$CUTUNE_BIN")
# the worker of this checkout unless the caller names one (the binary's own lookup is beside it)
if [ -z "${CUTUNE_TRITON_WORKER:-}" ] && [ -f "$SRC/tools/triton_worker.py" ]; then
  export CUTUNE_TRITON_WORKER=$SRC/tools/triton_worker.py
fi
WORK=$OUT/work; rm -rf "$WORK"; mkdir -p "$WORK"
: > "$WORK/runs.txt"

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)"
  echo "commit: $(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "cutune: $CUT"
  echo "python: $PY $("$PY" -c 'import sys; print(sys.version.split()[0])' 2>&1)"
  echo "torch: $("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1)"
  echo "triton: $("$PY" -c 'import triton; print(triton.__version__)' 2>&1 | tail -1)"
  echo "env: SEEDS=$SEEDS BUDGET=$BUDGET KERNELS=$KERNELS RUN_TIMEOUT=${RUN_TIMEOUT:-3000} AUTOTUNE=$AUTOTUNE" \
       "CUTUNE_PYTHON=$PY CUTUNE_TRITON_WORKER=${CUTUNE_TRITON_WORKER:-}"
  echo "nvidia-smi:"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv 2>&1 || true
  echo "commands:"
} > "$WORK/env.txt"

# one timed command: NAME, LOG, TIMEOUT, the command to record, then the command; a line in runs.txt, never fatal
timed() {
  local name=$1 log=$2 limit=$3 shown=$4; shift 4
  echo "$name: $shown" >> "$WORK/env.txt"
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  timeout "$limit" "$@" > "$log" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  echo "$name $rc $(python3 -c "print(round($t1 - $t0, 1))") $shown" >> "$WORK/runs.txt"
  echo "$name: rc $rc"; tail -3 "$log"
}

autotune() {
  local pre=""
  [ "${AUTOTUNE_PRECOMPILE:-0}" = 0 ] || pre=" --precompile $AUTOTUNE_PRECOMPILE"
  for k in $AUTOTUNE; do
    timed "autotune_$k" "$WORK/autotune_$k.log" "${AUTOTUNE_TIMEOUT:-1800}" \
      "$PY bench/triton_autotune.py $KIN/$k.json ${AUTOTUNE_RUN:-s1} autotune_$k.json --reps ${AUTOTUNE_REPS:-3}$pre" \
      "$PY" "$SRC/bench/triton_autotune.py" "$KERNELS/$k.json" "${AUTOTUNE_RUN:-$WORK/s1}" "$WORK/autotune_$k.json" \
      --reps "${AUTOTUNE_REPS:-3}" $pre
  done
}

for seed in $SEEDS; do
  # cold caches per seed: the Triton worker's (the worker sets TRITON_CACHE_DIR from it) and cutune's compile cache
  mkdir -p "$WORK/cache/s$seed/triton" "$WORK/cache/s$seed/compile"
  shown="cutune optimize --input $KIN --backend cuda --budget-builds $BUDGET --seed $seed --no-llm"
  CUTUNE_TRITON_CACHE_DIR=$WORK/cache/s$seed/triton COMPILE_CACHE_DIR=$WORK/cache/s$seed/compile \
    timed "s$seed" "$WORK/s$seed.log" "${RUN_TIMEOUT:-3000}" "$shown --outdir s$seed --quiet" \
    "$CUT" optimize --input "$KERNELS" --backend cuda --budget-builds "$BUDGET" --seed "$seed" --no-llm \
    --outdir "$WORK/s$seed" --quiet
  if [ "$seed" = 1 ] && [ -n "$AUTOTUNE" ] && [ -z "${AUTOTUNE_RUN:-}" ]; then autotune; fi
done
if [ -n "$AUTOTUNE" ] && [ -n "${AUTOTUNE_RUN:-}" ]; then autotune; fi

# the merge of this call, then everything into one tarball (no caches, PTX, TTGIR, SASS or binaries)
runs=()
for d in "$WORK"/s[0-9]*/ "$WORK"/autotune_*.json; do [ -e "$d" ] && runs+=("${d%/}"); done
python3 "$SRC/bench/triton_merge.py" "${runs[@]}" "$WORK/triton_suite.json" > "$WORK/triton_suite.md" \
  2> "$WORK/merge.log" || echo "merge failed: $(tail -2 "$WORK/merge.log")"
(cd "$WORK" && tar czf "$OUT/triton_suite.tgz" --exclude=./cache --exclude='*.ptx' --exclude='*.ttgir' \
  --exclude='*.sass' --exclude='*.cubin' --exclude='*.bin' --exclude='.scratch' .)
for f in env.txt runs.txt triton_suite.json triton_suite.md autotune_*.json; do
  if [ -f "$WORK/$f" ]; then cp "$WORK/$f" "$OUT/"; fi
done
cat "$WORK/triton_suite.md" 2>/dev/null || true
if [ "${KEEP_WORK:-0}" != 1 ]; then rm -rf "$WORK"; fi
