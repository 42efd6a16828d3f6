#!/usr/bin/env bash
# The task scheduler (tune --scheduler gradient, issue 19) on the emulator: a list whose first shape is listed twice
# (one task of weight 2, the repeat gets no log of its own) under one budget of trials: the logs hold the budget
# exactly, no trial number or schedule twice in a case, sched.json agrees with the logs (trials, best, weight, rounds);
# killed mid-run and run again, the same total. Then the same as an MPI job of 3 ranks, where mpirun is present.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
export COMPILE_CACHE_DIR=$DIR/cache
cat > net.txt <<'EOF'
[1,8,8,8,4,3,3,1,1]    # twice in the network
[1,9,9,6,5,3,3,2,1]
[2,6,6,4,8,1,1,1,0]
[1,8,8,8,4,3,3,1,1]    # the first shape again: weight 2, tuned as case 1
EOF
ARGS=(tune --backend emu --workloads net.txt --scheduler gradient --batch 4 --strategy random --seed 3 --quiet
      --no-sample)

# Checks OUT against a budget: the logs, and sched.json beside them.
check() {
  python3 - "$1" "$2" <<'PY'
import glob, json, os, sys
out, budget = sys.argv[1], int(sys.argv[2])
logs = sorted(glob.glob(out + "/tuningrecords/*.json"))
assert [os.path.basename(p).split("_")[0] for p in logs] == ["case1", "case2", "case3"], logs
s = json.load(open(out + "/sched.json"))
assert s["scheduler"] == "gradient" and s["budget"] == budget, (s["scheduler"], s["budget"])
tasks = {t["workload"]: t for t in s["tasks"]}
assert len(tasks) == 3, list(tasks)
total = 0
for p in logs:
    recs = [json.loads(l) for l in open(p)]
    assert [r["trial"] for r in recs] == list(range(len(recs))), ("trial numbers", p)
    keys = [json.dumps(r["sched"], sort_keys=True) for r in recs]
    assert len(set(keys)) == len(keys), ("a schedule measured twice", p)
    t = tasks[os.path.basename(p)[:-5]]
    assert t["trials"] == len(recs), (p, t["trials"], len(recs))
    assert t["rounds"] >= 1 and not t["dead"], t
    assert t["weight"] == (2 if t["what"] == "case 1" else 1), t
    ok = [r["median_ms"] for r in recs if r["status"] == "ok"]
    assert ok and abs(t["best_ms"] - min(ok)) <= 1e-6 * min(ok), (p, t["best_ms"], min(ok))
    total += len(recs)
assert total == s["trials"] == budget, ("trials", total, s["trials"], budget)
net = sum(t["weight"] * t["best_ms"] for t in s["tasks"])
assert abs(net - s["network_ms"]) <= 1e-5 * net, (net, s["network_ms"])
print("%s: %d trials: %s" % (out, total, ", ".join("%s %d" % (t["what"], t["trials"]) for t in s["tasks"])))
PY
}
total() { cat "$1"/tuningrecords/*.json 2>/dev/null | wc -l; }
# stop_midway OUT SIGNAL LAUNCHER...: a run of 40 trials into OUT started through LAUNCHER (none, or mpirun) and sent
# SIGNAL once its logs hold 14 records; every log's lock then waited for (the ranks a stopped mpirun leaves notice
# it and end). Sets `before` to the records left.
stop_midway() {
  local out=$1 sig=$2; shift 2
  "$@" "$BIN" "${ARGS[@]}" --trials 40 --outdir "$out" > /dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 1200); do [ "$(total "$out")" -ge 14 ] && break; sleep 0.1; done
  kill -"$sig" $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  before=$(total "$out")
  [ "$before" -ge 14 ] && [ "$before" -lt 40 ] || fail "$out: the $sig came at $before of 40 records"
  for log in "$out"/tuningrecords/*.json; do
    for _ in $(seq 1 300); do flock -n "$log" true && break; sleep 0.1; done
  done
}

# 1. One run: the budget spread, the per-case counts printed and in sched.json.
"$BIN" "${ARGS[@]}" --trials 30 --outdir one > one.out 2> one.err || { cat one.err; fail "the scheduled run"; }
check one 30 || fail "the scheduled run's logs and sched.json"
grep -q "^scheduler gradient: 30 of 30 trials over 3 workload(s): case 1 [0-9]* (weight 2" one.out ||
  { cat one.out; fail "the per-case counts at the end"; }
[ -z "$(ls one/tuningrecords | grep -v '^case[123]_')" ] || fail "the repeated shape got files of its own"

# 2. Killed mid-run (SIGKILL), then the same command: the total is the budget, nothing lost or measured twice.
stop_midway kill KILL env
"$BIN" "${ARGS[@]}" --trials 40 --outdir kill > kill.out 2> kill.err || { cat kill.err; fail "the resumed run"; }
check kill 40 || fail "the resumed run's logs and sched.json"
echo "resumed after $before of 40 trials"

# 3. As an MPI job of 3 ranks (rank 0 schedules and records, ranks 1 and 2 measure), also SIGTERM'd and resumed;
# with a cold cache of its own, so that the stop comes before the end.
export COMPILE_CACHE_DIR=$DIR/cache-mpi
command -v mpirun > /dev/null || { echo "no mpirun: the MPI part is skipped"; exit 0; }
MPI=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" mpirun --oversubscribe -np 3 -x ASAN_OPTIONS
     -x COMPILE_CACHE_DIR)
[ "$(id -u)" -ne 0 ] || MPI+=(--allow-run-as-root)
if ! "${MPI[@]}" "$BIN" tune --help > help.out 2> help.err; then
  grep -q "built without MPI" help.err && { echo "$(head -1 help.err): the MPI part is skipped"; exit 0; }
  cat help.err; fail "mpirun cutune tune --help"
fi
stop_midway mpi TERM "${MPI[@]}"
"${MPI[@]}" "$BIN" "${ARGS[@]}" --trials 40 --outdir mpi > mpi.out 2> mpi.err || { cat mpi.err; fail "the MPI run"; }
grep -q "MPI job of 3 ranks" mpi.err || { cat mpi.err; fail "rank 0 did not say who serves"; }
check mpi 40 || fail "the MPI run's logs and sched.json"
echo "MPI: resumed after $before of 40 trials"
