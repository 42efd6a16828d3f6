#!/usr/bin/env bash
# Issue 19 on one GPU: what overlapping rank 0's search with the serving ranks' compiles and measurements gives. The
# same `cutune tune` three ways, each with a cold compile cache of its own:
#   one   one process (compile, then measure, in one loop)
#   np2   mpirun -np 2: rank 0 searches, rank 1 compiles and measures on the GPU
#   np3   mpirun -np 3 with CUTUNE_MPI_SHARE_GPU=1: two serving ranks share the GPU (their kernels may overlap in
#         time: the times of this run are for the throughput question only, not for the kernels' speed)
# Both MPI runs compile on their serving ranks (--compile-on ranks, the default; COMPILE_ON=root compiles on rank 0
# as before): each record of mpi_gpu.json says where its run compiled.
# Per run: wall seconds, trials, valid trials, trials per second, and each case's best GFLOP/s, into OUT/mpi_gpu.json
# (with the GPU, driver, clocks, Open MPI version and the exact commands); the runs' records go into one tarball.
# usage: bench/mpi_gpu.sh OUT
# Env: WORKLOADS (tiny), TRIALS (96), BATCH (32), RUN_TIMEOUT (seconds per run, 150), RUNS ("one np2 np3"),
#      BACKEND (cuda; emu to try the script without a GPU), COMPILE_ON (ranks), OMPI (bench/mpi_env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
source bench/mpi_env.sh
OUT=$1; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
WORKLOADS=${WORKLOADS:-tiny}; TRIALS=${TRIALS:-96}; BATCH=${BATCH:-32}; RUNS=${RUNS:-one np2 np3}
COMPILE_ON=${COMPILE_ON:-ranks}
mpi_setup COMPILE_CACHE_DIR CUTUNE_MPI_SHARE_GPU
ARGS=(tune --backend "${BACKEND:-cuda}" --workloads "$WORKLOADS" --trials "$TRIALS" --batch "$BATCH" --quiet --no-sample)
{
  mpi_env_lines
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv 2>&1 || true
} > "$OUT/env.txt"
: > "$OUT/runs.txt"

for run in $RUNS; do
  mkdir -p "$OUT/$run/cache"; chmod 700 "$OUT/$run/cache"
  export COMPILE_CACHE_DIR=$OUT/$run/cache CUTUNE_MPI_SHARE_GPU=0
  case $run in
    one) cmd=("$CUTUNE_BIN" "${ARGS[@]}" --outdir "$OUT/$run") ;;
    np2) cmd=("${MPIRUN[@]}" -np 2 "$CUTUNE_BIN" "${ARGS[@]}" --compile-on "$COMPILE_ON" --outdir "$OUT/$run") ;;
    np3) export CUTUNE_MPI_SHARE_GPU=1
         cmd=("${MPIRUN[@]}" -np 3 "$CUTUNE_BIN" "${ARGS[@]}" --compile-on "$COMPILE_ON" --outdir "$OUT/$run") ;;
    *) echo "unknown run '$run' (one, np2, np3)"; exit 2 ;;
  esac
  t0=$(date +%s.%N); rc=0
  timeout "${RUN_TIMEOUT:-150}" "${cmd[@]}" > "$OUT/$run.log" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  echo "$run $rc $(python3 -c "print(round($t1 - $t0, 2))") ${cmd[*]}" >> "$OUT/runs.txt"
  echo "$run: rc $rc"; tail -2 "$OUT/$run.log"
done

python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
env = open(os.path.join(out, "env.txt")).read()
res = {"env": env, "runs": {}}
for line in open(os.path.join(out, "runs.txt")):
    run, rc, wall, cmd = line.rstrip("\n").split(" ", 3)
    recs = [json.loads(l) for p in sorted(glob.glob(os.path.join(out, run, "tuningrecords", "*.json")))
            for l in open(p) if l.strip()]
    best = {}
    for r in recs:
        if r["status"] == "ok":
            best[r["case"]] = max(best.get(r["case"], 0.0), r.get("gflops", 0.0))
    res["runs"][run] = {"rc": int(rc), "wall_s": float(wall), "command": cmd.replace(out, "OUT"),
                        "compile_on": ("ranks" if "--compile-on ranks" in cmd else "root") if "mpirun" in cmd
                                      else "process",
                        "trials": len(recs), "valid": sum(r["status"] == "ok" for r in recs),
                        "trials_per_s": round(len(recs) / float(wall), 2) if float(wall) > 0 else None,
                        "best_gflops_per_case": best,
                        "gpus": sorted({r["gpu"]["uuid"] for r in recs if r.get("gpu")})}
json.dump(res, open(os.path.join(out, "mpi_gpu.json"), "w"), indent=1)
print("| run | rc | wall s | trials | valid | trials/s |")
print("| --- | --- | --- | --- | --- | --- |")
for run, r in res["runs"].items():
    print("| %s | %d | %.1f | %d | %d | %s |" % (run, r["rc"], r["wall_s"], r["trials"], r["valid"], r["trials_per_s"]))
PY
(cd "$OUT" && tar czf mpi_gpu.tgz --exclude='*/cache' one np2 np3 ./*.log runs.txt env.txt 2>/dev/null || true)
