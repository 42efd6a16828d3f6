#!/usr/bin/env bash
# Several custom shapes (tune --conv) in one folder (issue 16): each keeps the case number its files have there, a
# new one takes the next free number, so sample, export and report see two cases, and re-running the first shape
# resumes its own log.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
A=1,8,8,8,4,3,3,1,1; B=1,9,9,6,5,3,3,2,1
FA=conv2d_N_1_H_8_W_8_CO_8_CI_4_KH_3_KW_3_strides_1_padding_1
FB=conv2d_N_1_H_9_W_9_CO_6_CI_5_KH_3_KW_3_strides_2_padding_1
"$BIN" tune --backend emu --conv $A --trials 6 --batch 3 --quiet --no-sample --outdir out 2> a.err
"$BIN" tune --backend emu --conv $B --trials 6 --batch 3 --quiet --no-sample --outdir out 2> b.err
[ -f out/tuningrecords/case1_$FA.json ] || fail "the first shape is not case 1: $(ls out/tuningrecords)"
[ -f out/tuningrecords/case2_$FB.json ] || fail "the second shape is not case 2: $(ls out/tuningrecords)"
grep -q "is case 2 of" b.err || { cat b.err; fail "no line naming the second shape's case number"; }
[ "$(ls out/tuningrecords/*.json | wc -l)" -eq 2 ] || fail "expected 2 logs: $(ls out/tuningrecords)"
python3 - <<'PY' || fail "record case fields"
import json, glob
for f in glob.glob("out/tuningrecords/case*.json"):
    want = int(f.split("/")[-1].split("_")[0][4:])
    assert all(json.loads(l)["case"] == want for l in open(f)), f
PY
"$BIN" sample --in out/tuningrecords --out out/tuningresults > sample.out || fail "sample"
[ "$(ls out/tuningresults/*.json | wc -l)" -eq 2 ] || fail "sample wrote $(ls out/tuningresults)"
"$BIN" export --outdir out > export.out 2>&1 || { cat export.out; fail "export refused two custom shapes"; }
grep -q "of 2 case(s)" export.out || { cat export.out; fail "export did not see 2 cases"; }
[ -d out/kernels/case1 ] && [ -d out/kernels/case2 ] || fail "kernels/case1 and case2"
"$BIN" report --outdir out --no-plots > report.out 2>&1 || { cat report.out; fail "report"; }
grep -q "$FB" out/report/summary.md || fail "the report lacks the second shape"
# Re-running the first shape resumes its own log (case 1), leaving case 2 alone.
sum_b=$(md5sum < out/tuningrecords/case2_$FB.json)
"$BIN" tune --backend emu --conv $A --trials 9 --batch 3 --quiet --no-sample --outdir out > a2.out 2> a2.err
grep -q "is case 1 of" a2.err || { cat a2.err; fail "the first shape was not case 1 again"; }
[ "$(wc -l < out/tuningrecords/case1_$FA.json)" -eq 9 ] || fail "case 1 did not resume to 9 trials"
grep -q "9 trials (3 new" a2.out || { cat a2.out; fail "not a resume"; }
[ "$(md5sum < out/tuningrecords/case2_$FB.json)" = "$sum_b" ] || fail "case 2's log changed"
[ "$(ls out/tuningrecords/*.json | wc -l)" -eq 2 ] || fail "a third log appeared: $(ls out/tuningrecords)"
# A shape whose only trace is its results file keeps its number too.
rm out/tuningrecords/case2_$FB.*
"$BIN" tune --backend emu --conv $B --trials 3 --batch 3 --quiet --no-sample --outdir out 2> b2.err
grep -q "is case 2 of" b2.err || { cat b2.err; fail "a shape known from tuningresults/ changed its number"; }
echo "1 passed, 0 failed"
