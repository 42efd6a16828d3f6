#!/usr/bin/env bash
# --idle-other-gpus end to end against the fake libnvidia-ml ($CUTUNE_FAKE_NVML) with 3 GPUs booted in compute modes
# DEFAULT, EXCLUSIVE_PROCESS, DEFAULT: without the flag no compute mode is ever set; with it, `cutune tune` and
# `cutune energy` set the 2 GPUs they do not measure to PROHIBITED before measuring and put each original mode back at
# the end, and say so in their log; SIGTERM restores through the handler; after a SIGKILL the restore files stay and
# the next GPU command (`cutune devices`) restores; an NVML refusal (not root) ends the run non-zero before any
# measuring, naming the GPU and the reason, with every mode as it was.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
[ -n "${CUTUNE_FAKE_NVML:-}" ] || { echo "SKIP: CUTUNE_FAKE_NVML is not set (run through ctest)"; exit 77; }
export CUTUNE_NVML_LIB=$CUTUNE_FAKE_NVML
H=NVIDIA\ H200:700000:200000:700000
export FAKE_NVML_GPUS="$H,$H,$H" FAKE_NVML_MODES=0,3,0
export FAKE_NVML_STATE=$PWD/nvml.state FAKE_NVML_LOG=$PWD/nvml.log FAKE_NVML_ENERGY=300:10
export CUTUNE_STATE_DIR=$PWD/state
UUID1=GPU-fa4e0000-0000-4000-8000-000000000001 UUID2=GPU-fa4e0000-0000-4000-8000-000000000002
# The compute modes of GPUs 0, 1, 2 now ("0 3 0" at boot).
modes() { if [ -f nvml.state ]; then awk '{printf "%s%s", (NR > 1 ? " " : ""), $3} END {print ""}' nvml.state
          else echo "0 3 0"; fi; }
no_restore_files() { ! ls state/computemode_*.json 2>/dev/null; }
TUNE="tune --backend emu --workloads tiny --trials 8 --batch 4 --test --quiet"

# (a) Without the flag: nothing is set, nothing is said.
"$BIN" $TUNE --outdir plain > plain.out 2> plain.err
[ ! -s nvml.log ] || fail "a run without --idle-other-gpus changed the fake GPUs: $(cat nvml.log)"
! grep -q "idle-other-gpus" plain.err || fail "a run without the flag speaks of it: $(cat plain.err)"
[ "$(modes)" = "0 3 0" ] || fail "modes after a plain run: $(modes)"

# (b) tune --idle-other-gpus (the emulator's measured GPU is NVML's first): GPUs 1 and 2 PROHIBITED, then put back
# to their own originals (EXCLUSIVE_PROCESS and DEFAULT); GPU 0 never touched.
"$BIN" $TUNE --outdir idled --idle-other-gpus > idled.out 2> idled.err || fail "tune --idle-other-gpus: $(cat idled.err)"
printf 'set_mode 1 2\nset_mode 2 2\nset_mode 1 3\nset_mode 2 0\n' > want.log
diff want.log nvml.log || fail "tune: not idled and restored in order"
[ "$(modes)" = "0 3 0" ] || fail "modes after tune: $(modes)"
no_restore_files || fail "restore files left after tune"
grep -q "cutune tune: --idle-other-gpus: 2 other GPU(s) set to compute mode PROHIBITED for this run" idled.err ||
  fail "tune's log does not say the GPUs were idled: $(cat idled.err)"
grep -q "$UUID1 (NVIDIA H200, was EXCLUSIVE_PROCESS), $UUID2 (NVIDIA H200, was DEFAULT)" idled.err ||
  fail "tune's log does not name the idled GPUs: $(cat idled.err)"
grep -q "restored the original compute mode of 2 GPU(s)" idled.err || fail "no word of the restore: $(cat idled.err)"
n=$(ls idled/tuningresults/*.json | wc -l); [ "$n" -eq 2 ] || fail "the idled tune wrote $n result files, not 2"
# The flag is in the help of both commands.
"$BIN" tune --help | grep -q -- "--idle-other-gpus" || fail "tune --help lacks the flag"
"$BIN" energy --help | grep -q -- "--idle-other-gpus" || fail "energy --help lacks the flag"

# energy --idle-other-gpus measuring GPU 1 (--nvml-uuid): GPUs 0 and 2 idled, GPU 1 untouched.
: > nvml.log
"$BIN" energy --backend emu --test --warmup 0.02 --outdir idled --nvml-uuid $UUID1 --idle-other-gpus \
  > energy.out 2> energy.err || fail "energy --idle-other-gpus: $(cat energy.err)"
printf 'set_mode 0 2\nset_mode 2 2\nset_mode 0 0\nset_mode 2 0\n' > want.log
diff want.log nvml.log || fail "energy: not idled and restored in order"
[ "$(modes)" = "0 3 0" ] || fail "modes after energy: $(modes)"
grep -q "cutune energy: --idle-other-gpus: 2 other GPU(s) set to compute mode PROHIBITED" energy.err ||
  fail "energy's log does not say the GPUs were idled: $(cat energy.err)"
grep -q "^measured 4 kernel(s) at 1 cap(s)" energy.out || fail "energy did not measure: $(cat energy.out)"

# idling_run OUT: a long idled energy run in the background ($pid), returned once both other GPUs are PROHIBITED.
idling_run() {
  : > nvml.log
  "$BIN" energy --backend emu --warmup 0.02 --lrounds 16 --min-steps 100 --outdir idled --idle-other-gpus \
    > "$1" 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do grep -q "set_mode 2 2" nvml.log 2>/dev/null && break; sleep 0.05; done
  grep -q "set_mode 2 2" nvml.log || { kill -9 $pid; fail "the idled run never idled GPU 2: $(cat "$1")"; }
}

# SIGTERM while idled: the handler puts both modes back and the process dies of the signal.
idling_run term.out
[ "$(modes)" = "0 2 2" ] || fail "modes while idled: $(modes)"
kill -TERM $pid
set +e; wait $pid; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "SIGTERM'd run exited 0"
[ "$(modes)" = "0 3 0" ] || fail "modes after SIGTERM: $(modes) (log: $(cat nvml.log))"
no_restore_files || fail "restore files left after SIGTERM"

# (c) SIGKILL: nothing in the process runs; the restore files stay and the next GPU command restores the modes.
idling_run kill.out
kill -KILL $pid
wait $pid 2>/dev/null || true
[ "$(modes)" = "0 2 2" ] || fail "modes after SIGKILL: $(modes)"
[ -f state/computemode_$UUID1.json ] && [ -f state/computemode_$UUID2.json ] || fail "no restore files after SIGKILL"
grep -q '"original_mode":3' state/computemode_$UUID1.json || fail "GPU 1's restore file: $(cat state/computemode_$UUID1.json)"
: > nvml.log
"$BIN" devices > devices.out 2>&1 || true
[ "$(modes)" = "0 3 0" ] || fail "the next command did not restore: $(modes) ($(cat devices.out))"
printf 'set_mode 1 3\nset_mode 2 0\n' > want.log
sort nvml.log | diff want.log - || fail "the recovery set other modes: $(cat nvml.log)"
grep -q "restored the compute mode of GPU $UUID1 (NVIDIA H200) from mode PROHIBITED to mode EXCLUSIVE_PROCESS" \
  devices.out || fail "no word of the recovery: $(cat devices.out)"
no_restore_files || fail "restore files left after the recovery"

# (d) NVML refuses GPU 2 (NO_PERMISSION: not root): exit 1 before any measuring, the message names GPU 2 and why,
# GPU 1 (already idled) put back; then every GPU refusing: nothing set at all.
: > nvml.log
set +e
FAKE_NVML_MODE_SET_ERROR=4:2 "$BIN" $TUNE --outdir refused --idle-other-gpus > refused.out 2> refused.err; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "a refused --idle-other-gpus exited $rc: $(cat refused.err)"
grep -q "setting the compute mode of GPU $UUID2 (NVIDIA H200) to PROHIBITED failed: NVML_ERROR_NO_PERMISSION" \
  refused.err || fail "the refusal does not name the GPU and the reason: $(cat refused.err)"
grep -q "needs root" refused.err || fail "the refusal does not say it needs root: $(cat refused.err)"
printf 'set_mode 1 2\nset_mode 1 3\n' > want.log
diff want.log nvml.log || fail "the refused run left a change"
[ "$(modes)" = "0 3 0" ] || fail "modes after the refusal: $(modes)"
no_restore_files || fail "restore files left after the refusal"
[ ! -d refused/tuningrecords ] || [ -z "$(ls refused/tuningrecords)" ] || fail "the refused run measured something"
: > nvml.log
set +e
FAKE_NVML_MODE_SET_ERROR=4 "$BIN" energy --backend emu --test --outdir idled --idle-other-gpus > refused.out 2> refused.err
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "energy refused exited $rc"
grep -q "GPU $UUID1 (NVIDIA H200) to PROHIBITED failed: NVML_ERROR_NO_PERMISSION" refused.err || fail "$(cat refused.err)"
! grep -q "^measured" refused.out || fail "the refused energy run measured"
[ ! -s nvml.log ] || fail "every GPU refusing still changed something: $(cat nvml.log)"
[ "$(modes)" = "0 3 0" ] || fail "modes after the energy refusal: $(modes)"
echo "it_idle_gpus: ok"
