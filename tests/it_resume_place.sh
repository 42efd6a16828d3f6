#!/usr/bin/env bash
# Resume refuses a log of another backend or GPU (issue 16): the times of an H100 and of the CPU emulator do not
# belong in one log, and another GPU's trials are not this one's. An emulated tune on top of a log holding a line of
# the "cuda" backend (written by hand, as a GPU run writes it), or of an emulator line naming another GPU, exits
# non-zero naming both places and what to do, and leaves the log byte for byte as it was.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
T="tune --backend emu --workloads tiny --case 1 --batch 3 --quiet --no-sample"
"$BIN" $T --trials 3 --outdir out > first.out 2>&1 || { cat first.out; fail "first run"; }
log=$(ls out/tuningrecords/case1_*.json)
# the same backend resumes, as always
"$BIN" $T --trials 5 --outdir out > same.out 2>&1 || { cat same.out; fail "a resume on the same backend"; }
[ "$(wc -l < "$log")" -eq 5 ] || fail "the same-backend resume did not reach 5 trials"
refused() { # refused NAME PATTERN: the run fails, says PATTERN, and the log is unchanged
    local sum; sum=$(md5sum < "$log")
    if "$BIN" $T --trials 8 --outdir out > "$1.out" 2> "$1.err"; then cat "$1.err"; fail "$1: resumed"; fi
    grep -q "$2" "$1.err" || { cat "$1.err"; fail "$1: stderr lacks /$2/"; }
    grep -q "Use another --outdir, or move the log away" "$1.err" || { cat "$1.err"; fail "$1: no way out said"; }
    [ "$(md5sum < "$log")" = "$sum" ] || fail "$1: the log changed"
    echo "ok: $1: $(cat "$1.err" | tail -1)"
}
# a line of the cuda backend on an H100, appended as a GPU run writes it (the first line with backend and gpu changed)
python3 - "$log" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
r = json.loads(lines[0])
r["trial"] = len(lines)
r["backend"] = "cuda"
r["gpu"].update(name="NVIDIA H100 80GB HBM3", uuid="GPU-5e1f0e36-0000-4000-8000-000000000001", driver="580.95.05",
                driver_version=13000, sm_clock_mhz=1980, power_limit_w=700)
open(sys.argv[1], "a").write(json.dumps(r) + "\n")
PY
refused cuda "holds trials measured on backend cuda, GPU 'NVIDIA H100 80GB HBM3' (GPU-5e1f0e36-0000-4000-8000-000000000001) (trial 5 is the first), and this run measures on the host emulator (backend emu, 'host-emulation')"
# an emulator line of another machine's name
sed -i '$d' "$log"
python3 - "$log" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
r = json.loads(lines[-1])
r["trial"] = len(lines)
r["gpu"]["name"] = "another-emulator"
open(sys.argv[1], "a").write(json.dumps(r) + "\n")
PY
refused emu_other "holds trials measured on the host emulator (backend emu, 'another-emulator') (trial 5 is the first)"
echo "1 passed, 0 failed"
