#!/usr/bin/env bash
# Scale-out over MPI (issue 19) on the emulator: `mpirun -np 3 --oversubscribe cutune tune` (rank 0 searches and
# records, ranks 1 and 2 measure) against a single-process run of the same budget and seed: the same records (the
# random strategy proposes the same schedules in the same order, so the same valid count), no duplicate trial, the
# same fields. A candidate that hangs and one that crashes cost only their rank's worker. Compiles on the serving
# ranks (--backend compile) give the records one process gives; a compile error is its candidate's. Then a job stopped mid-run
# three ways (mpirun SIGTERM'd, mpirun SIGKILL'd, a serving rank SIGKILL'd),
# each time resumed by the same command: the trial count goes on, no complete record lost, none measured twice.
set -euo pipefail
BIN=$1; DIR=$2
SPIN=$(cd "$(dirname "$0")/fixtures/spin" && pwd)  # the planted spec (before the cd)
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (Debian: openmpi-bin, libopenmpi-dev)"; exit 77; }
# Open MPI keeps allocations until exit by design, in modules it unloads first (no suppression can name them): under
# the sanitizer build the ranks run without the leak check (the single-process run keeps it).
MPI=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" mpirun --oversubscribe -np 3 -x ASAN_OPTIONS)
[ "$(id -u)" -ne 0 ] || MPI+=(--allow-run-as-root)
# A cache of our own (cold: the compiles take the time a kill needs), and a tag that finds this test's ranks.
export COMPILE_CACHE_DIR=$DIR/cache CUTUNE_IT_MPI=$DIR
MPI+=(-x COMPILE_CACHE_DIR -x CUTUNE_IT_MPI)
if ! "${MPI[@]}" "$BIN" tune --help > help.out 2> help.err; then
  grep -q "built without MPI" help.err && { echo "SKIP: $(head -1 help.err)"; exit 77; }
  cat help.err; fail "mpirun cutune tune --help"
fi

# 1. The same run in one process and as an MPI job of 3 ranks.
T0=$(date +%s.%N)
ARGS=(tune --backend emu --workloads tiny --trials 16 --batch 8 --strategy random --seed 3 --quiet --no-sample)
# each with a cold cache of its own, so that the times compare
COMPILE_CACHE_DIR=$DIR/one/cache "$BIN" "${ARGS[@]}" --outdir one > one.out 2> one.err ||
  { cat one.err; fail "the single-process run"; }
T1=$(date +%s.%N)
COMPILE_CACHE_DIR=$DIR/mpi/cache "${MPI[@]}" "$BIN" "${ARGS[@]}" --outdir mpi > mpi.out 2> mpi.err ||
  { cat mpi.err; fail "the MPI run"; }
T2=$(date +%s.%N)
grep -q "MPI job of 3 ranks: rank 0 searches and records, 2 ranks measure on the host emulator, on 1 host" mpi.err ||
  { cat mpi.err; fail "rank 0 did not say who serves"; }
python3 - <<'PY' || fail "MPI records against the single-process run's"
import glob, json, os
ones = sorted(glob.glob("one/tuningrecords/*.json"))
assert len(ones) == 3, ones
for path in ones:
    a = [json.loads(l) for l in open(path)]
    b = [json.loads(l) for l in open(path.replace("one/", "mpi/", 1))]
    assert len(a) == len(b) == 16, (path, len(a), len(b))
    for recs in (a, b):
        assert [r["trial"] for r in recs] == list(range(16)), "trial numbers"
        keys = [json.dumps(r["sched"], sort_keys=True) for r in recs]
        assert len(set(keys)) == len(keys), "a schedule measured twice"
    assert [r["sched"] for r in a] == [r["sched"] for r in b], "another sequence of schedules"
    va, vb = [sum(r["status"] == "ok" for r in x) for x in (a, b)]
    assert va == vb and va > 0, ("valid records", va, vb)
    for x, y in zip(a, b):
        assert sorted(x) == sorted(y), ("fields", sorted(x), sorted(y))
        for k in ("v", "op", "case", "workload", "status", "backend", "gpu", "compile_ms", "regs", "spills"):
            assert x[k] == y[k], (k, x[k], y[k])
        assert (x["median_ms"] > 0) == (y["median_ms"] > 0) and y["repeats"] > 0
    print("%s: 16 records, %d valid, as in one process" % (os.path.basename(path), vb))
PY

# 2. A candidate that hangs and one that crashes its emulation worker cost only that worker on their rank: both are
# recorded with their status, the job goes on and ends normally (tests/fixtures/spin, as in
# it_optimize_faults.sh: MODE 1 spins, MODE 2 writes through a null pointer).
cp "$SPIN/spin.cu" "$SPIN/spin.json" .
"${MPI[@]}" "$BIN" tune --kernel spin.json --strategy exhaustive --trials 3 --timeout 1 --backend emu --quiet \
  --outdir spin > spin.out 2> spin.err || { cat spin.err; fail "the MPI job with a hang and a fault"; }
python3 - spin/tuningrecords/kernel_spin.json <<'PY' || fail "faults over MPI"
import json, sys
recs = {r["sched"]["MODE"]: r for r in map(json.loads, open(sys.argv[1]))}
assert sorted(recs) == [0, 1, 2], recs
assert recs[0]["status"] == "ok", recs[0]
assert recs[1]["status"] == "timeout" and "did not finish" in recs[1]["error"], recs[1]
assert recs[2]["status"] == "fault" and "worker died" in recs[2]["error"], recs[2]
print("a hang and a fault recorded over MPI, the job ended normally")
PY

# 2b. Compiles on the serving ranks: the compile backend (nothing runs) in one process and as a job of 3 ranks gives
# the same records, field for field (registers, spills, status "compiled", no time); and a candidate that does not
# compile is its rank's COMPILE_ERROR (with the compiler's first line), the rank goes on with the next candidates.
CARGS=(tune --backend compile --workloads tiny --case 2 --trials 12 --batch 6 --strategy random --seed 5 --quiet
       --no-sample)
COMPILE_CACHE_DIR=$DIR/c1/cache "$BIN" "${CARGS[@]}" --outdir c1 > c1.out 2> c1.err || { cat c1.err; fail "compile, one process"; }
COMPILE_CACHE_DIR=$DIR/c3/cache "${MPI[@]}" "$BIN" "${CARGS[@]}" --outdir c3 > c3.out 2> c3.err ||
  { cat c3.err; fail "compile, 3 ranks"; }
grep -q "2 ranks compile with NVRTC for sm_90 (nothing runs)" c3.err || { cat c3.err; fail "rank 0 did not say who compiles"; }
python3 - <<'PY' || fail "compile-only records over MPI against one process's"
import glob, json
[p1] = glob.glob("c1/tuningrecords/*.json")
a = [json.loads(l) for l in open(p1)]
b = [json.loads(l) for l in open(p1.replace("c1/", "c3/", 1))]
assert len(a) == len(b) == 12, (len(a), len(b))
for x, y in zip(a, b):
    assert sorted(x) == sorted(y), ("fields", sorted(x), sorted(y))
    for k in ("sched", "status", "regs", "spills", "backend", "gpu", "median_ms", "repeats"):
        assert x[k] == y[k], (k, x[k], y[k])
    assert x["status"] == "compiled" and x["median_ms"] is None and x["repeats"] == 0, x
    assert x["regs"] > 0 and x["spills"] >= 0 and y["compile_ms"] > 0, y
print("compile only: 12 records, each compiled with its registers, the same in one process and on 2 ranks")
PY
cat > bad.cu <<'CU'
extern "C" __global__ void add1(float *x, float *y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
#if MODE == 1
    this does not compile;
#endif
    if (i < n)
        y[i] = x[i] + 1.0f;
}
CU
sed -e 's/"spin"/"bad"/; s/spin.cu/bad.cu/; s/"entry": "spin"/"entry": "add1"/' spin.json > bad.json
"${MPI[@]}" "$BIN" tune --kernel bad.json --strategy exhaustive --trials 3 --backend emu --quiet --outdir bad \
  > bad.out 2> bad.err || { cat bad.err; fail "the MPI job with a candidate that does not compile"; }
python3 - bad/tuningrecords/kernel_bad.json <<'PY' || fail "a compile error over MPI"
import json, sys
recs = {r["sched"]["MODE"]: r for r in map(json.loads, open(sys.argv[1]))}
assert sorted(recs) == [0, 1, 2], recs
assert recs[1]["status"] == "compile_error" and "error" in recs[1]["error"], recs[1]
assert recs[0]["status"] == "ok" and recs[2]["status"] == "ok", (recs[0], recs[2])
print("a compile error on a serving rank recorded as compile_error, the ranks went on")
PY

# 3. Stopped three ways, resumed each time by the same command (the default strategy, evolve with its cost model).
LOG=kill/tuningrecords/case2_conv2d_N_1_H_9_W_9_CO_6_CI_5_KH_3_KW_3_strides_2_padding_1.json
KARGS=(tune --backend emu --workloads tiny --case 2 --trials 60 --batch 4 --quiet --no-sample --outdir kill)
lines() { [ -f $LOG ] && wc -l < $LOG || echo 0; }
wait_lines() { for _ in $(seq 1 1200); do [ "$(lines)" -ge "$1" ] && return 0; sleep 0.1; done; fail "no $1 records"; }
# The pid of rank $1 of this test's job (its environment says which; its worker processes run __worker, not tune).
rank_pid() {
  for p in /proc/[0-9]*; do
    env=$( { tr '\0' '\n' < "$p/environ"; } 2>/dev/null) || continue
    grep -qx "CUTUNE_IT_MPI=$DIR" <<< "$env" && grep -qx "OMPI_COMM_WORLD_RANK=$1" <<< "$env" || continue
    [ "$(tr '\0' '\n' < "$p/cmdline" | sed -n 2p)" = tune ] && echo "${p#/proc/}"
  done
}
# The same, waiting up to 30 s for the rank to start.
wait_rank() { for _ in $(seq 1 300); do r=$(rank_pid "$1"); [ -n "$r" ] && echo "$r" && return 0; sleep 0.1; done; }
# Ranks a killed mpirun leaves behind notice it and end; the log's lock is free once the last writer is gone.
wait_free() { for _ in $(seq 1 300); do flock -n $LOG true && return 0; sleep 0.1; done; fail "the log stays locked"; }
T3=$(date +%s.%N)
for how in term kill rank; do
  "${MPI[@]}" "$BIN" "${KARGS[@]}" > $how.out 2> $how.err &
  pid=$!
  # 6 records of this run's own before it is stopped (an earlier stop can land records past its count, and a rank
  # must be up before it can be killed)
  wait_lines $(( $(lines) + 6 ))
  case $how in
    term) kill -TERM $pid ;;
    kill) kill -KILL $pid ;;
    rank) r=$(wait_rank 1); [ -n "$r" ] || fail "rank 1 not found"; kill -KILL $r ;;
  esac
  rc=0; { wait $pid; } 2>/dev/null || rc=$?
  [ $rc -ne 0 ] || fail "$how: the stopped job exited 0"
  # A dead rank: mpirun names it, then ends the job (SIGTERM to the others), which rank 0 says how to resume.
  if [ $how = rank ]; then
    grep -q "process rank 1 " $how.err || { cat $how.err; fail "the dead rank was not named"; }
    grep -q "the same command resumes from the records" $how.err || { cat $how.err; fail "rank 0 said nothing"; }
  fi
  wait_free
  cp $LOG before_$how.json
  echo "$how: stopped at $(lines) records (exit $rc)"
done
"${MPI[@]}" "$BIN" "${KARGS[@]}" > resume.out 2> resume.err || { cat resume.err; fail "the resumed job"; }
T4=$(date +%s.%N)
grep -q "60 trials (" resume.out || { cat resume.out; fail "resume"; }
python3 - $LOG <<'PY' || fail "resume check"
import json, sys
final = open(sys.argv[1]).read()
recs = [json.loads(l) for l in final.splitlines()]
assert len(recs) == 60, len(recs)
assert [r["trial"] for r in recs] == list(range(60)), "the trial count does not go on"
keys = [json.dumps(r["sched"], sort_keys=True) for r in recs]
assert len(set(keys)) == 60, "a schedule measured twice"
for how in ("term", "kill", "rank"):
    before = open("before_%s.json" % how).read()
    complete = before[:before.rfind("\n") + 1]
    assert final.startswith(complete), "a complete record was lost or rewritten after the %s stop" % how
assert len(open("before_rank.json").read().splitlines()) < 60, "the last stop came too late to test a resume"
print("resumed after 3 stops: 60 records, trials 0..59 once, each schedule once")
PY
python3 -c "import sys; t = list(map(float, sys.argv[1:])); print('timings: one process %.1f s, 3 ranks %.1f s, kills and resume %.1f s' % (t[1]-t[0], t[2]-t[1], t[4]-t[3]))" $T0 $T1 $T2 $T3 $T4
echo "1 passed, 0 failed"
