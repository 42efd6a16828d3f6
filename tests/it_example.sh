#!/usr/bin/env bash
# examples/tune_lookup_launch without a GPU: with --backend emu it tunes a small shape on the emulator, looks the
# best kernel up through cutune/lookup.h (and is refused, in one sentence, a shape never tuned), compiles it with
# NVRTC and says it does not launch; a second run without tuning finds the same kernel; for the GPU it refuses
# clearly. The CUDA driver library it links is the toolkit's stub here (its calls fail as on a machine without a
# driver). On the GPU the same program also launches, checks and times the kernel (bench/lookup_gpu.sh).
set -euo pipefail
BIN=$1; DIR=$2
EX=$(dirname "$BIN")/examples/tune_lookup_launch
[ -x "$EX" ] || { echo "skip: $EX was not built (CUTUNE_EXAMPLES=OFF)"; exit 77; }
STUB=""
for d in /usr/local/cuda/lib64/stubs /usr/local/cuda/targets/x86_64-linux/lib/stubs; do
  [ -e "$d/libcuda.so" ] && STUB="$d/libcuda.so" && break
done
rm -rf "$DIR"; mkdir -p "$DIR/lib"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
if ! ldd "$EX" | grep -q "libcuda.so.1 => /"; then
  [ -n "$STUB" ] || { echo "skip: no libcuda.so.1 and no stub to stand in for it"; exit 77; }
  ln -s "$STUB" lib/libcuda.so.1
  export LD_LIBRARY_PATH=$DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

"$EX" --backend emu --conv 1,6,6,8,4,3,3,1,1 --trials 12 --records recs >run1.out 2>run1.err || { cat run1.out run1.err; fail "emu run"; }
cat run1.out
grep -q "^1. tuned: 12 trials in the log (12 new" run1.out || fail "tune step"
grep -q "^2. looked up: .* the best of [0-9]* valid records (recs/case1_conv2d_N_1_H_6_W_6_CO_8_CI_4_KH_3_KW_3_strides_1_padding_1.json line [0-9]*)" run1.out || fail "lookup step"
grep -q "and for a shape never tuned: no record for conv2d_N_1_H_6_W_6_CO_9_CI_4_KH_3_KW_3_strides_1_padding_1 on the host emulator (emu)" run1.out || fail "refusal"
grep -q "^3. compiled with NVRTC for sm_90: [0-9]*-byte cubin" run1.out || fail "compile step"
grep -q "^4. not launched: no GPU here" run1.out || fail "launch step"
# The looked-up kernel is the fastest valid record of the log.
python3 - <<'PY' || fail "not the recorded best"
import json, re
recs = [json.loads(l) for l in open("recs/case1_conv2d_N_1_H_6_W_6_CO_8_CI_4_KH_3_KW_3_strides_1_padding_1.json")]
ok = [(r["median_ms"], i + 1) for i, r in enumerate(recs) if r["status"] == "ok"]
best_ms, best_line = min(ok)
m = re.search(r"looked up: .*, ([0-9.]+) ms .* line (\d+)\)", open("run1.out").read())
assert int(m.group(2)) == best_line and abs(float(m.group(1)) - best_ms) < 5e-5, (m.groups(), best_ms, best_line)
PY
# Without tuning: the same answer from the records alone.
"$EX" --backend emu --conv 1,6,6,8,4,3,3,1,1 --no-tune --records recs >run2.out 2>&1 || { cat run2.out; fail "lookup-only run"; }
[ "$(grep '^2. looked up' run1.out)" = "$(grep '^2. looked up' run2.out)" ] || fail "a second look-up chose differently"
grep -q "^1. tuned" run2.out && fail "--no-tune tuned"
# A shape without records: exit 1, one sentence.
if "$EX" --backend emu --conv 1,7,7,8,4,3,3,1,1 --no-tune --records recs >run3.out 2>&1; then fail "an unknown shape was found"; fi
grep -q "^look-up: no record for conv2d_N_1_H_7_W_7" run3.out || { cat run3.out; fail "unknown shape message"; }
# The GPU path without a GPU.
if "$EX" --records recs --no-tune >run4.out 2>&1; then fail "ran without a GPU"; fi
grep -q "^no usable GPU: " run4.out || { cat run4.out; fail "no-GPU message"; }
echo "ok: example tunes, looks up, compiles (emulator), refuses unknown shapes and a missing GPU"
