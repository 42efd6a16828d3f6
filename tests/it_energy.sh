#!/usr/bin/env bash
# cutune energy end to end against the fake libnvidia-ml ($CUTUNE_FAKE_NVML): tune tiny shapes on the emulator ->
# energy at all 5 caps of a fake H200 -> seed 001's files (output_kernelK.txt, results.csv, all.csv) checked; caps
# set in order and the original limit restored; refusals (no --allow-power-cap, out of range) change nothing;
# SIGTERM in the middle of a capped run restores the limit; after a SIGKILL the next GPU command (`cutune devices`)
# restores it from the per-user state folder ($CUTUNE_STATE_DIR); the run scripts of cutune export (one kernel at one
# cap each, merged into seed 001's files; run_layer_caseN.sh); clean removes kernel_outputs/.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
[ -n "${CUTUNE_FAKE_NVML:-}" ] || { echo "SKIP: CUTUNE_FAKE_NVML is not set (run through ctest)"; exit 77; }
export CUTUNE_NVML_LIB=$CUTUNE_FAKE_NVML
export FAKE_NVML_GPUS="NVIDIA H200:600000:200000:700000"  # booted at 600 W, so a restore is visible
export FAKE_NVML_STATE=$PWD/nvml.state FAKE_NVML_LOG=$PWD/nvml.log FAKE_NVML_ENERGY=300:10
export CUTUNE_STATE_DIR=$PWD/state  # restore files and locks, per GPU (per user outside tests)
limit() { if [ -f nvml.state ]; then awk '$1 == 0 {print $2}' nvml.state; else echo 600000; fi; }
FAST="--backend emu --test --warmup 0.02"

"$BIN" tune --backend emu --workloads tiny --trials 16 --batch 8 --test --quiet --outdir . >/dev/null
n=$(ls tuningresults/*.json | wc -l); [ "$n" -eq 2 ] || fail "expected 2 result files (test mode), got $n"

"$BIN" energy $FAST --detect | tee detect.out
grep -q "^GPU: NVIDIA H200" detect.out || fail "--detect: GPU line"
grep -q "^caps (all): 200 W 325 W 450 W 575 W 700 W" detect.out || fail "--detect: caps line"

# Refusals: exit 2, one sentence, nothing changed or written.
set +e
"$BIN" energy $FAST --power-caps all 2>err.txt; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "all caps without --allow-power-cap: exit $rc"
grep -q -- "--allow-power-cap" err.txt || fail "refusal does not name --allow-power-cap: $(cat err.txt)"
set +e
"$BIN" energy $FAST --power-caps 150 --allow-power-cap 2>err.txt; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "150 W (below 200 W): exit $rc"
grep -q "150" err.txt || fail "range error does not name the cap: $(cat err.txt)"
[ ! -s nvml.log ] || fail "a refused run changed the limit: $(cat nvml.log)"
[ ! -d kernel_outputs/case1 ] || fail "a refused run wrote results"

# All 5 caps, in order, then the original 600 W back.
"$BIN" energy $FAST --power-caps all --allow-power-cap | tee energy.out
printf 'set_limit 0 200000\nset_limit 0 325000\nset_limit 0 450000\nset_limit 0 575000\nset_limit 0 700000\nset_limit 0 600000\n' > want.log
diff want.log nvml.log || fail "caps not set in order and restored"
[ "$(limit)" = 600000 ] || fail "limit not restored: $(limit)"
! ls state/powercap_*.json 2>/dev/null || fail "restore file left behind"
grep -q "^measured 4 kernel(s) at 5 cap(s)" energy.out || fail "summary line"

python3 - <<'PY' || fail "kernel_outputs files"
import csv, glob, json, re
caps = list(csv.reader(open("kernel_outputs/powercaps.csv")))
assert caps[0] == ["powercap", "limit_w"] and [float(r[1]) for r in caps[1:]] == [200, 325, 450, 575, 700], caps
HEAD = ["id", "perf(GFLOP/s)", "energy(mJ)", "EDP(ms*mJ)"]
cases = sorted(glob.glob("kernel_outputs/case*/"))
assert len(cases) == 2, cases
for c in cases:
    allrows = list(csv.reader(open(c + "all.csv")))
    assert allrows[0] == ["id"] + HEAD[1:] * 5 and len(allrows[0]) == 16, allrows[0]
    assert [r[0] for r in allrows[1:]] == ["1", "2"], allrows
    for p in range(1, 6):
        d = "%spowercap%d/" % (c, p)
        rows = list(csv.reader(open(d + "results.csv")))
        assert rows[0] == HEAD, rows[0]
        assert [r[0] for r in rows[1:]] == ["1", "2"]
        lines = [json.loads(l) for l in open(d + "energy.jsonl")]
        assert [l["id"] for l in lines] == [1, 2] and all(l["power_limit_w"] == float(caps[p][1]) for l in lines)
        for r, l in zip(rows[1:], lines):
            perf, energy, edp = map(float, r[1:])
            # the fake board draws 300 W: energy per iteration = 300 W x (wall) time per iteration
            assert abs(l["power_w"] - 300) < 300 * 0.1, l
            assert abs(edp - l["mean_time_ms"] * energy) <= 1e-6 * max(edp, 1e-9) + 1e-8, (edp, l)
            assert len(l["time_ms"]) == 1 and len(l["energy_mj"]) == 1, l  # --test: one lround
            # all.csv carries the same numbers in this cap's three columns
            row = [x for x in allrows if x[0] == r[0]][0]
            assert row[1 + 3 * (p - 1): 4 + 3 * (p - 1)] == r[1:], (row, r)
            txt = open(d + "output_kernel%s.txt" % r[0]).read()
            m = [re.search(pat, txt) for pat in (r"GFLOP/s: ([0-9.]+)", r"Mean energy per iteration: ([0-9.]+) mJ",
                                                r"Mean time per iteration: ([0-9.]+) ms")]
            assert all(m), txt
            assert abs(float(m[1].group(1)) - energy) < 1e-3 * energy + 1e-4, (txt, energy)
            assert "Power limit: %.1f W" % float(caps[p][1]) in txt
PY

# cutune report reads what energy wrote: one table per case and cap, each cap's limit in its title.
"$BIN" report --no-plots > report.out
for c in 1 3; do for p in 1 2 3 4 5; do
  grep -q "^### case $c, power cap $p (" report/summary.md || fail "report lacks case $c cap $p"
done; done
grep -q "^### case 1, power cap 5 (700.0 W): 2 kernel(s)" report/summary.md || fail "report cap 5 title"

# capped_run OUT: a long capped run in the background ($pid), returned once it has set 250 W.
capped_run() {
  : > nvml.log
  "$BIN" energy --backend emu --warmup 0.02 --lrounds 16 --min-steps 100 --power-caps 250,300 --allow-power-cap \
    > "$1" 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do grep -q "set_limit 0 250000" nvml.log 2>/dev/null && break; sleep 0.05; done
  grep -q "set_limit 0 250000" nvml.log || { kill -9 $pid; fail "capped run never set 250 W"; }
}

# SIGTERM while capped: the handler restores 600 W and the process dies of the signal.
capped_run term.out
kill -TERM $pid
set +e; wait $pid; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "SIGTERM'd run exited 0"
[ "$(limit)" = 600000 ] || fail "limit after SIGTERM: $(limit) (log: $(cat nvml.log))"
[ "$(tail -1 nvml.log)" = "set_limit 0 600000" ] || fail "last change is not the restore: $(cat nvml.log)"
! ls state/powercap_*.json 2>/dev/null || fail "restore file left after SIGTERM"

# SIGKILL: nothing in the process runs; the restore file stays, and the next command that touches a GPU restores.
capped_run kill.out
kill -KILL $pid
wait $pid 2>/dev/null || true
[ "$(limit)" = 250000 ] || [ "$(limit)" = 300000 ] || fail "limit after SIGKILL: $(limit)"
ls state/powercap_*.json > /dev/null || fail "no restore file after SIGKILL"
"$BIN" devices > devices.out 2>&1 || true
[ "$(limit)" = 600000 ] || fail "the next command did not restore: $(limit) ($(cat devices.out))"
grep -q "restored the power limit of GPU" devices.out || fail "no word of the restore: $(cat devices.out)"
! ls state/powercap_*.json 2>/dev/null || fail "restore file left after the recovery"

# Seed 001's run scripts (cutune export, issue 16): one kernel at one cap each, into that cap's folder, the other
# kernels' rows kept; a cap not in force is refused without --allow-power-cap; run_layer_caseN.sh does every cap.
mkdir proj && cp -r tuningresults proj/ && "$BIN" export --outdir proj >/dev/null
S="--backend emu --test --warmup 0.02"
: > nvml.log
set +e; CUTUNE=$BIN bash proj/scripts/case1/run_kernel1_powercap3.sh $S >out.txt 2>err.txt; rc=$?; set -e
[ "$rc" -eq 2 ] || fail "a script without --allow-power-cap at a cap not in force: exit $rc"
grep -q "power cap 3 of --power-caps all (450.0 W) differs from NVIDIA H200's power limit in force (600.0 W)" err.txt ||
  fail "refusal: $(cat err.txt)"
[ ! -e proj/kernel_outputs/case1 ] && [ ! -s nvml.log ] || fail "a refused script measured or changed something"
refuse_energy() { # NEEDLE ARGS...: cutune energy exits 2 naming NEEDLE
  local needle=$1; shift
  set +e; "$BIN" energy --outdir proj $S "$@" >out.txt 2>err.txt; rc=$?; set -e
  [ "$rc" -eq 2 ] && grep -q -- "$needle" err.txt || fail "energy $*: exit $rc, $(cat err.txt)"
}
refuse_energy "has 5 cap(s)" --power-cap-index 6 --allow-power-cap
refuse_energy "--power-caps current measures at the limit in force" --power-caps current --power-cap-index 2
refuse_energy "give one of them" --case 1 --gemm 1
# kernel 1 from another folder with the exporting binary (no $CUTUNE), then kernel 2 run as a program
(cd / && bash "$DIR/proj/scripts/case1/run_kernel1_powercap3.sh" $S --allow-power-cap) > k1.out
CUTUNE=$BIN proj/scripts/case1/run_kernel2_powercap3.sh $S --allow-power-cap > k2.out
printf 'set_limit 0 450000\nset_limit 0 600000\nset_limit 0 450000\nset_limit 0 600000\n' > want.log
diff want.log nvml.log || fail "the scripts did not set cap 3 (450 W) and restore 600 W"
grep -q "^case1 kernel  1 @ 450 W" k1.out && grep -q "^case1 kernel  2 @ 450 W" k2.out || fail "script output"
check_proj() { # check_proj KIND: kernel_outputs/ of proj after the scripts
python3 - "$1" <<'PY' || fail "kernel_outputs of the run scripts ($1)"
import csv, glob, json, os, sys
kind = sys.argv[1]
HEAD = ["id", "perf(GFLOP/s)", "energy(mJ)", "EDP(ms*mJ)"]
o = "proj/kernel_outputs/"
caps = list(csv.reader(open(o + "powercaps.csv")))
want_caps = {"one": [["3", "450.000"]],
             "layer": [[str(p), "%.3f" % w] for p, w in zip(range(1, 6), (200, 325, 450, 575, 700))]}[kind]
assert caps == [["powercap", "limit_w"]] + want_caps, caps
def check_case(case, ps, ncols):
    c = o + "case%d/" % case
    assert sorted(glob.glob(c + "powercap*")) == [c + "powercap%d" % p for p in ps], glob.glob(c + "*")
    allrows = list(csv.reader(open(c + "all.csv")))
    assert allrows[0] == ["id"] + HEAD[1:] * ncols, allrows[0]
    assert [r[0] for r in allrows[1:]] == ["1", "2"], allrows
    for p in ps:
        d = c + "powercap%d/" % p
        rows = list(csv.reader(open(d + "results.csv")))
        assert rows[0] == HEAD and [r[0] for r in rows[1:]] == ["1", "2"], (d, rows)
        lines = [json.loads(l) for l in open(d + "energy.jsonl")]
        assert sorted(l["id"] for l in lines) == [1, 2], lines
        limit = float(dict(caps[1:])[str(p)])
        assert all(l["power_limit_w"] == limit for l in lines), lines
        for r in rows[1:]:
            assert "Power limit: %.1f W" % limit in open(d + "output_kernel%s.txt" % r[0]).read()
            row = [x for x in allrows if x[0] == r[0]][0]
            assert row[1 + 3 * (p - 1): 4 + 3 * (p - 1)] == r[1:], (row, r)
        for q in range(1, ncols + 1):
            if q not in ps:
                assert all(x[1 + 3 * (q - 1): 4 + 3 * (q - 1)] == ["", "", ""] for x in allrows[1:]), allrows
if kind == "one":
    check_case(1, [3], 3)
    assert not os.path.exists(o + "case3"), "a case-1 script measured case 3"
else:
    check_case(1, [3], 3)
    check_case(3, [1, 2, 3, 4, 5], 5)
PY
}
check_proj one
# re-measuring kernel 1 keeps kernel 2's row; the folder can be moved (the scripts find their project)
k2row=$(grep '^2,' proj/kernel_outputs/case1/powercap3/results.csv)
mv proj proj2 && CUTUNE=$BIN bash proj2/scripts/case1/run_kernel1_powercap3.sh $S --allow-power-cap >/dev/null && mv proj2 proj
[ "$(grep '^2,' proj/kernel_outputs/case1/powercap3/results.csv)" = "$k2row" ] || fail "re-measuring kernel 1 lost kernel 2"
check_proj one
: > nvml.log
CUTUNE=$BIN bash proj/run_layer_case3.sh $S --allow-power-cap > layer.out
[ "$(grep -c "^set_limit 0 600000" nvml.log)" = 5 ] && [ "$(grep -c '^measured 2 kernel(s) at 1 cap(s)' layer.out)" = 5 ] ||
  fail "run_layer_case3.sh: $(cat nvml.log layer.out)"
check_proj layer
"$BIN" clean --outdir proj > clean.out
[ "$(ls -A proj | grep -v '^.cutune_emu$' | tr '\n' ' ')" = "tuningresults " ] || fail "clean left in proj: $(ls -A proj)"

"$BIN" clean | tee clean.out
[ ! -d kernel_outputs ] || fail "clean left kernel_outputs/"
[ -d tuningrecords ] && [ -d tuningresults ] || fail "clean removed tuning data"
echo "it_energy: ok"
