#!/usr/bin/env bash
# cutune report end to end on the emulator: tune (tiny) -> sample -> a hand-written kernel_outputs/ tree and
# baseline -> report: summary.md against numbers re-derived here, PNG/SVG plots (when gnuplot is installed), the
# no-gnuplot and failing-gnuplot paths, and malformed input.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to check the report"; exit 77; }

"$BIN" tune --backend emu --workloads tiny --trials 20 --batch 8 --final 2 --no-sample --quiet --outdir . >tune.out
"$BIN" sample >/dev/null
[ "$(ls tuningresults/*.json | wc -l)" -eq 3 ] || fail "sample wrote no representatives"

# Baseline: case 1 measured (emu has no cuDNN), as `cutune baseline --json` writes it; the last line wins.
python3 - <<'PY'
import json
rows = {json.loads(l)["case"]: json.loads(l) for l in open("final.jsonl")}
with open("base.jsonl", "w") as f:
    for ms in (9.0, 0.123456):
        r = dict(rows[1]); r["cudnn_ms"] = ms; r["cudnn_algo"] = "IMPLICIT_PRECOMP_GEMM"
        f.write(json.dumps(r) + "\n")
PY
# Energy outputs in the energy phase's format: 5 caps for case 1 (the fifth series is the one gnuplot's default
# palette draws in yellow), cap 1 only for case 2.
H='id,perf(GFLOP/s),energy(mJ),EDP(ms*mJ)'
mkdir -p kernel_outputs/case1/powercap1 kernel_outputs/case1/powercap2 kernel_outputs/case2/powercap1
printf 'powercap,limit_w\n1,700.000\n2,400.000\n3,350.000\n4,300.000\n5,250.000\n' >kernel_outputs/powercaps.csv
for p in 3 4 5; do
  mkdir -p kernel_outputs/case1/powercap$p
  printf '%s\n1,%d.0,1.%d0000,0.0300\n' "$H" $((15000 - 1000 * p)) $p >kernel_outputs/case1/powercap$p/results.csv
done
printf '%s\n1,20155.3,2.18450,0.0312\n2,18000.0,2.00000,0.0400\n3,15000.0,2.50000,0.0600\n4,19000.0,2.18450,0.0312\n' \
  "$H" >kernel_outputs/case1/powercap1/results.csv
printf '%s\n1,15000.0,1.80000,0.0320\n2,14000.0,1.70000,0.0400\n' "$H" >kernel_outputs/case1/powercap2/results.csv
printf '%s\n1,100.0,1.00000,0.0100\n' "$H" >kernel_outputs/case2/powercap1/results.csv

"$BIN" report --outdir . --baseline base.jsonl >report.out 2>report.err || { cat report.err; fail "report exited $?"; }
[ -f report/summary.md ] || fail "no report/summary.md"
[ -f report/.cutune-generated ] || fail "report/ lacks the cutune marker"
for f in tuningresults/*.json; do [ -f "performance/$(basename "$f")" ] || fail "performance/ not written"; done
grep -q '^| 1 | `case1_' report.out || fail "the table was not printed on stdout"
python3 - <<'PY' || fail "summary.md content"
import json, glob, re
md = open("report/summary.md").read()
for case in (1, 2, 3):
    path = glob.glob("tuningrecords/case%d_*.json" % case)[0]
    recs = [json.loads(l) for l in open(path)]
    ok = [r for r in recs if r["status"] == "ok" and r["median_ms"] > 0]
    best = min(ok, key=lambda r: r["median_ms"])
    row = [l for l in md.splitlines() if l.startswith("| %d | `case%d_" % (case, case))]
    assert len(row) == 1, (case, row)
    cells = [c.strip() for c in row[0].strip("|").split("|")]
    assert cells[2] == str(len(recs)) and cells[3] == str(len(ok)), cells
    assert abs(float(cells[4]) - best["median_ms"]) < 1e-4, (cells, best["median_ms"])
    assert cells[6] in ("direct", "igemm", "winograd"), cells
    if case == 1:
        assert cells[7] == "0.1235" and cells[8] == "IMPLICIT_PRECOMP_GEMM", cells
        assert cells[9] == "%.2fx" % (0.123456 / best["median_ms"]), cells  # cuDNN ms / best ms
    else:
        assert cells[7:] == ["-", "-", "-"], cells
# Energy tables: case 1 cap 1 has kernels 1 and 4 tied (both on the front), 2 on it, 3 dominated.
sec = md.split("### case 1, power cap 1 (700.0 W): 4 kernel(s), 3 on the Pareto front")
assert len(sec) == 2, "case 1 cap 1 heading"
lines = [l for l in sec[1].split("###")[0].splitlines() if re.match(r"^\| \d", l)]
rows = {int(l.split("|")[1]): l.split("|")[6].strip() for l in lines}
assert rows == {1: "yes", 2: "yes", 3: "", 4: "yes"}, rows
assert "### case 1, power cap 2 (400.0 W): 2 kernel(s), 2 on the Pareto front" in md
assert "### case 2, power cap 1 (700.0 W): 1 kernel(s), 1 on the Pareto front" in md
assert "### case 3," not in md
PY

want_plots="case1_curve case1_times case1_energy case2_curve case2_times case2_energy case3_curve case3_times"
for p in $want_plots; do
  [ -s "report/$p.dat" ] && [ -s "report/$p.gp" ] || fail "missing report/$p.dat or .gp"
  grep -q "set terminal svg" "report/$p.gp" || fail "$p.gp has no svg terminal"
done
[ ! -e report/case3_energy.gp ] || fail "case 3 has no energy outputs but got an energy plot"
# Readable plots (issue 16): the key below the plot (outside right squeezed the plot to ~60% of its width), and every
# line type a series can use is a colour of at least 3:1 against white (gnuplot's default type 5 is yellow, 1.3:1);
# case 1's energy plot draws its fifth cap with type 5.
python3 - $want_plots <<'PY' || fail "plot scripts: key or colours"
import re, sys
def contrast(h):
    c = [int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    c = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
    return 1.05 / (0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2] + 0.05)
for p in sys.argv[1:]:
    gp = open("report/%s.gp" % p).read()
    assert "set key below" in gp and "key outside" not in gp and "key right" not in gp, p
    types = dict((int(n), h) for n, h in re.findall(r"set linetype (\d+) lc rgb '(#[0-9A-Fa-f]{6})'", gp))
    assert sorted(types) == list(range(1, 9)), (p, types)
    assert "set linetype cycle 8" in gp, p
    for n, h in types.items():
        assert contrast(h) >= 3.0, (p, n, h, contrast(h))
    assert "yellow" not in gp.lower() and not re.search(r"#(F0E442|FFFF00|DDCC77)", gp, re.I), p
    used = [int(x) for x in re.findall(r"\blc (\d+)", gp)]
    assert all(u in types for u in used), (p, used)
    if p == "case1_energy":
        assert 5 in used and "title 'cap 5 (250 W)'" in gp, used
PY
if command -v gnuplot >/dev/null; then
  for p in $want_plots; do
    magic=$(head -c 8 "report/$p.png" | od -An -tx1 | tr -d ' \n')
    [ "$magic" = 89504e470d0a1a0a ] || fail "report/$p.png is not a PNG"
    grep -q '<svg' "report/$p.svg" || fail "report/$p.svg is not an SVG"
  done
  grep -q "rendered 8 plot(s)" report.out || fail "render count: $(tail -1 report.out)"
else
  echo "note: gnuplot is not installed: PNG/SVG render checks skipped"
fi

# No gnuplot on PATH: scripts only, one line saying so, exit 0.
mkdir -p emptybin
rm -rf report
PATH="$PWD/emptybin" "$BIN" report --outdir . --baseline base.jsonl >nognu.out 2>&1 || fail "no-gnuplot run failed"
grep -q "gnuplot not found: wrote 8 scripts under ./report" nognu.out || fail "no-gnuplot line: $(tail -1 nognu.out)"
[ -f report/case1_curve.gp ] && [ ! -e report/case1_curve.png ] || fail "no-gnuplot run rendered or wrote nothing"

# A failing gnuplot: non-zero exit naming the script and gnuplot's stderr.
mkdir -p fakebin
printf '#!/bin/sh\necho "boom: planted gnuplot failure" >&2\nexit 3\n' >fakebin/gnuplot
chmod +x fakebin/gnuplot
rc=0; PATH="$PWD/fakebin" "$BIN" report --outdir . >fake.out 2>fake.err || rc=$?
[ "$rc" -ne 0 ] || fail "a failing gnuplot was not reported"
grep -q "case1_curve.gp" fake.err && grep -q "boom: planted gnuplot failure" fake.err \
  || fail "gnuplot error: $(cat fake.err)"

# --no-plots: tables only.
rm -rf report
"$BIN" report --outdir . --no-plots >/dev/null || fail "--no-plots run failed"
[ -f report/summary.md ] && [ -z "$(ls report/*.gp 2>/dev/null)" ] || fail "--no-plots wrote plots"

# Bad input: exit 2 with the file and line.
cp kernel_outputs/case2/powercap1/results.csv r.bak
printf '%s\n1,100.0,1.0,0.01\n2,x,1.0,0.01\n' "$H" >kernel_outputs/case2/powercap1/results.csv
rc=0; "$BIN" report --outdir . --no-plots >/dev/null 2>bad.err || rc=$?
[ "$rc" -eq 2 ] || fail "malformed results.csv: exit $rc (want 2)"
grep -q "kernel_outputs/case2/powercap1/results.csv:3:" bad.err || fail "error lacks file:line: $(cat bad.err)"
cp r.bak kernel_outputs/case2/powercap1/results.csv
rc=0; "$BIN" report --outdir . --baseline nosuch.jsonl >/dev/null 2>bad.err || rc=$?
[ "$rc" -eq 2 ] && grep -q "nosuch.jsonl" bad.err || fail "missing --baseline: exit $rc, $(cat bad.err)"
# Representatives without trial logs: performance/ only, as before this report existed.
mkdir -p nologs
"$BIN" report --outdir nologs --in tuningresults --out nologs/perf >nologs.out || fail "report without logs failed"
grep -q "tables and plots skipped" nologs.out && [ "$(ls nologs/perf | wc -l)" -eq 3 ] && [ ! -e nologs/report ] \
  || fail "report without trial logs: $(cat nologs.out)"
rc=0; "$BIN" report --bogus >/dev/null 2>bad.err || rc=$?
[ "$rc" -eq 2 ] || fail "unknown option: exit $rc (want 2)"
echo "1 passed, 0 failed"
