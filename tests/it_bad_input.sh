#!/usr/bin/env bash
# Bad input: one clear sentence on stderr, exit code 2, and no existing record overwritten.
set -uo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
pass=0; failn=0
expect2() {  # expect2 "what" "pattern in stderr" args...
  local what=$1 pat=$2; shift 2
  "$BIN" "$@" >out.txt 2>err.txt; local rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL: $what: exit $rc (want 2)"; cat err.txt; failn=$((failn+1)); return; fi
  if ! grep -qiE "$pat" err.txt; then echo "FAIL: $what: stderr lacks /$pat/:"; cat err.txt; failn=$((failn+1)); return; fi
  if [ "$(wc -l < err.txt)" -ne 1 ]; then echo "FAIL: $what: want one line"; cat err.txt; failn=$((failn+1)); return; fi
  echo "ok: $what: $(cat err.txt)"; pass=$((pass+1))
}
# an existing record that must survive every bad call
mkdir -p tuningrecords
echo '{"precious":1}' > tuningrecords/case1_conv2d_N_1_H_8_W_8_CO_8_CI_4_KH_3_KW_3_strides_1_padding_1.json
sum=$(md5sum tuningrecords/*)
E="--backend emu --outdir ."
expect2 "malformed --conv" "conv" tune $E --conv 1,2,3
expect2 "non-integer --conv" "conv" tune $E --conv 1,8,8,x,4,3,3,1,1
expect2 "zero size" "CO|zero|positive" tune $E --conv 1,8,8,0,4,3,3,1,1
expect2 "negative size" "H|negative|positive" tune $E --conv 1,-8,8,8,4,3,3,1,1
expect2 "output size <= 0" "output" tune $E --conv 1,2,2,8,4,5,5,1,0
expect2 "stride 0" "stride" tune $E --conv 1,8,8,8,4,3,3,0,1
expect2 "unknown list" "unknown workload list" tune $E --workloads mobilenet
touch afile
expect2 "unwritable output folder" "afile" tune --backend emu --workloads tiny --outdir afile/sub
if ! "$BIN" devices >/dev/null 2>&1; then
  expect2 "no GPU and no --backend emu" "no (usable )?GPU|no NVIDIA" tune --workloads tiny --outdir .
else
  echo "skip: no-GPU check (a GPU is present)"
fi
expect2 "unknown backend" "backend" tune --backend opencl --workloads tiny
expect2 "case out of range" "case 9" tune $E --workloads tiny --case 9
expect2 "bad --trials" "trials" tune $E --trials -5
# GEMM (seed 004's words): malformed words name the word
expect2 "gemm empty value" "'M='" tune $E --gemm M= N=1 K=1
expect2 "gemm negative value" "'M=-1'" tune $E --gemm M=-1 N=1 K=1
expect2 "gemm unknown key" "'Q=3'" tune $E --gemm Q=3 N=1 K=1
expect2 "gemm key twice" "'M=2'" tune $E --gemm M=1 M=2 N=1 K=1
expect2 "gemm missing K" "no K" tune $E --gemm M=1 N=1
expect2 "gemm bad --layout" "'tx'" tune $E --m 8 --n 8 --k 8 --layout tx
# the vendor GEMM baseline: malformed words, options without a GEMM, and no GPU
expect2 "baseline gemm empty value" "'M='" baseline --gemm M= N=1 K=1
expect2 "baseline gemm unknown key" "'Q=3'" baseline --gemm Q=3 N=1 K=1
expect2 "baseline gemm missing K" "no K" baseline --gemm M=1 N=1
expect2 "baseline gemm bad --dtype" "'fp8'" baseline --gemm M=8 N=8 K=8 --dtype fp8
expect2 "baseline vendor option without a GEMM" "need a GEMM" baseline --heuristic 4
expect2 "baseline bad --heuristic" "heuristic" baseline --gemm M=8 N=8 K=8 --heuristic 999
if ! "$BIN" devices >/dev/null 2>&1; then
  expect2 "baseline gemm without a GPU" "no (usable )?GPU|no NVIDIA" baseline --gemm M=64 N=64 K=64 --dtype fp16
fi
# a GEMM template the backend cannot run: wgmma's TMA and wgmma PTX need a GPU, the emulator runs the others
expect2 "gemm wgmma under emulation" "tpl wgmma: its kernels need a GPU" \
  tune $E --gemm M=1024 N=2048 K=3072 t=2000 --layout nt --dtype fp16 --tpl wgmma
expect2 "gemm unknown --tpl" "'tensor' is not a GEMM template" tune $E --gemm M=8 N=8 K=8 --tpl tensor
expect2 "gemm with --conv" "cannot be combined" tune $E --gemm M=8 N=8 K=8 --conv 1,8,8,8,4,3,3,1,1
# kernel specs: refuse instead of silently changing data (issue 15)
spec() { # spec FILE SOURCE-JSON-FIELD SCALAR-VALUE Y-TYPE
  cat > "$1" <<J
{"name": "s", "language": "cuda", $2, "entry": "k", "sizes": {"N": 64}, "tunables": {"B": [32]},
 "launch": {"grid": [2], "block": ["B"]}, "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"], "init": "randn"}],
 "outputs": [{"name": "y", "dtype": "f32", "shape": ["N"]}], "scalars": [{"name": "n", "dtype": "i32", "value": "$3"}],
 "args": ["x", "y", "n"]}
J
}
SRC='"source": "extern \"C\" __global__ void k(const float *x, float *y, int n) { }"'
spec dz.json '"source_path": "/dev/zero"' N
expect2 "spec source_path /dev/zero" "'/dev/zero' is not a regular file" tune --kernel dz.json $E
spec ovf.json "$SRC" "N * 100000000"
expect2 "spec i32 scalar overflow" "6400000000, which does not fit i32" tune --kernel ovf.json $E
spec dt.json "$(echo "$SRC" | sed 's/float \*y/double *y/')" N
expect2 "spec output dtype against the parameter" "'y' is a buffer of f32, but parameter 2 of k is a pointer to f64" \
  tune --kernel dt.json $E
spec ok.json "$SRC" N
expect2 "--sizes naming an unknown size" "no kernel spec has a size named 'M'" tune --kernel ok.json --sizes M=8 $E
expect2 "help for an unknown command" "cutune help: unknown command 'nope'" help nope
# `cutune help CMD` is the command's own help, not the top-level one
# (each help to a file first: under pipefail, `| head -1` can kill a help longer than a pipe write with SIGPIPE)
"$BIN" help tune > help_tune.txt; "$BIN" help optimize > help_opt.txt
if head -1 help_tune.txt | grep -q '^usage: cutune tune' && head -1 help_opt.txt | grep -q '^usage: cutune optimize'; then
  pass=$((pass+1))
else
  echo "FAIL: cutune help tune/optimize does not print the command's help"; failn=$((failn+1))
fi
# an unknown option: every command refuses it in one line naming it and pointing at its help (issue 16; optimize
# printed its whole usage, devices too), nothing on stdout, and the help it points at exists
for c in tune optimize export energy sample report clean baseline devices; do
  expect2 "$c with an unknown option" "^cutune $c: unknown option '--bogus' \(see cutune help $c\)$" $c --bogus
  if [ -s out.txt ]; then echo "FAIL: $c --bogus wrote to stdout"; cat out.txt; failn=$((failn+1)); fi
  "$BIN" help $c > help_$c.txt 2>&1 && head -1 help_$c.txt | grep -q "^usage: cutune $c" \
    || { echo "FAIL: cutune help $c"; cat help_$c.txt; failn=$((failn+1)); }
done
expect2 "optimize with an unknown option after good ones" "unknown option '--budget'" \
  optimize --input x.json --budget 5
expect2 "optimize without --input" "input is required" optimize --outdir o

# a shape too large to emulate is refused up front (issue 16), naming it, the estimate per trial and in all, and what
# to do; nothing is written for it. --emu-force runs it (here for at most a second).
t0=$(date +%s)
expect2 "seed-001 case 1 under emulation" \
  "case 1 \(conv2d_N_1_H_272_W_272_CO_64_CI_32_KH_3_KW_3_strides_1_padding_1\) is too large to emulate: 2.73 GFLOP a launch, so at least [0-9.]+ s a trial .* at least [0-9.]+ min for 1000 trials.*--backend cuda.*smaller shape.*--emu-force" \
  tune $E --conv 1,272,272,64,32,3,3,1,1
expect2 "seed001 --test under emulation" "case 1 \(conv2d_N_1_H_272.*too large to emulate.*for 100 trials" \
  tune $E --workloads seed001 --test
expect2 "a large GEMM under emulation" "gemm_nn_fp32_M_1024_N_1024_K_1024 is too large to emulate" \
  tune $E --gemm M=1024 N=1024 K=1024 t=10
if [ $(( $(date +%s) - t0 )) -gt 20 ]; then echo "FAIL: the refusals took $(( $(date +%s) - t0 )) s"; failn=$((failn+1)); fi
if ls tuningrecords | grep -q "H_272\|gemm_"; then echo "FAIL: a refused shape left a file: $(ls tuningrecords)"; failn=$((failn+1)); fi
if "$BIN" tune --backend emu --conv 1,64,64,128,64,3,3,1,1 --trials 5 --emu-force --time-budget 1 --no-sample \
    --outdir forced > forced.out 2> forced.err && ! grep -q "too large" forced.err; then
  pass=$((pass+1))
else
  echo "FAIL: --emu-force did not run the shape"; cat forced.err; failn=$((failn+1))
fi
if [ "$(md5sum tuningrecords/*)" != "$sum" ]; then echo "FAIL: an existing record was changed"; failn=$((failn+1)); fi
echo "$pass passed, $failn failed"
[ $failn -eq 0 ]
