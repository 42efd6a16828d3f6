#!/usr/bin/env bash
# Malformed kernel specs and options: cutune optimize exits 2 with one sentence naming the field, before running
# anything (no output folder is created).
set -euo pipefail
BIN=$1; DIR=$2
SRC=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
cp "$SRC/kernels/softmax_row.cu" .
good=$(sed 's/"source_path": "softmax_row.cu"/"source_path": "softmax_row.cu"/' "$SRC/kernels/softmax_row.json")
n=0
expect() { # name, file content, words the message must contain
  n=$((n + 1))
  printf '%s' "$2" > "$1.json"
  set +e; "$BIN" optimize --input "$1.json" --outdir out --backend emu > "$1.log" 2>&1; rc=$?; set -e
  [ $rc -eq 2 ] || { cat "$1.log"; fail "$1: exit $rc, want 2"; }
  grep -q -- "$3" "$1.log" || { cat "$1.log"; fail "$1: message does not say '$3'"; }
  [ ! -e out ] || fail "$1: an output folder was created"
}
expect bad_json '{"name": "x", "language": "cuda",' "not valid JSON"
expect unknown_dtype "$(echo "$good" | sed 's/"dtype": "f32", "shape": \["ROWS", "COLS"\], "init"/"dtype": "f8", "shape": ["ROWS", "COLS"], "init"/')" "inputs\[0\].dtype"
expect shape_unknown_size "$(echo "$good" | sed 's/"shape": \["ROWS", "COLS"\]}\]/"shape": ["ROWS", "DEPTH"]}]/')" "outputs\[0\].shape\[1\]"
expect launch_too_big "$(echo "$good" | sed 's/"block": \["BLOCK"\]/"block": ["BLOCK * 16"]/')" "launch.block"
expect missing_entry "$(echo "$good" | sed 's/"entry": "softmax_row"/"entry": "softmax_rows"/')" "entry"
expect args_mismatch "$(echo "$good" | sed 's/"args": \["x", "y", "cols"\]/"args": ["x", "y"]/')" "args"
restricted() { echo "$good" | sed "s/\"args\": \\[/\"restrictions\": [$1], \"args\": [/"; }
expect restriction_syntax "$(restricted '"BLOCK = 128"')" \
  "restrictions\[0\]: expression 'BLOCK = 128': unexpected '=' (compare with '==')"
expect restriction_name "$(restricted '"BLOCK % VEC == 0", "BLOCKS > 1"')" \
  "restrictions\[1\]: expression 'BLOCKS > 1': unknown name"
expect restriction_baseline "$(restricted '"BLOCK >= 256 || COLS < 64"')" \
  "restrictions\[0\]: 'BLOCK >= 256 || COLS < 64' is false for the baseline"
# a restriction over sizes holds at the spec's check_sizes too (the suite's softmax_row checks at ROWS=3)
expect restriction_check_sizes "$(restricted '"ROWS % 4 == 0"')" \
  "check_sizes: restrictions\[0\]: 'ROWS % 4 == 0' is false for the baseline (ROWS=3;"
checked() { echo "$good" | sed "s/\"check_sizes\": {\"ROWS\": 3, \"COLS\": 84}/\"check_sizes\": {$1}/"; }
expect check_sizes_unknown "$(checked '"ROWS": 3, "COL": 84')" \
  "check_sizes: 'COL' is not a size of the spec (its sizes: ROWS, COLS)"
expect check_sizes_missing "$(checked '"ROWS": 3')" "check_sizes: lacks COLS"
expect check_sizes_overflow "$(checked '"ROWS": 3, "COLS": 4000000000')" \
  "check_sizes: scalars\[0\] 'cols': 'COLS' is 4000000000, which does not fit i32"
restricted '"ROWS % 4 == 0"' | sed 's/"check_sizes": {"ROWS": 3,/"check_sizes": {"ROWS": 4,/' > restricted.json
# options
set +e
"$BIN" optimize --input softmax_row.cu.nope > o1.log 2>&1; r1=$?
"$BIN" optimize --input "$SRC/kernels" --ncu-every -1 > o2.log 2>&1; r2=$?
"$BIN" optimize --input "$SRC/kernels" --profile-run > o6.log 2>&1; r6=$?
"$BIN" optimize --input "$SRC/kernels" --gpus 0,x > o3.log 2>&1; r3=$?
"$BIN" optimize --input "$SRC/kernels" --budget-builds 0 > o4.log 2>&1; r4=$?
"$BIN" optimize --input "$SRC/kernels" --sizes ROWS=0 --backend emu > o5.log 2>&1; r5=$?
set -e
[ $r1 -eq 2 ] && grep -q "does not exist" o1.log || fail "missing input"
[ $r2 -eq 2 ] && grep -q "ncu-every" o2.log || fail "--ncu-every -1"
[ $r6 -eq 2 ] && grep -q -- "--profile-run goes with --worker" o6.log || { cat o6.log; fail "--profile-run alone"; }
[ $r3 -eq 2 ] && grep -q -- "--gpus" o3.log || fail "--gpus"
[ $r4 -eq 2 ] && grep -q -- "--budget-builds" o4.log || fail "--budget-builds"
[ $r5 -eq 2 ] && grep -q "ROWS" o5.log || { cat o5.log; fail "--sizes ROWS=0"; }
# a size override under which the baseline breaks a restriction
set +e; "$BIN" optimize --input restricted.json --sizes ROWS=6 --backend emu --outdir out > o6.log 2>&1; r6=$?; set -e
[ $r6 -eq 2 ] && grep -q "size ROWS=6: restrictions\[0\]: 'ROWS % 4 == 0' is false" o6.log ||
  { cat o6.log; fail "--sizes against a restriction"; }
[ ! -e out ] || fail "--sizes against a restriction: an output folder was created"
# a reference kernel in the spec: its outputs are the references; a baseline that disagrees with it stops the kernel
ref_spec() { # baseline body, reference body
  cat <<JSON
{"name": "scale", "language": "cuda", "entry": "scale",
 "source": "extern \"C\" __global__ void scale(const float *x, float *y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = $1; }",
 "reference": {"entry": "scale_ref", "source": "extern \"C\" __global__ void scale_ref(const float *x, float *y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = $2; }"},
 "sizes": {"N": 1000}, "tunables": {"BLOCK": [64, 128]},
 "launch": {"grid": ["cdiv(N, BLOCK)"], "block": ["BLOCK"]},
 "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"], "init": "randn", "seed": 3}],
 "outputs": [{"name": "y", "dtype": "f32", "shape": ["N"]}],
 "scalars": [{"name": "n", "dtype": "i32", "value": "N"}], "args": ["x", "y", "n"]}
JSON
}
ref_spec "2.0f * x[i]" "x[i] + x[i]" > ref_ok.json
ref_spec "2.0f * x[i]" "3.0f * x[i]" > ref_bad.json
"$BIN" optimize --input ref_ok.json --outdir ref_out --backend emu --budget-builds 2 > ref_ok.log 2>&1 ||
  { cat ref_ok.log; fail "a spec with a matching reference kernel: exit $?"; }
[ -f ref_out/kernels/_scale/baseline/reference.cu ] || fail "reference.cu not kept"
set +e; "$BIN" optimize --input ref_bad.json --outdir ref_out2 --backend emu --budget-builds 2 > ref_bad.log 2>&1
rb=$?; set -e
[ $rb -eq 1 ] && grep -q "does not match the reference kernel" ref_bad.log || { cat ref_bad.log; fail "bad reference"; }
sed 's/"entry": "scale_ref"/"entry": "scale_reff"/' ref_ok.json > ref_noentry.json
expect ref_noentry "$(cat ref_noentry.json)" "reference.entry"
echo "$((n + 7)) passed, 0 failed"
