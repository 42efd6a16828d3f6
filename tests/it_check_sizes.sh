#!/usr/bin/env bash
# A spec's second size set ("check_sizes", issue 15 item 7) end to end on the emulator. One spec, y = 2 x + 1 over N,
# timed at N = 4096 and checked at N = 100, with a reference kernel and the restriction BLOCK <= N; the kernel is
# right for every BLOCK except 64, where it writes whole blocks only (right at 4096, a multiple of 64; wrong at 100).
#   tune --kernel, exhaustive: BLOCK 32 passes; 64 is wrong_other_data naming check_sizes; 128 and 256 break the
#     restriction at N = 100, so they are not checked there: they pass with a note that says so (never a silent
#     pass, never a false rejection); the records name the check sizes.
#   optimize: the baseline passes its check at check_sizes; variants get the same verdicts (result.json's status,
#     error, note); spec.json keeps check_sizes; --resume captures the references at check_sizes again and goes on;
#     the emulation worker holds both works, so each run's done event counts switches back as held prepares.
#   A baseline that is wrong at check_sizes against the reference kernel stops optimize, naming check_sizes.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
export COMPILE_CACHE_DIR=$DIR/cache

spec() { # $1: the kernel's guard for BLOCK == 64, $2: the baseline's BLOCK list
  cat <<JSON
{"name": "scale", "language": "cuda", "entry": "scale",
 "source": "extern \"C\" __global__ void scale(const float *x, float *y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (BLOCK == 64 ? $1 : i < n) y[i] = 2.0f * x[i] + 1.0f; }",
 "reference": {"entry": "scale_ref", "source": "extern \"C\" __global__ void scale_ref(const float *x, float *y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i] + 1.0f; }"},
 "sizes": {"N": 4096}, "check_sizes": {"N": 100}, "tunables": {"BLOCK": $2},
 "restrictions": ["BLOCK <= N"],
 "launch": {"grid": ["cdiv(N, BLOCK)"], "block": ["BLOCK"]},
 "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"], "init": "randn", "seed": 3}],
 "outputs": [{"name": "y", "dtype": "f32", "shape": ["N"]}],
 "scalars": [{"name": "n", "dtype": "i32", "value": "N"}], "args": ["x", "y", "n"],
 "tolerance": {"atol": 1e-6, "rtol": 1e-6}}
JSON
}
spec "(blockIdx.x + 1) * blockDim.x <= n" "[32, 64, 128, 256]" > scale.json

# ---- tune --kernel ----
"$BIN" tune --kernel scale.json --strategy exhaustive --trials 10 --backend emu --quiet --outdir tune \
  > tune.out 2> tune.err || { cat tune.out tune.err; fail "tune --kernel exited $?"; }
python3 - tune/tuningrecords/kernel_scale.json <<'PY' || fail "tune --kernel records"
import json, sys
recs = {r["sched"]["BLOCK"]: r for r in map(json.loads, open(sys.argv[1]))}
assert sorted(recs) == [32, 64, 128, 256], sorted(recs)
for r in recs.values():
    assert r["workload"]["sizes"] == {"N": 4096} and r["workload"]["check_sizes"] == {"N": 100}, r["workload"]
r = recs[32]
assert r["status"] == "ok" and "note" not in r and r["median_ms"] > 0, r
r = recs[64]
assert r["status"] == "wrong_other_data", r
assert r["error"].startswith("at check_sizes (N=100): ") and "outputs wrong" in r["error"], r["error"]
assert r["median_ms"] is None, r  # failed: no time
for b in (128, 256):
    r = recs[b]
    assert r["status"] == "ok" and r["median_ms"] > 0, r
    want = "not checked at check_sizes (N=100): restrictions[0] 'BLOCK <= N' is false for N=100, BLOCK=%d" % b
    assert r.get("note") == want, (r.get("note"), want)
print("tune --kernel: 32 ok, 64 %s, 128 and 256 ok with a note" % recs[64]["status"])
PY

# ---- optimize (and --resume) ----
ARGS=(optimize --input scale.json --outdir opt --backend emu --no-llm --seed 1)
"$BIN" "${ARGS[@]}" --budget-builds 2 > opt1.log 2>&1 || { cat opt1.log; fail "optimize exited $?"; }
"$BIN" "${ARGS[@]}" --budget-builds 4 --resume > opt2.log 2>&1 || { cat opt2.log; fail "optimize --resume exited $?"; }
grep -q "resumed" opt2.log || { cat opt2.log; fail "did not resume"; }
python3 - opt/kernels/_scale <<'PY' || fail "optimize results"
import json, os, re, sys
kd = sys.argv[1]
base = json.load(open(f"{kd}/baseline/result.json"))
assert base["status"] == "ok", base
assert json.load(open(f"{kd}/spec.json"))["check_sizes"] == {"N": 100}
seen = {}
for v in sorted(os.listdir(f"{kd}/variants")):
    r = json.load(open(f"{kd}/variants/{v}/result.json"))
    m = re.search(r"#define BLOCK (\d+)", open(f"{kd}/variants/{v}/kernel.cu").read())
    if not r["compiled"] or not m:
        continue
    b = int(m.group(1))
    seen[v] = (b, r["status"])
    if b == 64:
        assert r["status"] == "wrong_other_data" and r["error"].startswith("at check_sizes (N=100): "), r
    elif b in (128, 256) and r["status"] == "ok":
        assert r["error"] == "" and r["note"].startswith("not checked at check_sizes (N=100): restrictions[0]"), r
    elif r["status"] == "ok":
        assert "note" not in r, r
assert len(seen) >= 3, seen  # the search built several BLOCK variants
print("optimize:", seen)
# each run's done event counts its prepares: the emulation worker holds the spec's work and the check work, so a
# build's switches back are selects (prepares_held), and only new works are sent (before: every switch was sent)
done = [ev for ev in map(json.loads, open(f"{kd}/events.jsonl")) if ev["event"] == "done"]
assert len(done) == 2, done  # the run and its --resume
for ev in done:
    assert ev["prepares_sent"] >= 1 and ev["prepare_bytes"] > 0, ev
    assert ev["prepares_held"] >= 2, ev
    print("prepares: %d sent, %d held" % (ev["prepares_sent"], ev["prepares_held"]))
PY

# ---- a baseline wrong at check_sizes (against the reference kernel) stops optimize ----
spec "(blockIdx.x + 1) * blockDim.x <= n" "[64, 32]" > bad.json
set +e; "$BIN" optimize --input bad.json --outdir bad --backend emu --no-llm --budget-builds 2 > bad.log 2>&1; rc=$?
set -e
want="the baseline does not match the reference kernel (wrong_other_data: at check_sizes (N=100): "
[ $rc -eq 1 ] && grep -qF "$want" bad.log || { cat bad.log; fail "a baseline wrong at check_sizes: exit $rc"; }
echo "OK"
