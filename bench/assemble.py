#!/usr/bin/env python3
"""Assembles a Conv2D benchmark run (devices, per-case tuning time, baseline comparison) into one JSON file and
prints the table. Used by bench/conv_*.sh; reads only files that cutune wrote in the same run."""
import argparse, glob, json, math, os

ap = argparse.ArgumentParser()
ap.add_argument("--devices", required=True)
ap.add_argument("--tuning", required=True)
ap.add_argument("--baseline", required=True)
ap.add_argument("--records", required=True)
ap.add_argument("--command", required=True)
ap.add_argument("--out", required=True)
a = ap.parse_args()

devs = json.load(open(a.devices))
dev = devs["devices"][0]
wall = {r["case"]: r.get("wall_s", r.get("tuning_s")) for r in map(json.loads, open(a.tuning))}
rows = [json.loads(l) for l in open(a.baseline) if l.strip()]
# Tuning time: the search's own (tune's final.jsonl has it), else the wall time of the tune command.
tuning = {r["case"]: (r["search_s"] if r.get("search_s", -1) > 0 else wall.get(r["case"], 0.0)) for r in rows}
total_trials, total_s = 0, 0.0
cases = []
for r in rows:
    c = r["case"]
    recs = []
    for f in glob.glob(os.path.join(a.records, f"case{c}_*.json")):
        recs += [json.loads(l) for l in open(f)]
    ok = [x for x in recs if x["status"] == "ok"]
    failures = {}
    for x in recs:
        if x["status"] != "ok":
            failures[x["status"]] = failures.get(x["status"], 0) + 1
    total_trials += len(recs)
    total_s += tuning.get(c, 0.0)
    cases.append({"case": c, "shape": r["shape"], "trials": len(recs), "valid": len(ok), "failures": failures,
                  "cutune_ms": r["cutune_ms"], "cudnn_ms": r["cudnn_ms"], "cudnn_algo": r["cudnn_algo"],
                  "speedup": r["speedup"], "cutune_gflops": r["cutune_gflops"], "cudnn_gflops": r["cudnn_gflops"],
                  "tuning_s": round(tuning.get(c, 0.0), 1), "wall_s": wall.get(c),
                  "search_ms": r.get("cutune_search_ms"), "best_sched": r["best_sched"],
                  "speedup_warm": r.get("speedup_warm"), "cudnn_tf32_ms": r.get("cudnn_tf32_ms")})
sp = [c["speedup"] for c in cases if c["speedup"] > 0]
out = {
    "gpu": dev.get("name"), "uuid": dev.get("uuid"), "driver": dev.get("driver"),
    "cuda_driver_version": dev.get("cuda_driver_version"), "sm_clock_mhz": dev.get("sm_clock_mhz"),
    "max_sm_clock_mhz": dev.get("max_sm_clock_mhz"), "mem_clock_mhz": dev.get("mem_clock_mhz"),
    "power_limit_w": dev.get("power_limit_w"), "command": a.command, "cases": cases,
    "trials_per_s": round(total_trials / total_s, 2) if total_s > 0 else None,
    "geomean_speedup": round(math.exp(sum(map(math.log, sp)) / len(sp)), 3) if sp else None,
}
os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
json.dump(out, open(a.out, "w"), indent=1)
print(f"\n{out['gpu']}  driver {out['driver']}  {a.command}")
print(f"{'case':>4} {'shape':<34} {'trials':>6} {'valid':>5} {'cuDNN ms':>9} {'cutune ms':>9} {'speedup':>7} "
      f"{'GFLOP/s':>8} {'tune s':>7}  cuDNN algo")
for c in cases:
    print(f"{c['case']:>4} {str(c['shape']):<34} {c['trials']:>6} {c['valid']:>5} {c['cudnn_ms']:>9.4f} "
          f"{c['cutune_ms']:>9.4f} {c['speedup']:>6.2f}x {c['cutune_gflops']:>8.0f} {c['tuning_s']:>7.1f}  "
          f"{c['cudnn_algo']}")
print(f"trials/s over the run: {out['trials_per_s']}   geomean speedup vs cuDNN: {out['geomean_speedup']}")
