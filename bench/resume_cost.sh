#!/usr/bin/env bash
# What resuming costs (issue 15: <= 0.5 s for a 10,000-record log): a Conv2D and a GEMM record log of 10,000 lines
# (a real 64-trial emulator log repeated with fresh trial numbers), then `tune` asked for exactly the trials the log
# holds, so it loads the log, rebuilds the strategy's state and stops without measuring: its wall time, best of 5;
# then one more trial (the strategy's cost model trained on the 10,000, one proposal compiled and measured).
# Writes OUT.json. Runs on the CPU. usage: bench/resume_cost.sh CUTUNE OUT.json
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); OUTJ=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$BIN" tune --backend emu --workloads tiny --case 1 --trials 64 --quiet --no-sample --outdir "$WORK/conv" >/dev/null 2>&1
"$BIN" tune --gemm M=64 N=48 K=40 t=64 --backend emu --quiet --outdir "$WORK/gemm" >/dev/null 2>&1
python3 - "$BIN" "$WORK" "$OUTJ" <<'PY'
import glob, json, subprocess, sys, time
binp, work, outj = sys.argv[1:4]
jobs = {"conv": ["tune", "--backend", "emu", "--workloads", "tiny", "--case", "1", "--quiet", "--no-sample"],
        "gemm": ["tune", "--gemm", "M=64", "N=48", "K=40", "t=10000", "--backend", "emu", "--quiet"]}
out = {"command": "bench/resume_cost.sh %s %s" % (binp, outj), "records": 10000, "jobs": {}}
for name, args in jobs.items():
    log = [p for p in glob.glob("%s/%s/tuningrecords/*.json" % (work, name))][0]
    recs = [json.loads(l) for l in open(log)]
    with open(log, "w") as f:
        for t in range(10000):
            r = dict(recs[t % len(recs)])
            r["trial"] = t
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    times = []
    for _ in range(5):
        t0 = time.time()
        extra = ["--trials", "10000"] if name == "conv" else []
        subprocess.run([binp] + args + extra + ["--outdir", "%s/%s" % (work, name)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.time() - t0)
    # and the run that goes on: one more trial, proposed by the strategy rebuilt from the 10,000 (the cost model
    # trained on them), compiled and measured, then the process ends
    t0 = time.time()
    more = ["--trials", "10001"] if name == "conv" else []
    margs = [a if a != "t=10000" else "t=10001" for a in args]
    subprocess.run([binp] + margs + more + ["--outdir", "%s/%s" % (work, name)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    one_more = time.time() - t0
    out["jobs"][name] = {"best_s": round(min(times), 3), "median_s": round(sorted(times)[2], 3),
                         "one_more_trial_s": round(one_more, 3)}
    print("%-4s resume of a 10,000-record log: best %.3f s, median %.3f s; with one more trial (proposed, compiled, "
          "measured on the emulator): %.3f s" % (name, min(times), sorted(times)[2], one_more))
json.dump(out, open(outj, "w"), indent=1)
PY
