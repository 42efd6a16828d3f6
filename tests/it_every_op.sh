#!/usr/bin/env bash
# Every phase for the GEMM op on the host emulator (issue 14): cutune tune --gemm -> export (kernels/gemm/, a
# standalone project) -> report --gemm -> energy of the GEMM's representatives against the fake libnvidia-ml
# ($CUTUNE_FAKE_NVML), with a conv case beside it in the same folders so that each phase takes every op it finds.
set -euo pipefail
BIN=$1; DIR=$2
KERNELS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/kernels
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
[ -n "${CUTUNE_FAKE_NVML:-}" ] || { echo "SKIP: CUTUNE_FAKE_NVML is not set (run through ctest)"; exit 77; }

"$BIN" tune --gemm M=64 N=48 K=40 t=12 --backend emu --quiet --outdir . > tune_gemm.out
[ -f tuningresults/gemm_nn_fp32_M_64_N_48_K_40.json ] || fail "no GEMM results"
ngemm=$(wc -l < tuningresults/gemm_nn_fp32_M_64_N_48_K_40.json)
[ "$ngemm" -eq 5 ] || fail "expected the 5 best GEMM kernels in tuningresults, got $ngemm"

# export with GEMMs only
"$BIN" export --outdir . > export.out || { cat export.out; fail "export of a GEMM-only results folder"; }
grep -q "^exported 5 GEMM kernel(s) of 1 GEMM(s) to ./kernels/gemm" export.out || { cat export.out; fail "export line"; }
for k in 1 2 3 4 5; do
    for ext in cu cuh; do
        [ -f kernels/gemm/gemm_nn_fp32_M_64_N_48_K_40/kernel$k.$ext ] || fail "kernel$k.$ext missing"
    done
    grep -q "cut_gemm1_k$k(" kernels/gemm/gemm_nn_fp32_M_64_N_48_K_40/kernel$k.cuh || fail "entry of kernel $k not renamed"
done
grep -q "add_subdirectory(gemm)" kernels/CMakeLists.txt || fail "top CMakeLists does not add the GEMM project"
[ "$(wc -l < kernels/gemm/gemm_metadata.csv)" -eq 6 ] || fail "gemm_metadata.csv rows"
[ ! -f kernels/driver.cu ] || fail "a conv driver without conv kernels"
# seed 001's run scripts for the GEMM too (issue 16): scripts/<gemm name>/, run_layer_<gemm name>.sh, run_all.sh
G=gemm_nn_fp32_M_64_N_48_K_40
for k in 1 2 3 4 5; do for p in 1 2 3 4 5; do
    f=scripts/$G/run_kernel${k}_powercap$p.sh
    [ -x "$f" ] && bash -n "$f" || fail "$f missing, not executable or not bash"
    grep -q -- "energy --outdir . --gemm 1 --kernel $k --power-cap-index $p \"\$@\"" "$f" || fail "$f: energy call"
done; done
[ -x run_layer_$G.sh ] && grep -q -- '--gemm 1 --power-cap-index "$p"' run_layer_$G.sh || fail "run_layer_$G.sh"
grep -q "^bash ./run_layer_$G.sh" run_all.sh || fail "run_all.sh does not run the GEMM"
[ ! -e kernel_metadata.csv ] && grep -q "add_subdirectory(kernels)" CMakeLists.txt || fail "GEMM-only root files"

# a conv case beside it: export takes both ops
"$BIN" tune --backend emu --conv 1,8,8,8,4,3,3,1,1 --trials 8 --batch 8 --quiet --outdir . > tune_conv.out
"$BIN" export --outdir . > export2.out
grep -q "^exported .* kernel(s) of 1 case(s) to ./kernels" export2.out || { cat export2.out; fail "conv export line"; }
# tune's closing sample step samples every op's logs: the GEMM's representatives are now up to 25, not the 5 best
ng=$(wc -l < tuningresults/gemm_nn_fp32_M_64_N_48_K_40.json)
[ "$ng" -ge 5 ] || fail "the GEMM's representatives shrank to $ng"
grep -q "^exported $ng GEMM kernel(s)" export2.out || fail "GEMMs left out when conv results are present"
[ -f kernels/driver.cu ] && [ -f kernels/gemm/driver.cu ] || fail "both drivers expected"
[ -x scripts/case1/run_kernel1_powercap1.sh ] && [ -x scripts/$G/run_kernel1_powercap1.sh ] || fail "scripts of both ops"
[ -x run_layer_case1.sh ] && [ "$(grep -c '^bash ./run_layer_' run_all.sh)" = 2 ] || fail "run_all.sh of both ops"
cmp -s kernel_metadata.csv kernels/kernel_metadata.csv || fail "root kernel_metadata.csv"
grep -q "add_subdirectory(gemm)" kernels/CMakeLists.txt || fail "conv CMakeLists does not add the GEMM project"

# report
"$BIN" report --gemm --outdir . > report.out || fail "report --gemm"
grep -q "64" report/gemm.md || fail "report/gemm.md lacks the GEMM"

# energy of the representatives of both ops at the current cap, fake NVML
export CUTUNE_NVML_LIB=$CUTUNE_FAKE_NVML
export FAKE_NVML_GPUS="NVIDIA H200:600000:200000:700000"
export FAKE_NVML_STATE=$PWD/nvml.state FAKE_NVML_LOG=$PWD/nvml.log FAKE_NVML_ENERGY=300:10
"$BIN" energy --backend emu --test --warmup 0.02 --power-caps current > energy.out 2> energy.err || {
    cat energy.out energy.err; fail "energy"; }
nconv=$(wc -l < "$(ls tuningresults/case*.json)")
grep -q "^measured $((nconv + ng)) kernel(s) at 1 cap(s)" energy.out || { cat energy.out; fail "energy summary"; }
python3 - <<'PY' || fail "GEMM energy files"
import csv, json
d = "kernel_outputs/gemm_nn_fp32_M_64_N_48_K_40/"
rows = list(csv.reader(open(d + "powercap1/results.csv")))
assert rows[0] == ["id", "perf(GFLOP/s)", "energy(mJ)", "EDP(ms*mJ)"], rows[0]
ng = sum(1 for _ in open("tuningresults/gemm_nn_fp32_M_64_N_48_K_40.json"))
ids = [str(i) for i in range(1, ng + 1)]
assert [r[0] for r in rows[1:]] == ids, rows
lines = [json.loads(l) for l in open(d + "powercap1/energy.jsonl")]
assert [l["id"] for l in lines] == list(range(1, ng + 1)), lines
for r, l in zip(rows[1:], lines):
    perf, energy, edp = map(float, r[1:])
    # GFLOP/s of a 64x48x40 GEMM on the emulator can round to 0.00 (a sanitizer build is slow); energy cannot be 0
    assert perf >= 0 and energy > 0 and edp > 0, r
    assert abs(l["power_w"] - 300) < 30, l  # the fake board draws 300 W
allrows = list(csv.reader(open(d + "all.csv")))
assert [r[0] for r in allrows[1:]] == ids, allrows
PY
[ ! -f nvml.log ] || ! grep -q set_limit nvml.log || fail "the current cap was changed"
# one GEMM kernel at cap 5 through its script: powercap5/ gets it, powercap1/ keeps every kernel, all.csv has both
CUTUNE_STATE_DIR=$PWD/state CUTUNE=$BIN bash scripts/$G/run_kernel2_powercap5.sh --backend emu --test --warmup 0.02 \
    --allow-power-cap > gs.out 2>&1 || { cat gs.out; fail "GEMM run script"; }
python3 - <<'PY' || fail "GEMM run script files"
import csv
d = "kernel_outputs/gemm_nn_fp32_M_64_N_48_K_40/"
assert "Power limit: 700.0 W" in open(d + "powercap5/output_kernel2.txt").read()
assert [r[0] for r in csv.reader(open(d + "powercap5/results.csv"))] == ["id", "2"]
ng = sum(1 for _ in open("tuningresults/gemm_nn_fp32_M_64_N_48_K_40.json"))
assert len(list(csv.reader(open(d + "powercap1/results.csv")))) == ng + 1
allrows = list(csv.reader(open(d + "all.csv")))
assert len(allrows[0]) == 16 and len(allrows) == ng + 1, allrows[0]
assert all(r[13] == "" for r in allrows[1:] if r[0] != "2") and [r for r in allrows if r[0] == "2"][0][13] != ""
PY
# an optimized user kernel: optimize -> export --optimized -> energy of its baseline and best, fake NVML
"$BIN" optimize --input "$KERNELS/softmax_row.json" --outdir opt --backend emu --no-llm --budget-builds 4 \
    --sizes ROWS=8,COLS=256 > opt.log 2>&1 || { cat opt.log; fail "optimize"; }
"$BIN" export --optimized opt --outdir opt_exp > opt_exp.log || { cat opt_exp.log; fail "export --optimized"; }
[ -f opt_exp/kernels/opt/softmax_row/best.cuh ] && [ -f opt_exp/kernels/opt/softmax_row/driver.cu ] ||
    fail "export --optimized: no project"
"$BIN" energy --optimized opt --outdir opt --backend emu --test --warmup 0.02 --power-caps current > opt_e.out \
    2> opt_e.err || { cat opt_e.out opt_e.err; fail "energy --optimized"; }
grep -q "^measured 2 kernel(s) at 1 cap(s)" opt_e.out || { cat opt_e.out; fail "energy --optimized summary"; }
python3 - <<'PY' || fail "energy --optimized files"
import csv, json
d = "opt/kernel_outputs/opt_softmax_row/powercap1/"
rows = list(csv.reader(open(d + "results.csv")))
assert [r[0] for r in rows[1:]] == ["1", "2"], rows  # 1 the baseline, 2 the best variant
for l in (json.loads(x) for x in open(d + "energy.jsonl")):
    assert abs(l["power_w"] - 300) < 30 and l["energy_mj"] and min(l["energy_mj"]) > 0, l
PY
rc=0; "$BIN" energy --optimized nowhere --backend emu --power-caps current > bad_e.out 2> bad_e.err || rc=$?
[ "$rc" -eq 2 ] && grep -q "nowhere" bad_e.err || { cat bad_e.err; fail "energy --optimized of a missing folder"; }

# tune --gemm --final 2: the 2 best re-timed (no vendor baseline under emulation), a line in final.jsonl with the
# GEMM's FLOPs and bytes moved (A and B read once, C written once, fp32)
"$BIN" tune --gemm M=32 N=24 K=16 t=8 --final 2 --backend emu --quiet --outdir fin > fin.out || fail "tune --gemm --final"
grep -q "^gemm_nn_fp32_M_32_N_24_K_16: cutune .* ms (best of top 2 re-timed)" fin.out || { cat fin.out; fail "final line"; }
python3 - fin/final.jsonl <<'PY' || fail "gemm final.jsonl"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
assert r["op"] == "gemm" and r["workload"] == "gemm_nn_fp32_M_32_N_24_K_16" and r["retimed"] == 2, r
assert r["cutune_ms"] > 0 and r["trials"] == 8, r
assert r["baseline"] is None and r["baseline_ms"] is None and r["speedup"] is None, r  # none under emulation
assert r["bytes"] == 4 * (32 * 16 + 16 * 24 + 32 * 24), r
assert abs(r["cutune_gflops"] - 2 * 32 * 24 * 16 / r["cutune_ms"] / 1e6) < 0.06, r
assert r["best_sched"]["tpl"] == "simt", r
PY

# strategies are orthogonal to ops: random on a GEMM, and exhaustive refused (clearly) on a space too large
"$BIN" tune --gemm M=32 N=16 K=8 t=6 --strategy random --backend emu --quiet --outdir strat > strat.out ||
    fail "tune --gemm --strategy random"
[ "$(wc -l < strat/tuningrecords/gemm_nn_fp32_M_32_N_16_K_8.json)" -eq 6 ] || fail "random strategy: 6 records"
if "$BIN" tune --conv 1,8,8,8,4,3,3,1,1 --trials 4 --strategy exhaustive --backend emu --quiet --outdir strat \
    > ex.out 2> ex.err; then fail "an exhaustive conv search should be refused"; fi
grep -q "cannot be enumerated: use --strategy evolve or random" ex.err || { cat ex.err; fail "exhaustive message"; }
rc=0; "$BIN" tune --conv 1,8,8,8,4,3,3,1,1 --strategy annealing --backend emu > bad.out 2> bad.err || rc=$?
[ "$rc" -eq 2 ] && grep -q "unknown strategy 'annealing'" bad.err || fail "--strategy annealing: exit 2 naming it"
echo "OK"
