#!/usr/bin/env bash
# cutune optimize with the LLM generator on the host emulator, against a scripted OpenAI-compatible server on
# loopback (tests/llm_server.py): good diffs (one stating its gain), a diff that does not apply, a whole source,
# prose, garbage, an empty
# reply, 10 MB, a reply slower than the timeout, 429 then success, 500, malformed JSON. Each bad reply is a failed
# proposal (a line of llm_events.jsonl; a diff that does not apply a failed build), a stated gain is the edge's
# predicted gain (the model's own estimate, "rule_gain" in the state file), the run ends normally, a state's
# prompt carries what the search knows of it (its parent's time among it), the replies are cached (a second run with
# a fresh folder, the same cache and the same times asks nothing it asked before), and the key is in no file and no
# log.
set -euo pipefail
BIN=$1; DIR=$2
SRC=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
KEY=sk-it-cutune-llm-0123456789abcdef
cat > script.json <<'JSON'
[{"make": "diff", "move": "cache_policy_cg"},
 {"make": "diff", "move": "pad_tail_and_mask", "gain": 0.37},
 {"make": "stale", "move": "vectorize_global_loads"},
 {"make": "source", "move": "change_block_sizes"},
 {"text": "I think the kernel is fine as it is."},
 {"body": "%%% not json %%%"},
 {"text": ""},
 {"bytes": 10485760},
 {"delay_s": 3, "text": "too late"},
 {"status": 429, "body": "{}", "retry_after": 0},
 {"status": 500, "body": "oops"},
 {"make": "diff", "move": "avoid_atomics_reduce"},
 {"body": "{\"choices\": [{\"message\": "},
 {"text": "MOVE: unroll_all_loops\n```diff\n--- a/kernel.cu\n+++ b/kernel.cu\n@@ -1 +1 @@\n-a\n+b\n```"},
 {"make": "diff", "move": "cache_policy_cg", "gain": "0.6"}]
JSON
python3 "$SRC/tests/llm_server.py" script.json port requests.jsonl prompts.jsonl & SRV=$!
trap 'kill $SRV 2>/dev/null || true' EXIT
for i in $(seq 100); do [ -f port ] && break; sleep 0.1; done
[ -f port ] || fail "the test server did not start"
# one table of times for every run: the prompts carry measured times, so only the same times ask the same prompts
export OPENAI_API_KEY=$KEY OPENAI_BASE_URL=http://127.0.0.1:$(cat port)/v1 COMPILE_CACHE_DIR=$DIR/cache \
  CUTUNE_REPLAY_TIMES=$DIR/times.txt
mkdir specs && cp "$SRC"/kernels/reduce_sum* specs/
"$BIN" optimize --input specs --outdir out --backend emu --budget-builds 10 --seed 3 --sizes N=8192 \
  --llm-model scripted --llm-per-expansion 4 --llm-timeout 1 > run.log 2>&1 || { cat run.log; fail "optimize exited"; }
cat run.log | tail -5
grep -q "LLM scripted proposes beside the rules" run.log || fail "the LLM generator was not used"
grep -q "^LLM scripted: [0-9]* requests" run.log || fail "no usage line"
python3 - <<'PY' || fail "events / summary"
import glob, json
ev = [json.loads(l) for l in open("out/llm_events.jsonl")]
moves = [e["move"] for e in ev if "move" in e]
fails = [e["failed"] for e in ev if "failed" in e]
print("llm events:", len(ev), "proposals:", moves, "failed:", fails)
assert "cache_policy_cg" in moves and "change_block_sizes" in moves, moves
want = ["none of the nine canonical moves", "not JSON", "empty", "bytes", "unroll_all_loops"]
for w in want:
    assert any(w in f for f in fails), (w, fails)
assert all(e["cached"] is False for e in ev)
# the stated gain: the proposal's predicted gain in its event and as the edge's own estimate in the state file
gains = {e["move"]: e["pred_gain"] for e in ev if "move" in e and e["move"] != "cache_policy_cg"}
assert gains.get("pad_tail_and_mask") == 0.37 and gains.get("change_block_sizes") == 0.10, gains
st = json.load(open("out/kernels/_reduce_sum/search_state.json"))
edges = [e for n in st["nodes"] for e in n["edges"] if e["label"].startswith("llm scripted: pad_tail_and_mask")]
assert edges and all(e["rule_gain"] == 0.37 for e in edges), edges
s = json.load(open("out/summary.json"))
assert s["llm"]["requests"] >= len(ev) and s["llm"]["retries"] >= 2, s["llm"]
# the diff that does not apply is a failed build, recorded as such
res = [json.load(open(f)) for f in glob.glob("out/kernels/_reduce_sum/variants/*/result.json")]
print("variants:", len(res), "failed:", sum(1 for r in res if not r.get("ok", r.get("status") == "ok")))
PY
# A stale diff is a proposal like any other: when the search builds it, the build fails and says why.
python3 - <<'PY' || fail "a stale diff built"
import glob, json, os
for d in glob.glob("out/kernels/_reduce_sum/variants/*"):
    p = os.path.join(d, "candidate.diff")
    if os.path.exists(p) and "no such line" in open(p).read():
        r = json.load(open(os.path.join(d, "result.json")))
        print("stale diff built in", d, "->", r)
        assert not r.get("compiled"), r
PY
# The search's context: in the prompt of a state other than the baseline, before the instruction, with the state's
# parent and its time as the state file has them.
python3 - <<'PY' || fail "context in the prompts"
import json, re
st = json.load(open("out/kernels/_reduce_sum/search_state.json"))
nodes = {n["id"]: n for n in st["nodes"]}
users = [json.loads(l)["user"] for l in open("prompts.jsonl")]
seen = 0
for u in users:
    state = re.search(r"^State (\S+): ", u, re.M)
    parent = re.search(r"^Parent (\S+): (\S+) ms", u, re.M)
    if not state or state.group(1) == "baseline":
        continue
    assert u.index("Search so far:\n") < u.index("This is proposal"), u
    assert parent and nodes[state.group(1)]["parent"] == parent.group(1), u
    assert parent.group(2) == "%.4g" % nodes[parent.group(1)]["ms"], (parent.group(2), nodes[parent.group(1)]["ms"])
    if not seen:
        print(u[u.index("Search so far:"):])
    seen += 1
assert seen, "no prompt for a state other than the baseline"
print(seen, "prompts with a non-root state's context")
PY
# The key: sent to the server as a bearer token, written nowhere.
grep -q "Bearer $KEY" requests.jsonl || fail "the key was not sent"
if grep -rl -- "$KEY" out run.log cache 2>/dev/null; then fail "the API key was written to a file"; fi
# The same search again with the replies cached, without the table of times (the emulator's times differ from run
# to run; the cache's key masks the numbers of the search's context): the root's asks come from the cache.
n0=$(wc -l < requests.jsonl)
mkdir out2 && cp -r out/llm_cache out2/
env -u CUTUNE_REPLAY_TIMES "$BIN" optimize --input specs --outdir out2 --backend emu --budget-builds 10 --seed 3 --sizes N=8192 \
  --llm-model scripted --llm-per-expansion 4 --llm-timeout 1 > run2.log 2>&1 || { cat run2.log; fail "second run"; }
python3 - <<'PY' || fail "cache"
import json
ev = [json.loads(l) for l in open("out2/llm_events.jsonl")]
cached = [e for e in ev if e["cached"]]
print("second run:", len(ev), "asks,", len(cached), "from the cache")
assert cached, ev
first = [json.loads(l) for l in open("out/llm_events.jsonl")]
# the root's four asks: the same prompt up to its numbers; each the first run had an answer to is not asked again
root = [e for e in first[:4] if e["requests"] > 0 and "move" in e]
assert root and all(e["cached"] for e in ev[:4] if e["prompt_hash"] in {r["prompt_hash"] for r in root}), (first[:4], ev[:4])
assert sum(e["cached"] for e in ev[:4]) >= len(root), (first[:4], ev[:4])
PY
# Edge diffs survive a kill: the state file keeps every unbuilt edge's diff, so the resumed search builds the edges
# made before the kill from it (the reply's very diff) and asks the model only about states it expands afterwards.
K3=out3/kernels/_reduce_sum
ARGS3=(optimize --input specs --outdir out3 --backend emu --budget-builds 12 --seed 3 --sizes N=8192
       --llm-model scripted --llm-per-expansion 4 --llm-timeout 1)
"$BIN" "${ARGS3[@]}" > run3.log 2>&1 & pid=$!
for _ in $(seq 1200); do
  b=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["builds"])' $K3/search_state.json 2>/dev/null \
      || echo 0)
  [ "$b" -ge 3 ] && break
  sleep 0.05
done
kill -9 $pid 2>/dev/null || true; wait $pid 2>/dev/null || true
cp $K3/search_state.json state_at_kill.json
asked=$(wc -l < prompts.jsonl)
"$BIN" "${ARGS3[@]}" --resume > run4.log 2>&1 || { cat run4.log; fail "resume with the LLM exited"; }
python3 - "$asked" <<'PY' || fail "edge diffs across a kill"
import glob, json, os, re, sys
K = "out3/kernels/_reduce_sum"
kill = json.load(open("state_at_kill.json"))
assert kill["builds"] < 12, "the run ended before the kill"
expanded = {n["id"] for n in kill["nodes"] if n["edges_ready"]}
saved = {(n["id"], e["label"]): e["diff"] for n in kill["nodes"] for e in n["edges"] if e["child"] is None}
assert saved and all(d for d in saved.values()), "an unbuilt edge without its diff"
after = [json.loads(l)["user"] for l in open("prompts.jsonl")][int(sys.argv[1]):]
for u in after:
    m = re.search(r"^State (\S+): ", u, re.M)
    assert m and m.group(1) not in expanded, "asked again about a state expanded before the kill: %s" % u[-600:]
rebuilt = llm = 0
for d in glob.glob(K + "/variants/*"):
    c = json.load(open(d + "/control.json"))
    if (c["parent"], c["label"]) in saved:
        assert open(d + "/candidate.diff").read() == saved[(c["parent"], c["label"])], d
        rebuilt += 1
        llm += c["label"].startswith("llm ")
assert json.load(open(K + "/search_state.json"))["builds"] == 12
assert rebuilt, "no edge made before the kill was built after it"
print("after the kill:", len(after), "prompts, all for new states;", rebuilt, "edges made before it built from their "
      "saved diffs,", llm, "of them the model's")
PY
echo "ok: optimize with the LLM generator against the scripted server"
