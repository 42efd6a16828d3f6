#!/usr/bin/env python3
"""Joins the parts of bench/core_h200.sh (folders unpacked from its archives) into bench/results/core_h200.json:
the previous binary against the one core, side by side on one GPU per part.

usage: bench/core_merge.py OUT_JSON PART_DIR...   (each PART_DIR holds PART.jsonl, devices.json and the part's files)
"""
import glob
import json
import math
import os
import re
import sys


def lines(path):
    return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def device(d):
    p = os.path.join(d, "devices.json")
    if not os.path.exists(p):
        return None
    j = json.load(open(p))
    g = (j.get("gpus") or j.get("devices") or [j])[0] if isinstance(j, dict) else j[0]
    keep = ("name", "uuid", "driver_string", "driver_version", "sm_clock_mhz", "max_sm_clock_mhz", "power_limit_w")
    return {k: g.get(k) for k in keep if k in g}


def conv(d):
    runs = lines(os.path.join(d, "conv.jsonl"))
    out = {"commands": sorted({r["command"] for r in runs}), "cases": [], "rc_nonzero": [r for r in runs if r["rc"]]}
    for who in ("old", "new"):
        fin = {r["case"]: r for r in lines(os.path.join(d, "conv_final_%s.jsonl" % who))}
        tune = {int(r["what"].split()[-1]): r for r in runs if r["bin"] == who and r["what"].startswith("tune")}
        for c in sorted(fin):
            row = next((x for x in out["cases"] if x["case"] == c), None)
            if row is None:
                row = {"case": c, "shape": fin[c]["shape"]}
                out["cases"].append(row)
            f = fin[c]
            row[who] = {"cutune_ms": f["cutune_ms"], "cudnn_ms": f["cudnn_ms"], "cudnn_algo": f["cudnn_algo"],
                        "speedup_vs_cudnn": f["speedup"], "trials": f["trials"],
                        "tune_wall_s": tune[c]["wall_s"] if c in tune else None,
                        "trials_per_s": f["trials"] / tune[c]["wall_s"] if c in tune and tune[c]["wall_s"] else None}
    for who in ("old", "new"):
        sp = [r[who]["speedup_vs_cudnn"] for r in out["cases"] if who in r]
        tps = [r[who]["trials"] for r in out["cases"] if who in r]
        wall = [r[who]["tune_wall_s"] for r in out["cases"] if who in r and r[who]["tune_wall_s"]]
        out[who] = {"geomean_speedup_vs_cudnn": geomean(sp), "trials": sum(tps), "tune_wall_s": sum(wall),
                    "trials_per_s": sum(tps) / sum(wall) if wall else None}
    if out.get("old", {}).get("geomean_speedup_vs_cudnn") and out.get("new", {}).get("geomean_speedup_vs_cudnn"):
        out["new_over_old_geomean"] = out["new"]["geomean_speedup_vs_cudnn"] / out["old"]["geomean_speedup_vs_cudnn"]
        out["new_over_old_trials_per_s"] = out["new"]["trials_per_s"] / out["old"]["trials_per_s"]
    return out


def best_tflops(path):
    best = None
    for r in lines(path):
        if r.get("status") == "ok" and r.get("median_ms"):
            t = r.get("tflops") or (r.get("gflops", 0) / 1000.0)
            if t and (best is None or t > best["tflops"]):
                best = {"tflops": t, "ms": r["median_ms"], "sched": r["sched"]}
    return best


def vendor_from_log(path):
    """The best vendor kernel as `cutune baseline --gemm` prints it (\"best: NAME: X ms, Y TFLOP/s\"), when only its
    log came back."""
    if not os.path.exists(path):
        return None
    for l in open(path):
        m = re.match(r"best: (.*): ([0-9.]+) ms, ([0-9.]+) TFLOP/s", l.strip())
        if m:
            return {"config": m.group(1), "ms": float(m.group(2)), "tflops": float(m.group(3)), "from": "log"}
    return None


def gemm(d):
    runs = lines(os.path.join(d, "gemm.jsonl"))
    out = {"commands": sorted({r["command"] for r in runs}), "rows": [], "rc_nonzero": [r for r in runs if r["rc"]]}
    for dt in ("fp16", "fp32"):
        vp = os.path.join(d, "vendor_%s.json" % dt)
        vendor = json.load(open(vp)) if os.path.exists(vp) else vendor_from_log(os.path.join(d, "vendor_%s.log" % dt))
        row = {"gemm": "4096x4096x4096 nn %s" % dt, "vendor": vendor}
        for who in ("old", "new"):
            recs = lines(os.path.join(d, "gemm_%s_%s.json" % (dt, who)))
            b = best_tflops(os.path.join(d, "gemm_%s_%s.json" % (dt, who)))
            row[who] = {"trials": len(recs), "best": b,
                        "ratio_vs_vendor": b["tflops"] / vendor["tflops"] if b and vendor and vendor.get("tflops") else None}
        if row["old"]["ratio_vs_vendor"] and row["new"]["ratio_vs_vendor"]:
            row["new_over_old"] = row["new"]["ratio_vs_vendor"] / row["old"]["ratio_vs_vendor"]
        out["rows"].append(row)
    return out


def mcgs(d):
    runs = lines(os.path.join(d, "mcgs.jsonl"))
    out = {"commands": sorted({r["command"] for r in runs}), "runs": [], "rc_nonzero": [r for r in runs if r["rc"]]}
    for p in sorted(glob.glob(os.path.join(d, "mcgs_*_*.json"))):
        who, seed = re.match(r".*mcgs_(old|new)_(\d+)\.json$", p).groups()
        s = json.load(open(p))
        ks = s.get("kernels", s if isinstance(s, list) else [])
        sp = {k["name"]: k.get("speedup") for k in ks}
        out["runs"].append({"bin": who, "seed": int(seed), "speedups": sp, "geomean": geomean(list(sp.values())),
                            "geomean_without_reduce_sum": geomean([v for n, v in sp.items() if n != "reduce_sum"])})
    for who in ("old", "new"):
        g = [r["geomean"] for r in out["runs"] if r["bin"] == who]
        out[who] = {"geomeans": g, "spread": [min(g), max(g)] if g else None}
    return out


def main():
    result, parts = sys.argv[1], sys.argv[2:]
    doc = {"what": "the previous cutune (commit 1faef8d) against the one core of issue 14, side by side on one GPU "
                   "in one device call per part (bench/core_h200.sh)", "parts": {}}
    for d in parts:
        for name, fn in (("conv", conv), ("gemm", gemm), ("mcgs", mcgs)):
            if os.path.exists(os.path.join(d, name + ".jsonl")):
                doc["parts"][name] = fn(d)
                doc["parts"][name]["gpu"] = device(d)
        if os.path.exists(os.path.join(d, "export.jsonl")):
            doc["parts"]["export"] = {"gpu": device(d), "steps": lines(os.path.join(d, "export.jsonl"))}
    json.dump(doc, open(result, "w"), indent=1)
    print(json.dumps(doc, indent=1)[:6000])


if __name__ == "__main__":
    main()
