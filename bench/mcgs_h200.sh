#!/usr/bin/env bash
# The MCGS optimizer (issue 7, seed 002) on the kernel suite: `cutune optimize` over kernels/ with rule-based moves,
# BUDGET builds per kernel, one worker per GPU of GPUS; every variant is checked (poisoned outputs, the baseline's
# outputs on two input sets, again after timing) and timed by the worker (CUDA events, L2 flushed, median). Writes
# RESULT_JSON in the issue's schema ({"gpu", "command", "kernels": [{name, baseline_ms, best_ms, speedup, builds,
# best_moves}]}) with the driver, clocks, power limit and the geometric mean, and keeps the whole out/ folder
# (variants, trace.md, events.jsonl, search_state.json, global_tactic_graph.json) under WORKDIR, and
# WORKDIR/mcgs_artifacts.tgz: the same without PTX, sources, compile logs and reference outputs (to bring back).
# usage: bench/mcgs_h200.sh RESULT_JSON [WORKDIR]   Env: CUTUNE_MCGS_BUDGET (50), CUTUNE_MCGS_GPUS (0),
# CUTUNE_MCGS_SEED (1), CUTUNE_MCGS_KERNELS (a folder or one spec; kernels).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
RESULT=${1:-bench/results/mcgs_h200.json}
WORK=${2:-bench_work/mcgs_h200}
BUDGET=${CUTUNE_MCGS_BUDGET:-50}
GPUS=${CUTUNE_MCGS_GPUS:-0}
SEED=${CUTUNE_MCGS_SEED:-1}
KERNELS=$(cd "${CUTUNE_MCGS_KERNELS:-kernels}" 2>/dev/null && pwd || echo "$PWD/${CUTUNE_MCGS_KERNELS}")
CUT=$(cd "$(dirname "$CUTUNE_BIN")" && pwd)/$(basename "$CUTUNE_BIN")
mkdir -p "$WORK" "$(dirname "$RESULT")"
RESULT=$(cd "$(dirname "$RESULT")" && pwd)/$(basename "$RESULT")
cd "$WORK"
rm -rf out
export COMPILE_CACHE_DIR=$PWD/compile_cache
"$CUT" devices --json > devices.json
COMMAND="cutune optimize --input kernels --outdir out --gpus $GPUS --budget-builds $BUDGET --no-llm --seed $SEED"
t0=$(date +%s)
"$CUT" optimize --input "$KERNELS" --outdir out --gpus "$GPUS" --budget-builds "$BUDGET" --no-llm --seed "$SEED" \
  2>&1 | tee optimize.log
wall=$(( $(date +%s) - t0 ))
# what explains the run, small enough to bring back from the device: no PTX, sources or compile logs
tar czf mcgs_artifacts.tgz --exclude='*.ptx' --exclude='kernel.cu' --exclude='stdout.log' --exclude='*.bin' \
  --exclude='.scratch' out optimize.log devices.json
BENCH_COMMAND="CUTUNE_MCGS_GPUS=$GPUS CUTUNE_MCGS_BUDGET=$BUDGET CUTUNE_MCGS_SEED=$SEED bench/mcgs_h200.sh"
BENCH_COMMAND="$BENCH_COMMAND ${1:-bench/results/mcgs_h200.json}"
python3 - out/summary.json devices.json "$RESULT" "$COMMAND" "$wall" "$BENCH_COMMAND" <<'PY'
import json, math, sys
summary, devices, result, command, wall, bench_command = sys.argv[1:7]
s = json.load(open(summary))
d = json.load(open(devices))
dev = d["devices"][0] if isinstance(d, dict) and d.get("devices") else d
kernels = [{k: x[k] for k in ("name", "baseline_ms", "best_ms", "speedup", "builds", "best_moves", "best_variant",
                             "measured", "failed", "transpositions")} for x in s["kernels"]]
# variants measured by each worker (the GPU of --gpus), from the variants' result.json
import glob, os
for k in kernels:
    per = {}
    for r in glob.glob(os.path.join(os.path.dirname(summary), "kernels", "_" + k["name"], "variants", "*", "result.json")):
        w = json.load(open(r)).get("worker")
        if w is not None:
            per[str(w)] = per.get(str(w), 0) + 1
    k["variants_per_gpu"] = dict(sorted(per.items()))
def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None
geo = geomean([k["speedup"] for k in kernels])
# reduce_sum's per-thread atomics make its speedup orders of magnitude larger than the rest: the mean without it too
geo_wo = geomean([k["speedup"] for k in kernels if k["name"] != "reduce_sum"])
out = {"gpu": s["gpu"], "device": dev, "backend": s["backend"], "command": command, "bench_command": bench_command,
       "wall_s": int(wall),
       "geomean_speedup": geo, "geomean_speedup_without_reduce_sum": geo_wo, "kernels": kernels}
json.dump(out, open(result, "w"), indent=1)
print(f"{'kernel':<14} {'baseline ms':>12} {'best ms':>10} {'speedup':>8} {'builds':>6} {'failed':>6}  per GPU  best moves")
for k in kernels:
    per = ",".join(f"{g}:{n}" for g, n in k["variants_per_gpu"].items())
    print(f"{k['name']:<14} {k['baseline_ms']:>12.4f} {k['best_ms']:>10.4f} {k['speedup']:>8.2f} {k['builds']:>6} "
          f"{k['failed']:>6}  {per:<7}  " + " > ".join(k["best_moves"]))
print(f"geomean speedup {geo:.2f}x over {len(kernels)} kernels"
      + (f", {geo_wo:.2f}x without reduce_sum" if geo_wo else "") + f"; wall {wall} s")
PY
