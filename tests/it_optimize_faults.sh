#!/usr/bin/env bash
# cutune optimize on the host emulator with variants that hang and that crash the emulating process: each costs only
# its own variant (status timeout / fault, recorded in result.json and the trace), the search goes on with a fresh
# emulation worker and ends normally with a valid best.
set -euo pipefail
BIN=$1; DIR=$2
SPIN=$(cd "$(dirname "$0")/fixtures/spin" && pwd)  # the planted spec (before the cd)
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
# MODE 0 is correct; MODE 1 never finishes; MODE 2 writes through a null pointer (SIGSEGV on the host, a fault on
# a GPU). MODE is not a named tunable kind, so change_block_sizes proposes both; no other rule applies.
cp "$SPIN/spin.cu" "$SPIN/spin.json" .
export COMPILE_CACHE_DIR=$DIR/cache
start=$(date +%s)
"$BIN" optimize --input spin.json --outdir out --backend emu --budget-builds 4 --timeout 1 > run.log 2>&1 ||
  { cat run.log; fail "optimize exited $?"; }
wall=$(( $(date +%s) - start ))
python3 - out/kernels/_spin <<'PY' || { cat run.log; fail "results"; }
import json, os, sys
kd = sys.argv[1]
res = {}
for v in sorted(os.listdir(f"{kd}/variants")):
    c = json.load(open(f"{kd}/variants/{v}/control.json"))
    r = json.load(open(f"{kd}/variants/{v}/result.json"))
    res[c["tunables"]["MODE"]] = r
assert set(res) == {1, 2}, res
assert res[1]["status"] == "timeout" and "did not finish" in res[1]["error"], res[1]
assert res[2]["status"] == "fault" and "worker died" in res[2]["error"], res[2]
assert os.readlink(f"{kd}/best") == "baseline"
trace = open(f"{kd}/trace.md").read()
assert "timeout" in trace and "fault" in trace, trace
PY
[ "$wall" -lt 100 ] || fail "took ${wall} s: the hang was not cut at --timeout"
echo "1 passed, 0 failed"
