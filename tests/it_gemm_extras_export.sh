#!/usr/bin/env bash
# GEMMs with issue 21's extras through tune -> export -> energy, on the emulator and the fake NVML: a batched TN fp16
# GEMM with alpha 0.5 and beta 0.25 tuned with the gemv template, a batched TT bf16 one with the mma template (both
# reading Cin) and a batched TT fp32 one with alpha 2 and beta 0 (simt) are tuned; exported (launchers with Cin after
# C exactly for the first two, split-K kernels marked "one launch at a time", driver rows with batch, alpha and beta,
# gemm_metadata.csv's last columns); every exported kernel measured by cutune energy at the limit in force, each
# checked against the reference with its batch, layout, alpha and Cin (none may fail); one through its run script at
# cap 2, the limit restored. The energy reads a fake counter that follows the host clock: ctest runs this alone.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
[ -n "${CUTUNE_FAKE_NVML:-}" ] || { echo "SKIP: CUTUNE_FAKE_NVML is not set (run through ctest)"; exit 77; }
export CUTUNE_NVML_LIB=$CUTUNE_FAKE_NVML
export FAKE_NVML_GPUS="NVIDIA H200:600000:200000:700000"
export FAKE_NVML_STATE=$PWD/nvml.state FAKE_NVML_LOG=$PWD/nvml.log FAKE_NVML_ENERGY=300:10
export CUTUNE_STATE_DIR=$PWD/state
FAST="--backend emu --test --warmup 0.02"
G1=gemm_tn_fp16_M_2_N_64_K_512_batch_3_alpha_0.5_beta_0.25
G2=gemm_tt_fp32_M_20_N_24_K_40_batch_2_alpha_2_beta_0
G3=gemm_tt_bf16_M_16_N_32_K_96_batch_2_alpha_0.5_beta_0.25

tune() { # name, words, trials, args...
  local name=$1 words=$2 t=$3; shift 3
  "$BIN" tune --gemm "$words t=$t" --backend emu --quiet --outdir . "$@" > "$name.out"
  grep -qE "^$name: $t trials \($t new, 0 failed\)" "$name.out" || { cat "$name.out"; fail "tune $name"; }
}
tune $G1 "M=2 N=64 K=512 batch=3 alpha=0.5 beta=0.25 layout=tn" 10 --dtype fp16 --tpl gemv --seed 3
tune $G2 "M=20 N=24 K=40 batch=2 alpha=2 layout=tt" 6 --seed 4
tune $G3 "M=16 N=32 K=96 batch=2 alpha=0.5 beta=0.25 layout=tt" 6 --dtype bf16 --tpl mma --seed 5
n=$(cat tuningresults/$G1.json tuningresults/$G2.json tuningresults/$G3.json | wc -l)

"$BIN" export --outdir . > export.out || { cat export.out; fail "export"; }
grep -q "^exported $n GEMM kernel(s) of 3 GEMM(s) to ./kernels/gemm" export.out || { cat export.out; fail "export line"; }
python3 - "$G1" "$G2" "$G3" <<'PY' || fail "exported launchers / driver / CSV"
import csv, re, sys
g1, g2, g3 = sys.argv[1:4]
hdr = open("kernels/cutune_kernels.h").read()
decl = re.findall(r"// gemm (\d+) \((\S+)\) kernel (\d+)([^\n]*)\nint launch_gemm\1_k\3\((.*?)\);", hdr)
assert decl, hdr[-800:]
names, serial = set(), 0
for gid, name, k, note, params in decl:
    names.add(name)
    cin = name != g2
    want = "const void *A, const void *B, float *C" + (", const float *Cin" if cin else "") + ", cudaStream_t s"
    assert params == want, (name, params)
    cu = open("kernels/gemm/%s/kernel%s.cu" % (name, k)).read()
    assert ("C, Cin);" in cu) == cin, (name, k)
    assert ("// batch 3:" if name == g1 else "// batch 2:") in cu
    assert ("// layout tn: A is K x M" if name == g1 else "// layout tt: A is K x M (op(A) = A^T), B is N x K") in cu
    split = re.search(r"splitk=(\d+)", cu)
    marked = note.endswith("; one launch at a time")
    assert marked == (split is not None and int(split.group(1)) > 1), (name, k, note)
    assert marked == ("// One launch at a time: this split-K kernel keeps" in cu), (name, k)
    serial += marked
assert names == {g1, g2, g3}, names
assert serial > 0, "no split-K kernel among the exported ones"
drv = open("kernels/gemm/driver.cu").read()
assert re.search(r"\{\d+, 2, 64, 512, TN, DT_FP16, 3, 0.5, 0.25, \"%s\"\}" % g1, drv)
assert re.search(r"\{\d+, 20, 24, 40, TT, DT_FP32, 2, 2, 0, \"%s\"\}" % g2, drv)
assert re.search(r"\{\d+, 16, 32, 96, TT, DT_BF16, 2, 0.5, 0.25, \"%s\"\}" % g3, drv)
for r in csv.DictReader(open("kernels/gemm/gemm_metadata.csv")):
    if r["dtype"] == "fp16":
        assert (r["batch"], r["alpha"], r["beta"], r["template"]) == ("3", "0.5", "0.25", "gemv"), r
    elif r["dtype"] == "bf16":
        assert (r["batch"], r["alpha"], r["beta"], r["template"]) == ("2", "0.5", "0.25", "mma"), r
    else:
        assert (r["batch"], r["alpha"], r["beta"]) == ("2", "2", "0"), r
PY

# energy of every exported kernel at the limit in force: each is checked (Cin, batch, layout) before it is measured
"$BIN" energy $FAST --power-caps current > energy.out 2> energy.err || { cat energy.out energy.err; fail "energy"; }
grep -q "^measured $n kernel(s) at 1 cap(s) into ./kernel_outputs; 0 failed" energy.out ||
  { cat energy.out energy.err; fail "energy summary"; }
[ ! -s nvml.log ] || fail "the current cap changed the limit: $(cat nvml.log)"
for g in $G1 $G2 $G3; do
  rows=$(tail -n +2 kernel_outputs/$g/powercap1/results.csv | wc -l)
  want=$(wc -l < tuningresults/$g.json)
  [ "$rows" -eq "$want" ] || fail "$g: $rows result rows, want $want"
  grep -q "^GFLOP/s: " kernel_outputs/$g/powercap1/output_kernel1.txt || fail "$g: output_kernel1.txt"
done

# export's run script of one kernel at cap 2 (325 W on the fake H200), then the original 600 W back
CUTUNE=$BIN bash scripts/$G1/run_kernel1_powercap2.sh --allow-power-cap $FAST > script.out 2>&1 ||
  { cat script.out; fail "run script"; }
grep -q "0 failed" script.out || { cat script.out; fail "run script: a kernel failed"; }
printf 'set_limit 0 325000\nset_limit 0 600000\n' > want.log
diff want.log nvml.log || fail "cap 2 not set and restored"
grep -q "^GFLOP/s: " kernel_outputs/$G1/powercap2/output_kernel1.txt || fail "powercap2/output_kernel1.txt"
echo OK
