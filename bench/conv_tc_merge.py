#!/usr/bin/env python3
"""Joins bench/conv_tc.sh's groups (one bench/assemble.py result per list, dtype and layout) into one JSON: each
group's cases, geomean and worst speedup against cuDNN in the same dtype and layout, cold (the harness's L2-flushed
median) and warm (both sides replayed back to back in a CUDA graph), with the issue's goals beside them. Reads only
files that cutune wrote; a group whose result is missing is listed as missing, not left out silently."""
import argparse, json, math, os

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--command", required=True)
ap.add_argument("results", nargs="+")
a = ap.parse_args()

# Issue 20's goals: fp16 NHWC batch 1 geomean >= 1.2x, batch 32 >= 1.0x; tf32 geomean >= 1.0x.
def goal(lst, dtype):
    if dtype == "fp16":
        return 1.2 if not lst.endswith("_b32") else 1.0
    return 1.0 if dtype == "tf32" else None

def geomean(v):
    v = [x for x in v if x and x > 0]
    return round(math.exp(sum(map(math.log, v)) / len(v)), 3) if v else None

groups, device = [], None
for path in a.results:
    name = os.path.basename(os.path.dirname(path))
    lst, dtype, layout = name.rsplit("_", 2)
    if not os.path.exists(path):
        groups.append({"group": name, "missing": True})
        continue
    r = json.load(open(path))
    device = device or {k: r.get(k) for k in ("gpu", "uuid", "driver", "cuda_driver_version", "sm_clock_mhz",
                                             "max_sm_clock_mhz", "mem_clock_mhz", "power_limit_w")}
    cold = [c["speedup"] for c in r["cases"]]
    warm = [c.get("speedup_warm") for c in r["cases"]]
    worst = min(r["cases"], key=lambda c: c["speedup"] if c["speedup"] > 0 else 0.0) if r["cases"] else None
    g = {"group": name, "list": lst, "dtype": dtype, "layout": layout, "cases": r["cases"],
         "geomean_speedup": geomean(cold), "geomean_speedup_warm": geomean(warm),
         "worst_speedup": worst["speedup"] if worst else None, "worst_case": worst["case"] if worst else None,
         "goal_geomean": goal(lst, dtype), "group_command": r.get("command")}
    g["meets_goal"] = None if g["goal_geomean"] is None or g["geomean_speedup"] is None else \
        g["geomean_speedup"] >= g["goal_geomean"]
    groups.append(g)
out = dict(device or {}, command=a.command, groups=groups)
json.dump(out, open(a.out, "w"), indent=1)
print(f"{'group':<28} {'cases':>5} {'geomean':>8} {'warm':>6} {'worst':>6} {'goal':>5}")
for g in groups:
    if g.get("missing"):
        print(f"{g['group']:<28} missing")
        continue
    print(f"{g['group']:<28} {len(g['cases']):>5} {g['geomean_speedup'] or 0:>7.2f}x {g['geomean_speedup_warm'] or 0:>5.2f}x"
          f" {g['worst_speedup'] or 0:>5.2f}x {g['goal_geomean'] or '-':>5}")
