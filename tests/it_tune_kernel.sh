#!/usr/bin/env bash
# cutune tune --kernel (issue 14: ops and strategies are orthogonal): a user kernel spec's tunables searched by the
# evolutionary strategy with its cost model, by random and by exhaustive search, on the emulator. The spec
# (tests/fixtures/kernels/matmul_tiled.json, modelled on Kernel Tuner's matmul example) has the restriction
# block_size_x == block_size_y * tile_size_y: no recorded candidate may break it. Without the restriction the same
# random search does record such candidates, so the check can fail. Resume, and a bad spec's exit code.
set -euo pipefail
BIN=$1; DIR=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
SPEC=$HERE/fixtures/kernels/matmul_tiled.json
SIZES="M=40,N=72,K=48"

check() { # $1: log, $2: expected records, $3: 1 if the restriction must hold
python3 - "$@" <<'PY'
import json, sys
path, want, restricted = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
recs = [json.loads(l) for l in open(path)]
assert len(recs) == want, (len(recs), want)
assert all(r["v"] == 2 and r["op"] == "kernel" and r["workload"]["kernel"] == "matmul_tiled" for r in recs)
assert [r["trial"] for r in recs] == list(range(want))
keys = [json.dumps(r["sched"], sort_keys=True) for r in recs]
assert len(set(keys)) == len(keys), "a configuration measured twice"
broken = [r["sched"] for r in recs if r["sched"]["block_size_x"] != r["sched"]["block_size_y"] * r["sched"]["tile_size_y"]]
if restricted:
    assert not broken, "built despite the restriction: %s" % broken[:3]
else:
    assert broken, "without the restriction some candidate should break it (or this test cannot fail)"
bad = [r for r in recs if r["status"] != "ok"]
if restricted:  # the restriction is why the kernel is right: every allowed candidate passes its check
    assert not bad, "failed candidates: %s" % bad[:2]
print("%s: %d records, %d break the restriction" % (path, len(recs), len(broken)))
PY
}

for s in evolve random; do
    "$BIN" tune --kernel "$SPEC" --sizes $SIZES --strategy $s --trials 14 --backend emu --quiet --outdir $s > $s.out ||
        { cat $s.out; fail "tune --kernel --strategy $s"; }
    check $s/tuningrecords/kernel_matmul_tiled.json 14 1 || fail "$s"
done
# exhaustive: exactly the allowed configurations with at most 1024 threads per block, each once, then it stops
want=$(python3 -c '
import itertools
n = sum(1 for bx, by, tx, ty in itertools.product([16, 8, 32], [16, 1, 2, 4, 8, 32], [1, 2, 4], [1, 2, 4, 8])
        if bx == by * ty and bx * by <= 1024)
print(n)')
"$BIN" tune --kernel "$SPEC" --sizes $SIZES --strategy exhaustive --trials 1000 --backend emu --outdir ex \
    > ex.out 2> ex.err || { cat ex.out ex.err; fail "exhaustive"; }
check ex/tuningrecords/kernel_matmul_tiled.json "$want" 1 || fail "exhaustive"
grep -q "the schedule space is exhausted" ex.err || fail "exhaustive: no word that the space is exhausted"
# resume: 6 more trials continue the log, nothing measured twice
"$BIN" tune --kernel "$SPEC" --sizes $SIZES --strategy random --trials 20 --backend emu --quiet --outdir random \
    > resume.out || fail "resume"
grep -q "20 trials (6 new" resume.out || { cat resume.out; fail "resume counts"; }
check random/tuningrecords/kernel_matmul_tiled.json 20 1 || fail "resume"
# the same search without the restriction records candidates that break it (and compute wrong results)
python3 - "$SPEC" <<'PY'
import json, sys, os
s = json.load(open(sys.argv[1]))
del s["restrictions"]
s["source_path"] = os.path.join(os.path.dirname(sys.argv[1]), s["source_path"])
json.dump(s, open("free.json", "w"))
PY
"$BIN" tune --kernel free.json --sizes $SIZES --strategy random --trials 14 --backend emu --quiet --outdir free \
    > free.out || { cat free.out; fail "unrestricted run"; }
check free/tuningrecords/kernel_matmul_tiled.json 14 0 || fail "unrestricted"
# tune --final 2: the 2 best re-timed against the spec's baseline in the same worker, a line in final.jsonl
"$BIN" tune --kernel "$SPEC" --sizes $SIZES --trials 8 --final 2 --backend emu --quiet --outdir fin > fin.out ||
    { cat fin.out; fail "--final"; }
grep -q "^kernel matmul_tiled: baseline .* ms, cutune .* ms (best of top 2 re-timed), speedup" fin.out || {
    cat fin.out; fail "--final line"; }
python3 - fin/final.jsonl "$SIZES" <<'PY' || fail "final.jsonl"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
assert r["op"] == "kernel" and r["workload"] == "kernel_matmul_tiled" and r["retimed"] == 2, r
assert r["baseline"] == "baseline" and r["baseline_ms"] > 0 and r["cutune_ms"] > 0, r
assert abs(r["speedup"] - r["baseline_ms"] / r["cutune_ms"]) < 1e-3 * r["speedup"], r
# bytes moved: the spec's tensors once each (A, B and C of f32 at the --sizes), and the bandwidth they imply
n = {k: int(v) for k, v in (kv.split("=") for kv in sys.argv[2].split(","))}
assert r["bytes"] == 4 * (n["M"] * n["K"] + n["K"] * n["N"] + n["M"] * n["N"]), r
assert r["cutune_gbs"] is not None, r
assert abs(r["cutune_gbs"] - r["bytes"] / r["cutune_ms"] / 1e6) < 1e-3 * r["cutune_gbs"] + 0.1, r
s = r["best_sched"]
assert s["block_size_x"] == s["block_size_y"] * s["tile_size_y"], s
PY
# report --kernel: the log and its final line as a table and report/kernel.json
"$BIN" report --kernel --outdir fin > rep.out || { cat rep.out; fail "report --kernel"; }
python3 - fin rep.out <<'PY' || fail "kernel report"
import json, sys
d, text = sys.argv[1], open(sys.argv[2]).read()
r = json.load(open(f"{d}/report/kernel.json"))["kernels"]
assert [k["workload"] for k in r] == ["kernel_matmul_tiled"], r
k = r[0]
recs = [json.loads(l) for l in open(f"{d}/tuningrecords/kernel_matmul_tiled.json")]
ok = [x for x in recs if x["status"] == "ok"]
assert k["trials"] == len(recs) == 8 and k["failed"] == len(recs) - len(ok), k
assert k["best_search_ms"] == min(x["median_ms"] for x in ok), k
assert k["best_sched"] == min(ok, key=lambda x: x["median_ms"])["sched"], k
fin = [json.loads(l) for l in open(f"{d}/final.jsonl")][-1]
assert k["final"] == fin, k
row = [l for l in text.splitlines() if l.startswith("| matmul_tiled |")]
assert len(row) == 1 and ("%.2fx" % fin["speedup"]) in row[0], row
PY
rc=0; "$BIN" report --kernel --outdir free/nothing > none.out 2> none.err || rc=$?
[ "$rc" -eq 2 ] || fail "report --kernel without logs: exit $rc, want 2"
# a spec that does not parse: exit 2, naming the field
echo '{"name": "x"}' > bad.json
rc=0; "$BIN" tune --kernel bad.json --backend emu > bad.out 2> bad.err || rc=$?
[ "$rc" -eq 2 ] || fail "bad spec: exit $rc, want 2"
grep -q "bad.json" bad.err || { cat bad.err; fail "bad spec message"; }
echo "OK"
