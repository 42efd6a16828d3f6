#!/usr/bin/env bash
# GEMM end to end on the host-emulation backend: cutune tune --gemm (NN and NT, tiny shapes, seed 004's words and
# the long flags) -> records, tuningresults, resume -> cutune report --gemm with a hand-written vendor file; conv
# tools beside the GEMM logs ignore them; a GPU-only template (wgmma) under emulation is a usage error (fp16 runs
# there: it_gemm_gemv.sh).
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }

"$BIN" tune --gemm M=64 N=48 K=40 t=24 --backend emu --quiet --outdir . | tee nn.out
"$BIN" tune --m 64 --n 48 --k 40 --layout nt --trials 24 --tpl simt --backend emu --seed 5 --quiet --outdir . | tee nt.out
for l in nn nt; do
  name=gemm_${l}_fp32_M_64_N_48_K_40
  [ "$(wc -l < tuningrecords/$name.json)" -eq 24 ] || fail "$name: want 24 records"
  [ "$(wc -l < tuningresults/$name.json)" -eq 5 ] || fail "$name: want the 5 fastest in tuningresults"
  grep -qE "^$name: 24 trials \(24 new, 0 failed\) in .* s; best simt bm=[0-9]+ .*: [0-9.]+ ms = [0-9.]+ TFLOP/s" $l.out ||
    fail "$l: final line"
done
python3 - <<'PY' || fail "record contents"
import json, glob
for f in glob.glob("tuningrecords/gemm_*.json"):
    recs = [json.loads(l) for l in open(f)]
    for r in recs:
        assert r["status"] == "ok", (f, r.get("error"))
        w = r["workload"]
        assert w["kind"] == "gemm" and (w["m"], w["n"], w["k"]) == (64, 48, 40) and w["dtype"] == "fp32"
        assert r["sched"]["tpl"] == "simt" and r["median_ms"] > 0 and r["rel_err"] <= 1e-5
        assert abs(r["gflops"] - 2 * 64 * 48 * 40 / (r["median_ms"] * 1e6)) < 1e-6 * r["gflops"]
        assert r["backend"] == "emu" and "gpu" in r
    assert len({json.dumps(r["sched"], sort_keys=True) for r in recs}) == len(recs), "a schedule twice"
    assert sorted(r["trial"] for r in recs) == list(range(len(recs)))
    best = sorted(json.loads(l)["median_ms"] for l in open(f.replace("tuningrecords", "tuningresults")))
    assert best == sorted(r["median_ms"] for r in recs)[:5]
PY
# resume: a finished log is skipped
"$BIN" tune --gemm M=64 N=48 K=40 t=24 --backend emu --quiet --outdir . > resume.out
grep -q "already finished (24 trials)" resume.out || fail "resume"
# sampling takes every op's logs (issue 14): a GEMM log is sampled, not copied and not read as a conv log: its
# representatives are records of that log, the fastest first, failed trials left out
"$BIN" sample --out sampled >/dev/null 2>sample.err || { cat sample.err; fail "cutune sample beside GEMM logs"; }
for f in tuningrecords/gemm_*.json; do
    s=sampled/$(basename "$f")
    [ -f "$s" ] || fail "cutune sample wrote no representatives of $f"
    python3 - "$f" "$s" <<'PY' || fail "sampled GEMM log $s"
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])]
got = [json.loads(l) for l in open(sys.argv[2])]
valid = sorted((r for r in log if r["status"] == "ok"), key=lambda r: r["median_ms"])
by_trial = {r["trial"]: r for r in log}
assert got and all(by_trial[r["trial"]] == r for r in got), "a sampled record that is not the log's"
assert all(r["status"] == "ok" for r in got), "a failed trial sampled"
assert got[0]["median_ms"] == valid[0]["median_ms"], "the fastest trial is not first"
assert len(got) == min(len(valid), 25), (len(got), len(valid))
PY
done

# the report: vendor numbers for NN only
cat > tuningresults/vendor_gemm_nn_fp32_M_64_N_48_K_40.json <<'J'
{"tflops": 0.5, "ms": 0.00049152, "algo": "SGEMM_PEDANTIC_NN"}
J
"$BIN" report --gemm --outdir . > report.out
grep -q "| 64 | 48 | 40 | nn |" report/gemm.md || fail "gemm.md row"
python3 - <<'PY' || fail "report/gemm.json"
import json
rep = json.load(open("report/gemm.json"))
assert rep["gpu"] == "host-emulation" and "report --gemm" in rep["command"]
rows = {r["layout"]: r for r in rep["rows"]}
assert set(rows) == {"nn", "nt"}
for l, r in rows.items():
    recs = [json.loads(x) for x in open(f"tuningrecords/gemm_{l}_fp32_M_64_N_48_K_40.json")]
    best = min(x["median_ms"] for x in recs if x["status"] == "ok")
    assert abs(r["generic_tflops"] - 2 * 64 * 48 * 40 / (best * 1e9)) < 1e-9, (r, best)
    assert r["template_tflops"] is None and r["dtype"] == "fp32" and (r["m"], r["n"], r["k"]) == (64, 48, 40)
assert rows["nn"]["vendor_tflops"] == 0.5 and rows["nn"]["vendor_algo"] == "SGEMM_PEDANTIC_NN"
assert rows["nt"]["vendor_tflops"] is None and rows["nt"]["vendor_algo"] is None
md = open("report/gemm.md").read()
ratio = rows["nn"]["generic_tflops"] / 0.5
assert f"{ratio:.2f}x" in md, (ratio, md)
PY

# wgmma under emulation: its kernels need a GPU, exit 2 with a sentence; and --tpl mma on fp32: no template applies
set +e
"$BIN" tune --gemm M=64 N=48 K=40 t=8 --dtype fp16 --tpl wgmma --backend emu --outdir . >/dev/null 2>fp16.err; rc=$?
"$BIN" tune --gemm M=64 N=48 K=40 t=8 --tpl mma --backend emu --outdir . >/dev/null 2>fp32.err; rc32=$?
set -e
[ $rc -eq 2 ] || fail "wgmma under emulation: exit $rc, want 2"
grep -q -- "--tpl wgmma: its kernels need a GPU" fp16.err || fail "wgmma message: $(cat fp16.err)"
[ ! -e tuningrecords/gemm_nn_fp16_M_64_N_48_K_40.json ] || fail "wgmma left a log"
[ $rc32 -eq 2 ] || fail "mma on fp32: exit $rc32, want 2"
grep -q "no GEMM template computes fp32 nn under emulation (mma: " fp32.err || fail "fp32 mma message: $(cat fp32.err)"
echo "ok: GEMM pipeline under emulation"
