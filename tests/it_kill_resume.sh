#!/usr/bin/env bash
# SIGKILL a tune mid-run, run it again: no corrupt or duplicated line, no finished trial lost; a whole last record
# without its newline is kept.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
LOG=tuningrecords/case1_conv2d_N_1_H_8_W_8_CO_8_CI_4_KH_3_KW_3_strides_1_padding_1.json
for round in 1 2 3; do
  "$BIN" tune --backend emu --workloads tiny --case 1 --trials 60 --batch 4 --quiet --no-sample --outdir . \
    >/dev/null 2>&1 &
  pid=$!
  # wait until at least a few more lines are there, then kill hard
  want=$((round * 8))
  for _ in $(seq 1 600); do
    n=$( [ -f $LOG ] && wc -l < $LOG || echo 0 )
    [ "$n" -ge "$want" ] && break
    sleep 0.1
  done
  kill -9 $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  cp $LOG before_$round.json
done
# Simulate a kill in the middle of a write: a torn last line.
printf '{"v":1,"trial":999,"case":1,"workl' >> $LOG
cp $LOG before_resume.json
"$BIN" tune --backend emu --workloads tiny --case 1 --trials 60 --batch 4 --quiet --no-sample --outdir . >/dev/null
python3 - "$LOG" before_resume.json <<'PY' || fail "resume check"
import json, sys
final = open(sys.argv[1]).read()
before = open(sys.argv[2]).read()
complete = before[:before.rfind("\n") + 1]
assert final.startswith(complete), "a finished trial was lost or rewritten"
lines = final.splitlines()
recs = [json.loads(l) for l in lines]                    # no corrupt line
assert len(recs) == 60, len(recs)
assert sorted(r["trial"] for r in recs) == list(range(60)), "trial numbers not 0..59"
keys = [json.dumps(r["sched"], sort_keys=True) for r in recs]
assert len(set(keys)) == len(keys), "duplicated schedule"
assert len(complete.splitlines()) >= 24, "the kills came too late to test anything"
print("resumed from", len(complete.splitlines()), "complete lines")
PY
# A whole last record whose newline the kill took is kept (with its newline), not cut: the resumed run counts it
# and measures one trial fewer.
"$BIN" tune --backend emu --workloads tiny --case 1 --trials 30 --quiet --no-sample --outdir nl >/dev/null
NL=nl/$LOG
python3 - "$NL" <<'PY'
import sys
p = sys.argv[1]
data = open(p, "rb").read()
assert data.endswith(b"\n")
open(p, "wb").write(data[:-1])
PY
"$BIN" tune --backend emu --workloads tiny --case 1 --trials 31 --quiet --no-sample --outdir nl > nl.out
python3 - "$NL" <<'PY' || fail "a whole last record without its newline"
import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == "", "the log does not end with a newline"
recs = [json.loads(l) for l in lines[:-1]]
assert sorted(r["trial"] for r in recs) == list(range(31)), [r["trial"] for r in recs]
print("a record without its newline kept: 31 trials, 0..30 once")
PY
grep -q "31 trials (1 new" nl.out || { cat nl.out; fail "the kept record was not counted"; }
echo "1 passed, 0 failed"
