#!/usr/bin/env bash
# Tensor-core Conv2D on the host emulator (issue 20): tune --dtype fp16 --layout nhwc on the tiny list writes valid
# records of the tensor-core templates (igemm_tc; wgmma_conv where CI % 8 == 0) under the dtype/layout file names,
# which resume and sample; bf16 NCHW on a --conv shape keeps the layout out of the name; a GEMM layout on a conv is
# refused with a sentence.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
command -v c++ >/dev/null || command -v g++ >/dev/null || { echo "no host C++ compiler: skipped"; exit 77; }

"$BIN" tune --backend emu --workloads tiny --dtype fp16 --layout nhwc --trials 8 --batch 4 --test --quiet \
  --outdir . | tee tune.out
n=$(ls tuningrecords/*_dtype_fp16_layout_NHWC.json | wc -l); [ "$n" -eq 2 ] || fail "expected 2 fp16 NHWC logs, got $n"
ls tuningresults/*_dtype_fp16_layout_NHWC.json >/dev/null || fail "no representatives sampled"
python3 - <<'PY' || fail "record contents"
import json, glob
for f in glob.glob("tuningrecords/*.json"):
    recs = [json.loads(l) for l in open(f)]
    assert len(recs) == 8, (f, len(recs))
    ok = [r for r in recs if r["status"] == "ok"]
    assert len(ok) >= 6, (f, [(r["status"], r.get("error")) for r in recs])
    for r in recs:
        assert r["workload"]["dtype"] == "fp16" and r["workload"]["layout"] == "NHWC", r["workload"]
        # the tensor-core templates: igemm_tc, and wgmma_conv where CI is a multiple of 8 (NHWC fp16)
        ok_tpls = ("igemm_tc", "wgmma_conv") if r["workload"]["shape"][4] % 8 == 0 else ("igemm_tc",)
        assert r["sched"]["tpl"] in ok_tpls, (r["workload"], r["sched"])
    for r in ok:
        assert r["median_ms"] > 0 and r["gflops"] > 0 and r["err"] < 1e-2, r
PY
# resume: the finished cases are skipped, nothing appended
"$BIN" tune --backend emu --workloads tiny --dtype fp16 --layout nhwc --trials 8 --batch 4 --test --quiet \
  --outdir . > again.out
for f in tuningrecords/*.json; do [ "$(wc -l < "$f")" -eq 8 ] || fail "$f grew on resume"; done

"$BIN" tune --backend emu --conv 1,7,9,12,6,3,3,2,1 --dtype bf16 --trials 4 --batch 4 --quiet --outdir bf > bf.out
ls bf/tuningrecords/case1_conv2d_N_1_H_7_W_9_CO_12_CI_6_KH_3_KW_3_strides_2_padding_1_dtype_bf16.json >/dev/null ||
  fail "bf16 NCHW log name"
grep -q '"status":"ok"' bf/tuningrecords/*.json || fail "no valid bf16 NCHW trial"
grep -q '"layout"' bf/tuningrecords/*.json && fail "an NCHW record carries a layout field"

rc=0; "$BIN" tune --backend emu --workloads tiny --layout nt --outdir x 2> err.txt || rc=$?
[ $rc -eq 2 ] && grep -q "nchw or nhwc" err.txt || { cat err.txt; fail "a GEMM layout on a conv list was not refused"; }
echo OK
