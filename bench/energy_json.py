#!/usr/bin/env python3
"""Assembles bench/results/energy_h200.json from a `cutune energy` run's kernel_outputs/ (energy.jsonl per cap)."""
import argparse, glob, json, os, statistics

ap = argparse.ArgumentParser()
ap.add_argument("--work", required=True)
ap.add_argument("--devices", required=True)
ap.add_argument("--command", required=True)
ap.add_argument("--wall", type=float, default=None)
ap.add_argument("--out", required=True)
a = ap.parse_args()

dev = json.load(open(a.devices))["devices"][0]
caps = {}
with open(os.path.join(a.work, "kernel_outputs", "powercaps.csv")) as f:
    next(f)
    for line in f:
        p, w = line.strip().split(",")
        caps[int(p)] = float(w)
kernels = []
for path in sorted(glob.glob(os.path.join(a.work, "kernel_outputs", "case*", "powercap*", "energy.jsonl"))):
    for line in open(path):
        r = json.loads(line)
        kernels.append({"case": r["case"], "id": r["id"], "power_limit_w": r["power_limit_w"],
                        "time_ms": r["time_ms"], "energy_mj": r["energy_mj"], "iters": r["iters"],
                        "cv_energy": r["cv_energy"], "cv_time": r["cv_time"], "seconds": r["seconds"],
                        "gflops": r["gflops"], "power_w": r["power_w"], "edp_ms_mj": r["edp"],
                        "idle_w": r.get("idle_w"), "step_period_s": r["step_period_s"], "sm_mhz": r["sm_mhz"],
                        "mem_mhz": r["mem_mhz"], "temp_c_max": r["temp_c_max"], "throttle": r["throttle"]})
kernels.sort(key=lambda k: (k["case"], k["power_limit_w"], k["id"]))
cv = [k["cv_energy"] for k in kernels]
secs = [k["seconds"] for k in kernels]
out = {
    "gpu": dev.get("name"), "uuid": dev.get("uuid"), "driver": dev.get("driver"),
    "power_limit_w": sorted(set(caps.values())), "command": a.command, "devices": dev,
    "summary": {"kernels": len(kernels), "cv_energy_max": max(cv), "cv_energy_median": statistics.median(cv),
                "seconds_max": max(secs), "seconds_median": statistics.median(secs), "wall_s": a.wall},
    "kernels": kernels,
}
if len(out["power_limit_w"]) == 1:
    out["power_limit_w"] = out["power_limit_w"][0]
json.dump(out, open(a.out, "w"), indent=1)
print("%d kernels; energy CV max %.2f%% median %.2f%%; seconds per kernel max %.2f median %.2f" %
      (len(kernels), 100 * max(cv), 100 * statistics.median(cv), max(secs), statistics.median(secs)))
for k in kernels:
    if k["id"] <= 5 or k["id"] % 5 == 1:
        print("case %d id %2d: %.4f ms %.3f mJ %.1f W CV %.2f%% %.2f s" % (
            k["case"], k["id"], statistics.mean(k["time_ms"]), statistics.mean(k["energy_mj"]), k["power_w"],
            100 * k["cv_energy"], k["seconds"]))
