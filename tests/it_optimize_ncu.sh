#!/usr/bin/env bash
# Nsight Compute priors and seed 002's worker, end to end on the host emulator with a stand-in ncu (tests/fake_ncu.py:
# it runs the program it wraps, as ncu does, and prints a CSV the real ncu recorded on an H100, tests/fixtures/ncu/).
#  1. --ncu-every 4 on reduce_sum with the atomics-bound profile: the baseline is profiled before the root is
#     expanded (ncu wrapping `cutune optimize --worker baseline/control.json --profile-run`, clocks left alone), the
#     profile is saved with the variant (ncu.csv, profile.json) and in events.jsonl and trace.md, and every root edge's
#     predicted gain is its rule's estimate times the profile's weight for its move; later profiles come N builds on.
#  2. --worker on the best variant's control.json: checked and timed again, runner_result.json; on a variant whose
#     kernel.cu was broken: a wrong result, exit 1; on a file that is not a control file: a sentence, exit 1.
#  3. ncu refusing the counters, failing, hanging past --ncu-timeout, or missing: said once, and the search ends
#     normally with its budget spent.
set -euo pipefail
BIN=$1; DIR=$2
SRC=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
mkdir specs
cp "$SRC"/kernels/reduce_sum* specs/
export COMPILE_CACHE_DIR=$DIR/cache
export CUTUNE_NCU=$SRC/tests/fake_ncu.py FAKE_NCU_FIXTURE=$SRC/tests/fixtures/ncu/atomics.csv FAKE_NCU_LOG=$DIR/ncu_calls
opt() { "$BIN" optimize --input specs --backend emu --no-llm --budget-builds 12 --seed 5 --sizes N=8192 "$@"; }

# 1. priors from the profile
opt --outdir out --ncu-every 4 > run.log 2>&1 || { cat run.log; fail "optimize --ncu-every exited $?"; }
python3 - out "$DIR/ncu_calls" <<'PY' || { cat run.log; fail "ncu priors"; }
import json, sys
out, calls = sys.argv[1:3]
kd = f"{out}/kernels/_reduce_sum"
calls = [json.loads(l) for l in open(calls)]
assert calls, "ncu was never run"
first = calls[0]
assert first[first.index("--clock-control") + 1] == "none", first
assert first[first.index("-k") + 1] == "regex:^reduce_sum$", first
assert first[first.index("--worker") + 1] == f"{kd}/baseline/control.json" and "--profile-run" in first, first
prof = json.load(open(f"{kd}/baseline/profile.json"))
assert prof["dominant"] == "atomics", prof
assert open(f"{kd}/baseline/ncu.csv").read().count("reduce_sum") >= 1
w = prof["move_weights"]
assert w["avoid_atomics_reduce"] == max(w.values()) and w["avoid_atomics_reduce"] > 1.9, w
ev = [json.loads(l) for l in open(f"{kd}/events.jsonl")]
kinds = [e["event"] for e in ev]
assert kinds[0] == "baseline" and kinds[1] == "profile" and ev[1]["variant"] == "baseline", kinds[:3]
profiles = [e for e in ev if e["event"] == "profile"]
assert all(p["builds"] % 4 == 0 for p in profiles), profiles  # the baseline at 0, the incumbent every 4 builds
assert len(profiles) == len(calls), (len(profiles), len(calls))  # a state is profiled once
for p in profiles[1:]:
    d = "baseline" if p["variant"] == "baseline" else f"variants/{p['variant']}"
    assert json.load(open(f"{kd}/{d}/profile.json"))["variant"] == p["variant"]
state = json.load(open(f"{kd}/search_state.json"))
root = state["nodes"][0]
assert root["edges"], root
for e in root["edges"]:  # no history at the root's expansion: the predicted gain is the rule's times the weight
    assert abs(e["pred_gain"] - e["rule_gain"] * w[e["move"]]) < 1e-9 * max(1, abs(e["pred_gain"])), (e, w)
assert "Profiled baseline after 0 builds" in open(f"{kd}/trace.md").read()
assert state["builds"] == 12
# the builds it took to reach the best: the compiled variants up to the best one (one runner: one at a time)
k = json.load(open(f"{out}/summary.json"))["kernels"][0]
import os
compiled = sorted(v for v in os.listdir(f"{kd}/variants")
                  if json.load(open(f"{kd}/variants/{v}/result.json"))["compiled"])
want = 0 if k["best_variant"] == "baseline" else len([v for v in compiled if v <= k["best_variant"]])
assert k["builds_to_best"] == want and want > 0, (k, compiled)
print("profiles:", [(p["variant"], p["builds"]) for p in profiles], "root edges:",
      [(e["move"], round(e["pred_gain"] / e["rule_gain"], 3)) for e in root["edges"] if e["rule_gain"]])
PY
grep -q "profiled baseline: atomics-bound" run.log || { cat run.log; fail "no profile line on the console"; }

# 2. the worker
KD=out/kernels/_reduce_sum
"$BIN" optimize --worker $KD/best/control.json --backend emu > worker.log 2>&1 || { cat worker.log; fail "worker"; }
python3 -c "
import json; r = json.load(open('$KD/best/runner_result.json'))
assert r['status'] == 'ok' and r['median_ms'] > 0, r" || fail "runner_result.json"
grep -q ": ok, " worker.log || { cat worker.log; fail "worker line"; }
mkdir -p $KD/variants/broken
cp $KD/baseline/control.json $KD/baseline/kernel.cu $KD/variants/broken/
sed -i 's/atomicAdd(out, acc)/atomicAdd(out, acc + 1.0f)/' $KD/variants/broken/kernel.cu
grep -q "acc + 1.0f" $KD/variants/broken/kernel.cu || fail "could not break the kernel"
set +e
"$BIN" optimize --worker $KD/variants/broken/control.json --backend emu > broken.log 2>&1; rc=$?
set -e
[ $rc -eq 1 ] || { cat broken.log; fail "a broken variant: exit $rc, not 1"; }
python3 -c "
import json; r = json.load(open('$KD/variants/broken/runner_result.json'))
assert r['status'] == 'wrong_result', r" || { cat broken.log; fail "the broken variant's result"; }
echo '[1, 2]' > notcontrol.json
set +e
"$BIN" optimize --worker notcontrol.json --backend emu > notcontrol.log 2>&1; rc=$?
set -e
[ $rc -ne 0 ] && grep -q "not a control file" notcontrol.log || { cat notcontrol.log; fail "a non-control file: $rc"; }

# 3. ncu that cannot profile: said once, the search goes on
for mode in refuse fail hang missing; do
  rm -f "$DIR/ncu_calls"
  if [ $mode = missing ]; then
    CUTUNE_NCU=$DIR/no_such_ncu opt --outdir out_$mode --ncu-every 2 --ncu-timeout 3 > $mode.log 2>&1 \
      || { cat $mode.log; fail "$mode: optimize exited $?"; }
  else
    FAKE_NCU_MODE=$mode opt --outdir out_$mode --ncu-every 2 --ncu-timeout 3 > $mode.log 2>&1 \
      || { cat $mode.log; fail "$mode: optimize exited $?"; }
  fi
  n=$(grep -c "going on without profile priors" $mode.log || true)
  [ "$n" = 1 ] || { cat $mode.log; fail "$mode: said $n times, not once"; }
  python3 - out_$mode $mode <<'PY' || { cat $mode.log; fail "$mode"; }
import json, sys
out, mode = sys.argv[1:3]
kd = f"{out}/kernels/_reduce_sum"
state = json.load(open(f"{kd}/search_state.json"))
assert state["builds"] == 12, state["builds"]
ev = [json.loads(l) for l in open(f"{kd}/events.jsonl")]
assert not any(e["event"] == "profile" for e in ev)
off = [e for e in ev if e["event"] == "ncu_off"]
if mode == "missing":
    assert not off  # the CLI said it before the search: no profiler to fail
else:
    assert len(off) == 1, off
    want = {"refuse": "ERR_NVGPUCTRPERM", "fail": "exited 1: ==ERROR== fake ncu: failed on purpose", "hang": "killed"}[mode]
    assert want in off[0]["why"], off
    print(mode, "->", off[0]["why"][:160])
PY
done
# 4. the profile in the LLM's prompt: the scripted server of it_optimize_llm answers, every prompt carries the
#    summary of the profile standing for its state (the state's own, or its nearest profiled ancestor's)
python3 "$SRC/tests/llm_server.py" <(echo '[{"make": "diff", "move": "cache_policy_cg"}]') port requests.jsonl \
  prompts.jsonl & SRV=$!
trap 'kill $SRV 2>/dev/null || true' EXIT
for i in $(seq 100); do [ -f port ] && break; sleep 0.1; done
[ -f port ] || fail "the test server did not start"
OPENAI_API_KEY=sk-it-ncu OPENAI_BASE_URL=http://127.0.0.1:$(cat port)/v1 \
  "$BIN" optimize --input specs --backend emu --budget-builds 6 --seed 5 --sizes N=8192 --outdir out_llm \
  --ncu-every 3 --llm-model scripted > llm.log 2>&1 || { cat llm.log; fail "optimize with the LLM exited $?"; }
python3 - prompts.jsonl out_llm <<'PY' || { cat llm.log; fail "the profile in the prompt"; }
import json, sys
prompts = [json.loads(l)["user"] for l in open(sys.argv[1])]
assert prompts, "no prompt"
kd = f"{sys.argv[2]}/kernels/_reduce_sum"
summary = json.load(open(f"{kd}/baseline/profile.json"))["summary"]
assert prompts[0].count("Profile of this state: " + summary) == 1, prompts[0][-2000:]
for p in prompts[1:]:
    assert "Nsight Compute profile of reduce_sum" in p and ("Profile of this state" in p or "above this state" in p), p[-1500:]
print(len(prompts), "prompts, each with a profile summary")
PY
echo "ok"
