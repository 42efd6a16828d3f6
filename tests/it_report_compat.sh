#!/usr/bin/env bash
# The committed results of earlier cutune still load (issue 14: version-1 record lines): `cutune report` on the
# seed-001 energy run (bench/results/energy_h200 with the run's logs from conv_seed001_h200/records.tgz) writes the
# committed report/summary.md byte for byte, and `cutune export` takes its version-1 tuningresults.
set -euo pipefail
BIN=$1; DIR=$2
R=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bench/results
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
[ -d "$R/energy_h200" ] && [ -f "$R/conv_seed001_h200/records.tgz" ] || { echo "SKIP: no committed results"; exit 77; }
cp -r "$R/energy_h200" run
rm -rf run/report
(cd run && tar xzf "$R/conv_seed001_h200/records.tgz")
grep -q '"v":1,' run/tuningrecords/case1_*.json || fail "the committed logs are not version 1 any more"
"$BIN" report --outdir run --no-plots > report.out 2>&1 || { cat report.out; fail "report"; }
diff "$R/energy_h200/report/summary.md" run/report/summary.md || fail "report/summary.md differs from the committed one"
"$BIN" export --outdir run > export.out 2>&1 || { cat export.out; fail "export of version-1 results"; }
grep -q "^exported 175 kernel(s) of 7 case(s)" export.out || { cat export.out; fail "export count"; }
echo OK
