#!/usr/bin/env bash
# End to end on the host-emulation backend: tune (tiny shapes) -> sample -> report.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }

"$BIN" tune --backend emu --workloads tiny --trials 30 --batch 8 --final 2 --prior --quiet --outdir . | tee tune.out
# --prior: cases 2 and 3 start their cost model from the earlier cases' logs
[ "$(grep -c "started from other workloads' trials" tune.out)" -eq 2 ] || fail "--prior was not used by cases 2 and 3"
n=$(ls tuningrecords/*.json | wc -l); [ "$n" -eq 3 ] || fail "expected 3 record logs, got $n"
for f in tuningrecords/*.json; do
  lines=$(wc -l < "$f"); [ "$lines" -eq 30 ] || fail "$f has $lines lines, want 30"
  [ -f "${f%.json}.csv" ] || fail "missing ${f%.json}.csv"
  head -1 "${f%.json}.csv" | grep -q '^start_time,' || fail "csv header"
done
python3 - <<'PY' || fail "record contents"
import json, glob
for f in glob.glob("tuningrecords/*.json"):
    recs = [json.loads(l) for l in open(f)]
    ok = [r for r in recs if r["status"] == "ok"]
    assert len(ok) >= 20, (f, len(ok))
    keys = {json.dumps(r["sched"], sort_keys=True) for r in recs}
    assert len(keys) == len(recs), "a schedule was measured twice"
    assert sorted(r["trial"] for r in recs) == list(range(len(recs)))
    for r in ok:
        assert r["gflops"] > 0 and r["median_ms"] > 0 and r["backend"] == "emu"
PY
# The final step re-timed the 2 best of each case: one line per case, its best among the log's 2 fastest.
python3 - <<'PY' || fail "final.jsonl"
import json, glob
rows = [json.loads(l) for l in open("final.jsonl")]
assert sorted(r["case"] for r in rows) == [1, 2, 3], rows
for r in rows:
    assert r["retimed"] == 2 and r["cutune_ms"] > 0 and r["cudnn_ms"] < 0, r
    recs = [json.loads(l) for l in open(glob.glob("tuningrecords/case%d_*.json" % r["case"])[0])]
    fastest = sorted((x for x in recs if x["status"] == "ok"), key=lambda x: x["median_ms"])[:2]
    assert r["best_sched"] in [x["sched"] for x in fastest], r
    assert any(abs(r["cutune_search_ms"] - x["median_ms"]) < 1e-6 for x in fastest), r
PY
# Sample: 25 representatives per case (30 trials -> 25 distinct), ranked by time; raw logs untouched.
sum_before=$(cat tuningrecords/*.json | md5sum)
"$BIN" sample
[ "$(cat tuningrecords/*.json | md5sum)" = "$sum_before" ] || fail "sample modified the raw logs"
for f in tuningresults/*.json; do
  python3 - "$f" <<'PY' || fail "sampled file $f"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert all(r["status"] == "ok" for r in recs)
assert 1 <= len(recs) <= 25
assert recs[0]["median_ms"] <= recs[1]["median_ms"] <= recs[4]["median_ms"]
PY
done
"$BIN" sample --test --out results2
for f in results2/*.json; do [ "$(wc -l < "$f")" -eq 2 ] || fail "test mode keeps 2"; done
"$BIN" report
for f in tuningresults/*.json; do
  p=performance/$(basename "$f")
  [ -f "$p" ] || fail "missing $p"
  [ "$(wc -l < "$p")" -eq "$(wc -l < "$f")" ] || fail "$p line count"
  grep -qvE '^[0-9]+$' "$p" && fail "$p has a non-integer line"
done
# --no-prior: a fresh run whose cost model sees only its own case
"$BIN" tune --backend emu --workloads tiny --case 2 --trials 12 --batch 4 --no-prior --no-sample --quiet --outdir np \
  | tee np.out
grep -q "started from other workloads' trials" np.out && fail "--no-prior still used a prior"
[ "$(wc -l < np/tuningrecords/case2_*.json)" -eq 12 ] || fail "--no-prior run"
# A finished case is skipped.
"$BIN" tune --backend emu --workloads tiny --trials 30 --quiet --outdir . | grep -c "already finished" | grep -q 3 \
  || fail "finished cases were not skipped"
echo "1 passed, 0 failed"
