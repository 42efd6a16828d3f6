#!/usr/bin/env bash
# The progress line in a log (stdout and stderr not a terminal, issue 16): it names the case actually tuned and its
# place in the run ("case 3 (2/2)" for the last case of the tiny list under --test, never "case 1/1"), and no line is
# printed twice (the last progress line used to come twice: once as the 10-second line, once as the final one).
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
"$BIN" tune --backend emu --workloads tiny --test --trials 6 --batch 3 --no-sample --outdir out > log.txt 2>&1 \
    || { cat log.txt; fail "tune"; }
cat log.txt
grep -q '^case 1 (1/2) | trials 6/6 |' log.txt || fail "no progress line for case 1 (1/2)"
grep -q '^case 3 (2/2) | trials 6/6 |' log.txt || fail "no progress line naming case 3 (2/2)"
grep -qE '^case [0-9]+/[0-9]+ ' log.txt && fail "a progress line still says case i/n"
dup=$(sort log.txt | uniq -d)
[ -z "$dup" ] || fail "lines printed twice: $dup"
# --case 3 alone: case 3 (1/1); a time budget's "stopped" line comes without an empty line before it.
"$BIN" tune --backend emu --workloads tiny --case 3 --trials 100000 --time-budget 1 --no-sample --outdir out2 \
    > log2.txt 2>&1 || { cat log2.txt; fail "tune --case 3"; }
cat log2.txt
grep -q '^case 3 (1/1) | trials ' log2.txt || fail "no progress line naming case 3 (1/1)"
grep -q '^case 3: stopped after' log2.txt || fail "no stopped line"
grep -q '^$' log2.txt && fail "an empty line in the log"
dup=$(sort log2.txt | uniq -d)
[ -z "$dup" ] || fail "lines printed twice: $dup"
echo "1 passed, 0 failed"
