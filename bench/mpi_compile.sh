#!/usr/bin/env bash
# Issue 19 without a GPU: the compile throughput of `cutune tune --backend compile` (every candidate compiled with
# NVRTC for sm_90, nothing run) in one process and as MPI jobs whose serving ranks compile, each run with the same
# trials (the random strategy and one seed: the same candidates) and a cold compile cache of its own:
#   1      one process compiling one candidate at a time (CUTUNE_COMPILE_THREADS=1): the unit of the speedups
#   1all   one process compiling on every core (the default of one process), for reference
#   np K   mpirun -np K: rank 0 searches and records, K-1 ranks compile one candidate at a time each
# Per run: ranks, compiling ranks (or threads), wall seconds of the command (MPI's start included), compiles, compiles
# per second, the speedup over "1" and the efficiency (speedup / compiling units), into OUT/mpi_compile.json with
# the host, its cores and CPU, the Open MPI version, the commit and the exact commands.
# usage: bench/mpi_compile.sh OUT
# Env: RANKS ("1 1all 2 3 5 9 17"; an np of more than the cores + 1 is skipped: K-1 compiling ranks on at most as
#      many cores), WORKLOADS (tiny), CASE (2), TRIALS (96), BATCH (64), RUN_TIMEOUT (seconds per run, 900),
#      OMPI (bench/mpi_env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
source bench/mpi_env.sh
OUT=$1; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
RANKS=${RANKS:-1 1all 2 3 5 9 17}; TRIALS=${TRIALS:-96}; BATCH=${BATCH:-64}
CORES=$(nproc)
mpi_setup COMPILE_CACHE_DIR
ARGS=(tune --backend compile --workloads "${WORKLOADS:-tiny}" --case "${CASE:-2}" --trials "$TRIALS" --batch "$BATCH"
      --strategy random --seed 7 --quiet --no-sample)
mpi_env_lines > "$OUT/env.txt"
: > "$OUT/runs.txt"

for k in $RANKS; do
  run=np$k
  case $k in
    1) run=one1; threads=1 ;;
    1all) run=oneall; threads=$CORES ;;
    *) threads=1
       if [ "$k" -gt $((CORES + 1)) ]; then echo "np $k: skipped ($CORES cores)"; continue; fi ;;
  esac
  rm -rf "${OUT:?}/$run"; mkdir -p "$OUT/$run/cache"; chmod 700 "$OUT/$run/cache"
  export COMPILE_CACHE_DIR=$OUT/$run/cache
  case $k in
    1|1all) cmd=(env CUTUNE_COMPILE_THREADS=$threads "$CUTUNE_BIN" "${ARGS[@]}" --outdir "$OUT/$run") ;;
    *) cmd=("${MPIRUN[@]}" -np "$k" "$CUTUNE_BIN" "${ARGS[@]}" --compile-on ranks --outdir "$OUT/$run") ;;
  esac
  t0=$(date +%s.%N); rc=0
  timeout "${RUN_TIMEOUT:-900}" "${cmd[@]}" > "$OUT/$run.log" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  echo "$run $k $threads $rc $(python3 -c "print(round($t1 - $t0, 3))") ${cmd[*]}" >> "$OUT/runs.txt"
  echo "$run: rc $rc, $(python3 -c "print(round($t1 - $t0, 1))") s"
done

python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
env = dict(l.split(": ", 1) for l in open(os.path.join(out, "env.txt")).read().splitlines() if ": " in l)
res = {"what": "compile throughput of `cutune tune --backend compile` (NVRTC for sm_90, nothing run) by ranks",
       "host": env.get("host"), "cores": int(env.get("cores", 0)), "cpu": env.get("cpu"),
       "open_mpi": env.get("mpirun"), "commit": env.get("commit"), "date": env.get("date"), "runs": []}
for line in open(os.path.join(out, "runs.txt")):
    run, k, threads, rc, wall, cmd = line.rstrip("\n").split(" ", 5)
    recs = [json.loads(l) for p in glob.glob(os.path.join(out, run, "tuningrecords", "*.json")) for l in open(p)
            if l.strip()]
    compiles = sum(r["status"] in ("compiled", "compile_error") for r in recs)
    mpi = k not in ("1", "1all")
    wall = float(wall)
    res["runs"].append({
        "run": run, "ranks": int(k) if mpi else 1, "compiling_ranks": int(k) - 1 if mpi else 0,
        "compile_threads": int(threads), "compiling_units": int(k) - 1 if mpi else int(threads),
        "compile_on": "ranks" if mpi else "process", "rc": int(rc), "wall_s": round(wall, 2),
        "records": len(recs), "compiles": compiles, "compile_errors": sum(r["status"] == "compile_error" for r in recs),
        "cache_hits": sum(r.get("compile_ms", 1) == 0 for r in recs),
        "mean_compile_ms": round(sum(r.get("compile_ms", 0) for r in recs) / len(recs), 1) if recs else None,
        "compiles_per_s": round(compiles / wall, 3) if wall > 0 else None, "command": cmd.replace(out, "OUT")})
base = next((r for r in res["runs"] if r["run"] == "one1" and r["rc"] == 0), None)
for r in res["runs"]:
    sp = r["compiles_per_s"] / base["compiles_per_s"] if base and r["compiles_per_s"] else None
    r["speedup_vs_1"] = round(sp, 3) if sp else None
    r["efficiency"] = round(sp / r["compiling_units"], 3) if sp and r["compiling_units"] else None
json.dump(res, open(os.path.join(out, "mpi_compile.json"), "w"), indent=1)
print("| run | ranks | compiling | wall s | compiles | compiles/s | speedup | efficiency |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for r in res["runs"]:
    print("| %s | %d | %d | %.1f | %d | %s | %s | %s |" % (r["run"], r["ranks"], r["compiling_units"], r["wall_s"],
          r["compiles"], r["compiles_per_s"], r["speedup_vs_1"], r["efficiency"]))
PY
