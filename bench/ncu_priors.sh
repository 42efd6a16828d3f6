#!/usr/bin/env bash
# Issue 17 on a GPU, in one call of the device:
#  priors  the optimizer's suite (kernels/) with Nsight Compute priors (--ncu-every 5) and without (--ncu-every 0),
#          rules only, BUDGET builds per kernel, for each seed of SEEDS, the order 0 then 5 within a seed. All runs
#          share one compile cache (CACHE): a run finds the variants an earlier one compiled, so wall times do not
#          compare; the profiles' own seconds are in the result. Kept per run: summary.json (speedups,
#          builds_to_best), the profile events, every profile.json and trace.md, the log.
#  llm     the LLM generator's wiring on the GPU: no model can be reached from the device, so the scripted
#          OpenAI-compatible server of the tests (tests/llm_server.py, loopback) answers, with good diffs, a whole
#          source, a diff that does not apply, prose, garbage, 429 and 500; --ncu-every 5 puts the profile summary
#          into the prompts. Kept: summary.json, llm_events.jsonl, the requests the server received (the key
#          replaced by its length), and whether the key is in any file the run wrote.
# Writes OUT/ncu_priors.json (both parts, with the GPU, driver, clocks and the exact commands) and OUT/runs.tgz.
# usage: bench/ncu_priors.sh OUT   Env: SEEDS ("1 2"), BUDGET (50), PARTS ("priors llm"), NCU_EVERY (5),
# CACHE (/tmp/cutune_ncu_bench_cache), RUN_TIMEOUT (seconds per optimize run, 3000: a run killed has no summary)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
SRC=$PWD
OUT=$1; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
SEEDS=${SEEDS:-1 2}; BUDGET=${BUDGET:-50}; PARTS=${PARTS:-priors llm}; EVERY=${NCU_EVERY:-5}
CUT=$(cd "$(dirname "$CUTUNE_BIN")" && pwd)/$(basename "$CUTUNE_BIN")
WORK=$OUT/work; mkdir -p "$WORK"
CACHE=${CACHE:-/tmp/cutune_ncu_bench_cache}; mkdir -p "$CACHE"; chmod 700 "$CACHE"
"$CUT" devices --json > "$OUT/devices.json"
(command -v ncu && ncu --version) > "$OUT/ncu_version.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit --format=csv > "$OUT/nvidia_smi.csv" 2>&1
: > "$OUT/runs.txt"

if [[ " $PARTS " == *" priors "* ]]; then
  for seed in $SEEDS; do
    for every in 0 "$EVERY"; do
      name=s${seed}_ncu${every}
      cmd="cutune optimize --input kernels --outdir $name --gpus 0 --budget-builds $BUDGET --no-llm --seed $seed --ncu-every $every"
      t0=$(date +%s.%N)
      COMPILE_CACHE_DIR=$CACHE timeout "${RUN_TIMEOUT:-3000}" "$CUT" optimize --input "$SRC/kernels" --outdir "$WORK/$name" --gpus 0 \
        --budget-builds "$BUDGET" --no-llm --seed "$seed" --ncu-every "$every" > "$WORK/$name.log" 2>&1
      rc=$?
      t1=$(date +%s.%N)
      echo "$name $rc $(python3 -c "print(round($t1 - $t0, 1))") $cmd" >> "$OUT/runs.txt"
      tail -3 "$WORK/$name.log"
    done
  done
fi

if [[ " $PARTS " == *" llm "* ]]; then
  L=$WORK/llm; mkdir -p "$L"
  cat > "$L/script.json" <<'JSON'
[{"make": "diff", "move": "cache_policy_cg"},
 {"make": "source", "move": "change_block_sizes"},
 {"make": "stale", "move": "vectorize_global_loads"},
 {"text": "The kernel looks fine to me."},
 {"body": "%%% not json %%%"},
 {"status": 429, "body": "{}", "retry_after": 0},
 {"make": "diff", "move": "avoid_atomics_reduce"},
 {"status": 500, "body": "oops"},
 {"make": "diff", "move": "softmax_math_fusion"}]
JSON
  python3 "$SRC/tests/llm_server.py" "$L/script.json" "$L/port" "$L/requests.jsonl" & SRV=$!
  for i in $(seq 100); do [ -f "$L/port" ] && break; sleep 0.1; done
  KEY=sk-bench-cutune-$(date +%s%N)
  mkdir -p "$L/specs" && cp "$SRC"/kernels/softmax_row.* "$SRC"/kernels/reduce_sum* "$L/specs/"
  cmd="cutune optimize --input specs --outdir llm --gpus 0 --budget-builds 16 --seed 1 --ncu-every $EVERY --llm-model scripted --llm-per-expansion 2 --llm-timeout 5"
  t0=$(date +%s.%N)
  (cd "$L" && OPENAI_API_KEY=$KEY OPENAI_BASE_URL=http://127.0.0.1:$(cat port)/v1 COMPILE_CACHE_DIR=$CACHE \
     timeout "${RUN_TIMEOUT:-3000}" "$CUT" optimize --input specs --outdir out --gpus 0 --budget-builds 16 --seed 1 --ncu-every "$EVERY" \
     --llm-model scripted --llm-per-expansion 2 --llm-timeout 5 > run.log 2>&1)
  rc=$?
  t1=$(date +%s.%N)
  kill $SRV 2>/dev/null
  echo "llm $rc $(python3 -c "print(round($t1 - $t0, 1))") $cmd" >> "$OUT/runs.txt"
  tail -4 "$L/run.log"
  # the key: in no file the run wrote (the server's own log excepted, which is replaced below)
  if grep -rl --exclude=requests.jsonl -- "$KEY" "$L" > "$L/key_hits.txt"; then echo "KEY FOUND"; fi
  python3 - "$L/requests.jsonl" "$KEY" <<'PY'
import json, sys
path, key = sys.argv[1:3]
rows = [json.loads(l) for l in open(path)]
for r in rows:  # the Authorization header must carry the key, and nothing of it stays in the results
    r["auth_ok"] = r.pop("auth") == f"Bearer {key}"
open(path, "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
fi

python3 - "$OUT" "$WORK" <<'PY'
import glob, json, math, os, sys
out, work = sys.argv[1:3]
dev = json.load(open(f"{out}/devices.json"))
dev = dev["devices"][0] if isinstance(dev, dict) and dev.get("devices") else dev
runs = {}
for line in open(f"{out}/runs.txt"):
    name, rc, wall, cmd = line.rstrip("\n").split(" ", 3)
    runs[name] = {"rc": int(rc), "wall_s": float(wall), "command": cmd}
def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None
res = {"gpu": dev.get("name"), "device": dev, "ncu": open(f"{out}/ncu_version.txt").read().strip().splitlines()[-1:],
       "bench_command": "bench/ncu_priors.sh " + os.path.basename(out), "runs": {}}
for name, r in runs.items():
    d = f"{work}/{name}" if name != "llm" else f"{work}/llm/out"
    try:
        s = json.load(open(f"{d}/summary.json"))
    except OSError:
        res["runs"][name] = r
        continue
    ks = []
    for k in s["kernels"]:
        kd = f"{d}/kernels/_{k['name']}"
        ev = [json.loads(l) for l in open(f"{kd}/events.jsonl")]
        prof = [e for e in ev if e["event"] == "profile"]
        off = [e["why"] for e in ev if e["event"] == "ncu_off"]
        ks.append({x: k[x] for x in ("name", "baseline_ms", "best_ms", "speedup", "builds", "builds_to_best",
                                    "best_variant", "best_moves", "measured", "failed", "transpositions")}
                  | {"profiles": [{"variant": p["variant"], "builds": p["builds"], "dominant": p["dominant"],
                                   "seconds": round(p["seconds"], 2)} for p in prof], "ncu_off": off})
    r.update({"geomean_speedup": geomean([k["speedup"] for k in ks]),
              "geomean_without_reduce_sum": geomean([k["speedup"] for k in ks if k["name"] != "reduce_sum"]),
              "mean_builds_to_best": sum(k["builds_to_best"] for k in ks) / len(ks),
              "profile_seconds": round(sum(p["seconds"] for k in ks for p in k["profiles"]), 1),
              "kernels": ks})
    if name == "llm":
        r["llm"] = s.get("llm")
        evs = [json.loads(l) for l in open(f"{d}/llm_events.jsonl")]
        r["llm_asks"] = len(evs)
        r["llm_outcomes"] = {}
        for e in evs:
            o = "proposal" if "move" in e else e.get("failed", "?")[:60]
            r["llm_outcomes"][o] = r["llm_outcomes"].get(o, 0) + 1
        reqs = [json.loads(l) for l in open(f"{work}/llm/requests.jsonl")]
        r["requests_received"] = len(reqs)
        r["requests_with_key"] = sum(q["auth_ok"] for q in reqs)
        r["prompts_with_profile"] = sum("Nsight Compute profile" in q["body"] for q in reqs)
        r["prompts_with_search_context"] = sum("Search so far" in q["body"] for q in reqs)
        r["key_in_files"] = open(f"{work}/llm/key_hits.txt").read().split()
    res["runs"][name] = r
json.dump(res, open(f"{out}/ncu_priors.json", "w"), indent=1)
print(f"{'run':<12} {'geomean':>8} {'w/o rsum':>8} {'to best':>8} {'prof s':>7} {'wall s':>7}")
for name, r in res["runs"].items():
    if "kernels" in r:
        print(f"{name:<12} {r['geomean_speedup']:>8.2f} {r['geomean_without_reduce_sum'] or 0:>8.2f} "
              f"{r['mean_builds_to_best']:>8.1f} {r['profile_seconds']:>7.1f} {r['wall_s']:>7.1f}")
        for k in r["kernels"]:
            print(f"   {k['name']:<14} {k['speedup']:>8.2f}x best at build {k['builds_to_best']:>3}  profiles "
                  + ",".join(f"{p['variant']}@{p['builds']}:{p['dominant']}" for p in k["profiles"])
                  + (f"  ncu off: {k['ncu_off'][0][:100]}" if k["ncu_off"] else ""))
PY
# what to bring back: no PTX, sources, compile logs, caches or reference outputs
cd "$WORK" && tar czf "$OUT/runs.tgz" --exclude='*.ptx' --exclude='kernel.cu' --exclude='stdout.log' \
  --exclude='*.bin' --exclude='.scratch' --exclude='*.cache' --exclude='cache' --exclude='*.sass' . \
  && rm -rf "$WORK"
