#!/usr/bin/env bash
# cutune optimize end to end on the host emulator: two suite kernels, 10 builds each, rules only. Checks seed 002's
# layout (baseline/, variants/<id>/ with every file, best -> a finished variant or the baseline, trace.md,
# events.jsonl, search_state.json, global_tactic_graph.json, summary.json) and that the graph the state file holds is
# consistent with the variants on disk.
set -euo pipefail
BIN=$1; DIR=$2
SRC=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
mkdir specs
cp "$SRC"/kernels/reduce_sum* "$SRC"/kernels/softmax_row.* specs/ # reduce_sum_ref.cu: its reference
export COMPILE_CACHE_DIR=$DIR/cache
"$BIN" optimize --input specs --outdir out --backend emu --no-llm --budget-builds 10 --seed 3 \
  --sizes N=8192,ROWS=16,COLS=256 > run.log 2>&1 || { cat run.log; fail "optimize exited $?"; }
grep -q "geomean speedup over 2 kernels" run.log || { cat run.log; fail "no geomean line"; }
python3 - out <<'PY' || fail "layout"
import json, os, sys
out = sys.argv[1]
summary = json.load(open(f"{out}/summary.json"))
assert [k["name"] for k in summary["kernels"]] == ["reduce_sum", "softmax_row"], summary
g = json.load(open(f"{out}/global_tactic_graph.json"))
attempts = sum(m["attempts"] for m in g["moves"].values())
for k in summary["kernels"]:
    kd = f"{out}/kernels/_{k['name']}"
    assert k["builds"] == 10, k
    for f in ["control.json", "result.json", "kernel.cu", "kernel.ptx", "stdout.log", "stderr.log"]:
        assert os.path.exists(f"{kd}/baseline/{f}"), f
    variants = sorted(os.listdir(f"{kd}/variants"))
    compiled = [v for v in variants if json.load(open(f"{kd}/variants/{v}/result.json"))["compiled"]]
    assert len(compiled) == 10, variants  # the budget counts builds; a known state found before building is free
    for v in variants:
        for f in ["control.json", "result.json", "kernel.cu", "candidate.diff", "stdout.log", "stderr.log"]:
            assert os.path.exists(f"{kd}/variants/{v}/{f}"), (v, f)
        r = json.load(open(f"{kd}/variants/{v}/result.json"))
        if r["compiled"] and r["status"] != "compile_error":
            assert os.path.getsize(f"{kd}/variants/{v}/kernel.ptx") > 0
        if r["status"] == "ok":
            assert r["median_ms"] > 0 and r["speedup"] > 0
    best = os.readlink(f"{kd}/best")
    assert best == "baseline" or best.startswith("variants/v"), best
    state = json.load(open(f"{kd}/search_state.json"))
    ids = {n["id"] for n in state["nodes"]}
    assert state["builds"] == 10
    # every node but the root is a variant on disk, every expanded edge points at a node
    assert ids - {"baseline"} <= set(variants), ids
    children = 0
    for n in state["nodes"]:
        for e in n["edges"]:
            if e["child"] is not None:
                assert e["child"] in ids, e
                children += 1
    ev = [json.loads(l) for l in open(f"{kd}/events.jsonl")]
    linked = sum(e["event"] == "transposition" for e in ev)  # known states: linked, nothing built
    assert children == len(variants) + linked, (children, len(variants), linked)  # no kill here: exact
    assert ev[0]["event"] == "baseline" and ev[-1]["event"] == "done"
    assert sum(e["event"] == "variant" for e in ev) == len(variants)
    attempts -= len(variants)
    assert "MCGS trace" in open(f"{kd}/trace.md").read()
    print(k["name"], "speedup", round(k["speedup"], 2), "best", k["best_variant"], k["best_moves"])
assert attempts == 0, attempts  # the global graph saw every variant of both kernels
# the emulated reduction: aggregating the atomics is proposed first (highest predicted gain) and passes the check
# reduce_sum is checked against its spec's double-precision reference kernel, softmax_row against its baseline
refs = {k["name"]: json.load(open(f"{out}/kernels/_{k['name']}/baseline/result.json"))["references"]
        for k in summary["kernels"]}
assert refs == {"reduce_sum": "reduce_sum_ref", "softmax_row": "baseline"}, refs
rs = f"{out}/kernels/_reduce_sum/variants"
moves = [json.load(open(f"{rs}/{v}/control.json"))["move"] for v in sorted(os.listdir(rs))]
assert "avoid_atomics_reduce" in moves, moves
PY
# two workers (--gpus 0,1: two emulators) evaluate each round's variants in parallel
"$BIN" optimize --input specs/reduce_sum.json --outdir out2 --backend emu --gpus 0,1 --budget-builds 8 --sizes N=8192 \
  > two.log 2>&1 || { cat two.log; fail "two workers: exit $?"; }
grep -q "2 workers" two.log || { cat two.log; fail "not two workers"; }
python3 - out2/kernels/_reduce_sum <<'PY' || fail "two workers"
import json, os, sys
kd = sys.argv[1]
s = json.load(open(f"{kd}/search_state.json"))
assert s["builds"] == 8, s["builds"]
assert all(n["visits"] >= 1 for n in s["nodes"]), "a node without a backed-up visit"
# virtual losses are not persisted and every expanded edge's child exists
ids = {n["id"] for n in s["nodes"]}
assert all(e["child"] in ids for n in s["nodes"] for e in n["edges"] if e["child"] is not None)
# both workers measured variants, each recorded with the --gpus entry that measured it
workers = [json.load(open(f"{kd}/variants/{v}/result.json")).get("worker") for v in os.listdir(f"{kd}/variants")]
assert {0, 1} <= set(workers), workers
PY
# report --optimized: the summary as a table (every kernel, its speedup and moves) and report/optimize.json
"$BIN" report --optimized out > report.out || { cat report.out; fail "report --optimized"; }
python3 - out report.out <<'PY' || fail "optimize report"
import json, math, sys
out, text = sys.argv[1], open(sys.argv[2]).read()
s = json.load(open(f"{out}/summary.json"))
r = json.load(open(f"{out}/report/optimize.json"))
assert r["summary"] == s and r["command"].startswith("cutune report --optimized"), r
g = math.exp(sum(math.log(k["speedup"]) for k in s["kernels"]) / len(s["kernels"]))
assert abs(r["geomean_speedup"] - g) < 1e-9 * g, (r["geomean_speedup"], g)
for k in s["kernels"]:
    row = [l for l in text.splitlines() if l.startswith("| %s |" % k["name"])]
    assert len(row) == 1 and ("%.2fx" % k["speedup"]) in row[0] and k["best_variant"] in row[0], row
assert "Geomean speedup over 2 kernels: %.3fx" % g in text, text
assert open(f"{out}/report/optimize.md").read() in text
PY
rc=0; "$BIN" report --optimized nowhere > none.out 2> none.err || rc=$?
[ "$rc" -eq 2 ] && grep -q "nowhere has no optimizer summary" none.err || { cat none.err; fail "report of no summary"; }

# a second run without --resume refuses to overwrite the search
if "$BIN" optimize --input specs/reduce_sum.json --outdir out --backend emu --budget-builds 12 --sizes N=8192 \
  > again.log 2>&1; then fail "a second run overwrote the search"; fi
grep -q "pass --resume" again.log || { cat again.log; fail "no --resume hint"; }
# kernel.sass: each compiled variant's cubin disassembled where cuobjdump or nvdisasm exists, else result.json says
# why. The run above used whatever this machine has; a second one finds a stand-in cuobjdump on PATH that proves the
# cubin reached it (or the real one in /usr/local/cuda/bin, which comes first).
python3 - out <<'PY' || fail "sass of the first run"
import glob, json, os, sys
for r in glob.glob(f"{sys.argv[1]}/kernels/*/*/result.json") + glob.glob(f"{sys.argv[1]}/kernels/*/variants/*/result.json"):
    j = json.load(open(r))
    if "sass" not in j:
        continue
    d = os.path.dirname(r)
    if j["sass"] == "kernel.sass":
        assert os.path.getsize(f"{d}/kernel.sass") > 0, d
    else:
        assert j["sass"].startswith("neither cuobjdump nor nvdisasm") and not os.path.exists(f"{d}/kernel.sass"), j
PY
mkdir -p fakebin
cat > fakebin/cuobjdump <<'SH'
#!/bin/sh
[ "$1" = "-sass" ] && [ -s "$2" ] || exit 3
printf 'stand-in cuobjdump: magic %s\n\tFunction : stand-in\n' "$(head -c 4 "$2" | od -An -c | tr -d ' ')"
SH
chmod +x fakebin/cuobjdump
PATH=$PWD/fakebin:$PATH CUDA_HOME=/nonexistent "$BIN" optimize --input specs/reduce_sum.json --outdir sass \
  --backend emu --no-llm --budget-builds 3 --sizes N=8192 > sass.log 2>&1 || { cat sass.log; fail "sass run"; }
python3 - sass <<'PY' || fail "kernel.sass"
import glob, json, os, sys
kd = f"{sys.argv[1]}/kernels/_reduce_sum"
dirs = [f"{kd}/baseline"] + sorted(glob.glob(f"{kd}/variants/*"))
n = 0
for d in dirs:
    j = json.load(open(f"{d}/result.json"))
    if "sass" not in j:  # not compiled (a patch that failed, an invalid variant)
        continue
    assert j["sass"] == "kernel.sass", (d, j["sass"])
    text = open(f"{d}/kernel.sass").read()
    assert "Function" in text and ("magic 177ELF" in text or "stand-in" not in text), text
    n += 1
assert n >= 2, n
print("kernel.sass in", n, "folders")
PY
echo "1 passed, 0 failed"
