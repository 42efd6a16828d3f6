#!/usr/bin/env python3
"""Joins the parts of a benchmark run that was split over several device calls (each part a JSON written by
bench/assemble.py for a subset of the cases, each case tuned and compared with the vendor library in its own call)
into one file, and prints the table."""
import argparse, json, math

ap = argparse.ArgumentParser()
ap.add_argument("parts", nargs="+")
ap.add_argument("--out", required=True)
a = ap.parse_args()
parts = [json.load(open(p)) for p in a.parts]
out = dict(parts[0])
out["command"] = " ; ".join(p["command"] for p in parts)
out["parts"] = [{k: p.get(k) for k in ("command", "uuid", "sm_clock_mhz", "trials_per_s")} for p in parts]
out["cases"] = sorted((c for p in parts for c in p["cases"]), key=lambda c: c["case"])
trials = sum(c["trials"] for c in out["cases"])
secs = sum(c["tuning_s"] for c in out["cases"])
out["trials_per_s"] = round(trials / secs, 2) if secs else None
sp = [c["speedup"] for c in out["cases"] if c["speedup"] > 0]
out["geomean_speedup"] = round(math.exp(sum(map(math.log, sp)) / len(sp)), 3) if sp else None
json.dump(out, open(a.out, "w"), indent=1)
print(f"{'case':>4} {'shape':<34} {'trials':>6} {'cuDNN ms':>9} {'cutune ms':>9} {'speedup':>7} {'tune s':>7}")
for c in out["cases"]:
    print(f"{c['case']:>4} {str(c['shape']):<34} {c['trials']:>6} {c['cudnn_ms']:>9.4f} {c['cutune_ms']:>9.4f} "
          f"{c['speedup']:>6.2f}x {c['tuning_s']:>7.1f}")
print(f"trials/s: {out['trials_per_s']}   geomean speedup vs cuDNN: {out['geomean_speedup']}")
