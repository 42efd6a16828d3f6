#!/usr/bin/env bash
# A spec's restrictions end to end on the host emulator: a shared-memory tiled matmul modelled on Kernel Tuner's
# example (tests/fixtures/kernels/matmul_tiled.*), correct only when block_size_x == block_size_y * tile_size_y.
# With the restriction no variant written to the output folder breaks it (read from each variant's kernel.cu header
# and control.json), and none fails its check; the block sizes still move (changes repaired by a second tunable).
# Without it, the same search builds variants that break it and fail: the assertions can fail.
set -euo pipefail
BIN=$1; DIR=$2
SRC=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
cp "$SRC"/tests/fixtures/kernels/matmul_tiled.{json,cu} .
grep -q '"restrictions": \["block_size_x == block_size_y \* tile_size_y"\]' matmul_tiled.json || fail "fixture"
grep -v '"restrictions"' matmul_tiled.json > unrestricted.json
export COMPILE_CACHE_DIR=$DIR/cache
run() { # spec, outdir
  local rc=0
  "$BIN" optimize --input "$1" --outdir "$2" --backend emu --no-llm --budget-builds 12 --seed 1 \
    --sizes M=40,N=72,K=48 > "$2.log" 2>&1 || rc=$?
  [ $rc -eq 0 ] || { cat "$2.log"; fail "$1: optimize exited $rc"; }
}
run matmul_tiled.json out
run unrestricted.json free
python3 - out/kernels/_matmul_tiled free/kernels/_matmul_tiled <<'PY' || fail "restrictions"
import json, os, re, sys

def variants(kd):
    """(id, tunables from kernel.cu's header, control.json, result.json) of every variant written."""
    out = []
    for v in sorted(os.listdir(f"{kd}/variants")):
        src = open(f"{kd}/variants/{v}/kernel.cu").read()
        head = src.split("// cutune: end of tunables")[0]
        tun = {m[1]: int(m[2]) for m in re.finditer(r"#define (\w+) (-?\d+)", head)}
        ctl = json.load(open(f"{kd}/variants/{v}/control.json"))
        res = json.load(open(f"{kd}/variants/{v}/result.json"))
        out.append((v, tun, ctl, res))
    return out

def allowed(t):
    return t["block_size_x"] == t["block_size_y"] * t["tile_size_y"]

kd, free = sys.argv[1], sys.argv[2]
vs = variants(kd)
assert sum(r["compiled"] for _, _, _, r in vs) == 12, [(v, r["status"]) for v, _, _, r in vs]
for v, tun, ctl, res in vs:
    assert len(tun) == 4, (v, tun)  # every variant has its full tunables header
    assert allowed(tun), (v, tun, ctl["label"])
    if "tunables" in ctl:
        assert ctl["tunables"] == tun, (v, ctl["tunables"], tun)
    assert res["status"] in ("ok", "transposition"), (v, ctl["label"], res["status"], res.get("error"))
# the coupled tunables are still searched: a change of one repaired by a change of another
moved = [ctl["label"] for _, tun, ctl, _ in vs if tun["block_size_x"] != 16 or tun["block_size_y"] != 16]
assert moved and any(", " in l for l in moved), [ctl["label"] for _, _, ctl, _ in vs]
print("restricted: %d variants, all allowed; block sizes moved in %d" % (len(vs), len(moved)))
# without the restriction the same search builds variants that break it, and they fail
fv = variants(free)
broken = [(v, res["status"]) for v, tun, _, res in fv if not allowed(tun)]
assert broken, "the unrestricted search broke nothing: this test could not fail"
assert any(s in ("wrong_result", "fault") for _, s in broken), broken
print("unrestricted: %d of %d variants break it: %s" % (len(broken), len(fv), broken))
PY
echo "1 passed, 0 failed"
