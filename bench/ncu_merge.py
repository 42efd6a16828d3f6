#!/usr/bin/env python3
"""Joins the calls of bench/ncu_priors.sh (each a folder with runs.txt and runs.tgz) into one JSON and a Markdown
table: per seed and kernel, the final speedup and the builds it took to reach the best with --ncu-every 0 and 5.
A run killed before its end (its summary.json missing) is read from its kernels' events.jsonl and
search_state.json: the kernels that finished count; one cut short is listed with the builds it made, "partial".

usage: bench/ncu_merge.py OUT.json CALLDIR...   (e.g. bench/results/ncu_priors_h100/call1_seed1_llm call2_seed2)"""
import json
import math
import os
import sys
import tarfile
import tempfile


def kernel_from_files(kd):
    """One kernel's outcome from its search folder (what summary.json would have said), partial when not done."""
    ev = [json.loads(line) for line in open(f"{kd}/events.jsonl")]
    state = json.load(open(f"{kd}/search_state.json"))
    done = [e for e in ev if e["event"] == "done"]
    best = state["nodes"][state["best"]] if isinstance(state["best"], int) else \
        next(n for n in state["nodes"] if n["id"] == state["best"])
    base = next(e for e in ev if e["event"] == "baseline")
    return {"name": os.path.basename(kd)[1:], "baseline_ms": base["ms"], "best_ms": best["ms"],
            "speedup": best["speedup"], "builds": state["builds"], "builds_to_best": state["builds_to_best"],
            "best_variant": best["id"], "partial": not done,
            "profiles": [{"variant": e["variant"], "builds": e["builds"], "dominant": e["dominant"],
                          "seconds": round(e["seconds"], 2)} for e in ev if e["event"] == "profile"]}


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def main():
    out, calls = sys.argv[1], sys.argv[2:]
    res = {"runs": {}, "calls": []}
    for call in calls:
        meta = json.load(open(f"{call}/ncu_priors.json"))
        res["calls"].append({"folder": os.path.relpath(call, os.path.dirname(out) or "."), "gpu": meta["gpu"],
                             "device": meta["device"], "ncu": meta["ncu"]})
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(f"{call}/runs.tgz") as t:
                t.extractall(tmp)
            for line in open(f"{call}/runs.txt"):
                name, rc, wall, cmd = line.rstrip("\n").split(" ", 3)
                d = f"{tmp}/{name}" if name != "llm" else f"{tmp}/llm/out"
                kernels = [kernel_from_files(f"{d}/kernels/{k}") for k in sorted(os.listdir(f"{d}/kernels"))]
                whole = [k for k in kernels if not k["partial"]]
                res["runs"][name] = {"call": os.path.basename(call), "rc": int(rc), "wall_s": float(wall),
                                     "command": cmd, "complete": int(rc) == 0,
                                     "geomean_speedup": geomean([k["speedup"] for k in whole]),
                                     "profile_seconds": round(sum(p["seconds"] for k in kernels
                                                                  for p in k["profiles"]), 1),
                                     "kernels": kernels}
                if name == "llm":
                    res["runs"][name]["llm"] = meta["runs"]["llm"]
    json.dump(res, open(out, "w"), indent=1)
    # the table: seeds x kernels, ncu 0 against ncu 5
    seeds = sorted({n.split("_")[0] for n in res["runs"] if n.startswith("s")})
    print("| seed | kernel | speedup, ncu 0 | speedup, ncu 5 | builds to best, ncu 0 | builds to best, ncu 5 |"
          " profiles (variant@builds: region) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for s in seeds:
        a, b = res["runs"].get(f"{s}_ncu0"), res["runs"].get(f"{s}_ncu5")
        if not a or not b:
            continue
        kb = {k["name"]: k for k in b["kernels"]}
        for k in a["kernels"]:
            o = kb.get(k["name"])
            if not o:
                print(f"| {s[1:]} | {k['name']} | {k['speedup']:.2f}x | (not reached) | {k['builds_to_best']} | | |")
                continue
            part = f" (partial: {o['builds']} builds)" if o["partial"] else ""
            prof = ", ".join(f"{p['variant']}@{p['builds']}: {p['dominant']}" for p in o["profiles"])
            print(f"| {s[1:]} | {k['name']} | {k['speedup']:.2f}x | {o['speedup']:.2f}x{part} | "
                  f"{k['builds_to_best']} | {o['builds_to_best']} | {prof} |")


if __name__ == "__main__":
    main()
