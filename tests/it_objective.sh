#!/usr/bin/env bash
# cutune tune --objective against the fake libnvidia-ml ($CUTUNE_FAKE_NVML): with edp, the 2 fastest valid trials
# of each round (batch 8: trials 0-7, 8-15) carry energy_mj/edp/power_w and no other trial does; the printed best
# is the minimum EDP over the measured trials and tuningresults/ line 1 is that trial; `cutune sample --objective
# edp` ranks the same way; the time objective writes no energy fields. Failures: --objective energy without NVML
# stops before tuning (exit 1, a sentence naming --objective); --objective bogus is a usage error (exit 2).
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
[ -n "${CUTUNE_FAKE_NVML:-}" ] || { echo "SKIP: CUTUNE_FAKE_NVML is not set (run through ctest)"; exit 77; }
export FAKE_NVML_GPUS="NVIDIA H200:600000:200000:700000"
export FAKE_NVML_STATE=$PWD/nvml.state FAKE_NVML_LOG=$PWD/nvml.log FAKE_NVML_ENERGY=300:5
TUNE="tune --backend emu --workloads tiny --trials 16 --batch 8 --quiet"

CUTUNE_NVML_LIB=$CUTUNE_FAKE_NVML "$BIN" $TUNE --objective edp --outdir edp | tee edp.out
CUTUNE_NVML_LIB=$CUTUNE_FAKE_NVML "$BIN" sample --objective edp --in edp/tuningrecords --out edp/resampled >/dev/null

python3 - <<'PY' || fail "edp records, best line or representatives"
import glob, json, os, re
lines = [l for l in open("edp.out") if " best edp: " in l]
logs = sorted(glob.glob("edp/tuningrecords/*.json"))
assert len(logs) == 3 and len(lines) == 3, (logs, lines)
for path, line in zip(logs, lines):
    name = os.path.basename(path)
    assert line.startswith(name[:-5] + ":"), (name, line)
    recs = [json.loads(l) for l in open(path)]
    assert len(recs) == 16, len(recs)
    for r0 in (0, 8):
        rnd = [r for r in recs if r0 <= r["trial"] < r0 + 8]
        ok = sorted((r for r in rnd if r["status"] == "ok"), key=lambda r: (r["median_ms"], r["trial"]))
        want = {r["trial"] for r in ok[:2]}
        got = {r["trial"] for r in rnd if "energy_mj" in r}
        assert got == want, (name, r0, got, want)
        for r in rnd:
            has = [k in r for k in ("energy_mj", "edp", "power_w")]
            assert all(has) or not any(has), r
            if all(has):
                assert r["energy_mj"] > 0 and r["power_w"] > 0 and r["edp"] > 0, r
    measured = [r for r in recs if "edp" in r]
    best = min(measured, key=lambda r: (r["edp"], r["median_ms"], r["trial"]))
    m = re.search(r"best edp: EDP ([0-9.eE+-]+) ms\*mJ", line)
    assert m and abs(float(m.group(1)) - best["edp"]) <= 1e-5 * best["edp"], (line, best["edp"])
    assert "4 with energy" in line, line
    for d in ("edp/tuningresults/", "edp/resampled/"):
        first = json.loads(open(d + name).readline())
        assert first["trial"] == best["trial"], (d, name, first["trial"], best["trial"])
    assert open("edp/tuningresults/" + name).read() == open("edp/resampled/" + name).read(), name
PY

# The default objective never touches NVML and writes no energy fields.
CUTUNE_NVML_LIB=/nonexistent "$BIN" $TUNE --outdir time >/dev/null
! grep -q '"energy_mj"\|"edp"\|"power_w"' time/tuningrecords/*.json || fail "time objective wrote energy fields"

# Without NVML, --objective energy stops before any trial, naming --objective.
set +e
CUTUNE_NVML_LIB=/nonexistent "$BIN" $TUNE --objective energy --outdir nonvml 2>err.txt; rc=$?
set -e
[ "$rc" -eq 1 ] || [ "$rc" -eq 2 ] || fail "--objective energy without NVML: exit $rc"
grep -q -- "--objective energy" err.txt || fail "no sentence naming --objective: $(cat err.txt)"
! ls nonvml/tuningrecords/*.json >/dev/null 2>&1 || fail "trials were run before the NVML check"

set +e
"$BIN" $TUNE --objective bogus --outdir bogus 2>err.txt; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--objective bogus: exit $rc"
grep -q -- "--objective" err.txt || fail "bogus objective: $(cat err.txt)"
set +e
"$BIN" sample --objective bogus --in edp/tuningrecords --out bogus2 2>err.txt; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "sample --objective bogus: exit $rc"
echo "PASS"
