#!/usr/bin/env bash
# Fused-epilogue conv kernels through every phase after tune (issue 20), on the emulator and the fake NVML: tune
# --dtype fp16 --layout nhwc --epilogue bias_relu on the tiny list -> sample -> export (each launcher takes the bias
# after out, the driver tables the case's types and calls the kernel with the bias) -> energy of every exported
# kernel at the current limit (each checked against the reference with its epilogue: none may fail) -> one of
# export's run scripts at another cap, the original limit restored. The energy reads a fake counter that follows
# the host clock: ctest runs this alone.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
[ -n "${CUTUNE_FAKE_NVML:-}" ] || { echo "SKIP: CUTUNE_FAKE_NVML is not set (run through ctest)"; exit 77; }
command -v c++ >/dev/null || command -v g++ >/dev/null || { echo "no host C++ compiler: skipped"; exit 77; }
export CUTUNE_NVML_LIB=$CUTUNE_FAKE_NVML
export FAKE_NVML_GPUS="NVIDIA H200:600000:200000:700000"
export FAKE_NVML_STATE=$PWD/nvml.state FAKE_NVML_LOG=$PWD/nvml.log FAKE_NVML_ENERGY=300:10
export CUTUNE_STATE_DIR=$PWD/state
FAST="--backend emu --test --warmup 0.02"

"$BIN" tune --backend emu --workloads tiny --dtype fp16 --layout nhwc --epilogue bias_relu --trials 6 --batch 3 \
  --test --quiet --outdir . >tune.out
ls tuningrecords/*_dtype_fp16_layout_NHWC_epi_bias_relu.json >/dev/null || fail "no epilogue logs"
"$BIN" sample >/dev/null
# the measured representatives the export launches (it leaves wgmma_conv kernels out, CI % 8 == 0 cases)
nres=$(cat tuningresults/*.json | grep '"status":"ok"' | grep -vc '"tpl":"wgmma_conv"')
[ "$nres" -ge 2 ] || fail "fewer than 2 measured representatives ($nres)"

"$BIN" export | tee export.out
grep -q "^exported $nres kernel(s) of 2 case(s)" export.out || fail "export summary (want $nres kernels)"
python3 - <<'PY' || fail "exported launchers / driver"
import glob, re
hdr = open("kernels/cutune_kernels.h").read()
decl = re.findall(r"int launch_case(\d+)_k(\d+)\((.*?)\);", hdr)
assert decl, hdr[:400]
for c, k, params in decl:
    assert params == "const void *in, const void *w, void *out, const void *bias, cudaStream_t s", params
    cu = open("kernels/case%s/kernel%s.cu" % (c, k)).read()
    assert ", cut_in(f, bias)" in cu, "case %s kernel %s: the launch does not pass the bias" % (c, k)
    assert "epilogue bias_relu" in cu
drv = open("kernels/driver.cu").read()
rows = re.findall(r"\{(\d+), 1, 8, 8, 8, 4, 3, 3, 1, 1, DT_FP16, NHWC, EPI_BIAS_RELU\}", drv)
assert rows == ["1"], rows
assert "any_case1_k1(const void *in, const void *w, void *out, const void *bias, cudaStream_t s)" in drv
assert "return launch_case1_k1(in, w, out, bias, s);" in drv
assert "fill_uniform(bias, seed ^ 0xb1a5b1a5b1a5b1a5ULL);" in drv
PY
[ -x scripts/case1/run_kernel1_powercap2.sh ] || fail "no run script of case 1 kernel 1"

# energy of every exported kernel at the limit in force: each is checked (with its bias) before it is measured
"$BIN" energy $FAST --power-caps current | tee energy.out
grep -q "^measured $nres kernel(s) at 1 cap(s) into ./kernel_outputs; 0 failed" energy.out || fail "energy summary"
[ ! -s nvml.log ] || fail "the current cap changed the limit: $(cat nvml.log)"
for c in kernel_outputs/case*/; do
  rows=$(tail -n +2 "$c/powercap1/results.csv" | wc -l)
  want=$(ls kernels/$(basename "$c")/*.cu | wc -l)
  [ "$rows" -eq "$want" ] || fail "$c: $rows result rows, want $want"
  grep -q "^GFLOP/s: " "$c/powercap1/output_kernel1.txt" || fail "$c: output_kernel1.txt"
done

# export's run script of one kernel at cap 2 (325 W on the fake H200), then the original 600 W back
bash scripts/case1/run_kernel1_powercap2.sh --allow-power-cap $FAST > script.out 2>&1 || { cat script.out; fail "run script"; }
grep -q "0 failed" script.out || { cat script.out; fail "run script: a kernel failed"; }
printf 'set_limit 0 325000\nset_limit 0 600000\n' > want.log
diff want.log nvml.log || fail "cap 2 not set and restored"
grep -q "^GFLOP/s: " kernel_outputs/case1/powercap2/output_kernel1.txt || fail "powercap2/output_kernel1.txt"
echo OK
