#!/usr/bin/env python3
"""Joins the seeds of bench/triton_suite.sh (each a `cutune optimize` output folder with summary.json) and its
autotune comparisons (bench/triton_autotune.py's JSON) into one JSON, and prints two Markdown tables: the suite's
speedups (kernel x seed, with each seed's geomean) and cutune's best against @triton.autotune.

Beside each run folder (its parent: one call's layout, as triton_suite.tgz unpacks) it reads env.txt (GPU, driver,
clocks, versions, commands), runs.txt (name rc wall_s command) and autotune_*.json; an autotune JSON may also be
named among the arguments. A run folder without summary.json (a run killed) is listed with its rc and no kernels.

usage: bench/triton_merge.py RUN_DIR... [AUTOTUNE.json...] OUT.json   (at least one of the two)
  e.g. bench/triton_merge.py call1/s1 call1/s2 bench/results/triton_h200/triton_suite.json"""
import csv
import glob
import json
import math
import os
import re
import sys


def load_json(path):
    with open(path) as f:
        return json.load(f)


def lines(path):
    with open(path) as f:
        return f.read().splitlines()


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def read_env(path):
    """env.txt: "key: value" lines, the nvidia-smi CSV after "nvidia-smi:", the commands after "commands:"."""
    env, part, smi = {"file": path}, None, []
    for line in lines(path):
        if line in ("nvidia-smi:", "commands:"):
            part = line[:-1]
            env.setdefault("commands", [])
        elif part == "nvidia-smi":
            smi.append(line)
        elif part == "commands":
            env["commands"].append(line)
        elif ": " in line:
            k, v = line.split(": ", 1)
            env[k] = v
    rows = list(csv.reader(smi, skipinitialspace=True))
    if len(rows) >= 2 and rows[0] and rows[0][0] == "name":
        # columns by their query name (the header says e.g. "clocks.current.sm [MHz]"), the first GPU's row
        keys = [re.sub(r" \[.*\]$", "", h).replace("clocks.current.sm", "clocks.sm") for h in rows[0]]
        env["gpus"] = [dict(zip(keys, r)) for r in rows[1:] if r]
    else:
        env["nvidia_smi"] = "\n".join(smi)
    return env


def read_runs(path):
    out = {}
    for line in lines(path):
        if line.strip():
            name, rc, wall, cmd = line.split(" ", 3)
            out[name] = {"rc": int(rc), "wall_s": float(wall), "command": cmd}
    return out


def seed_of(run_dir, summary):
    m = re.search(r"--seed (\d+)", (summary or {}).get("command", ""))
    if m:
        return int(m.group(1))
    m = re.search(r"(\d+)$", os.path.basename(os.path.normpath(run_dir)))
    return int(m.group(1)) if m else None


KERNEL_KEYS = ("baseline_ms", "best_ms", "speedup", "builds", "builds_to_best", "best_variant", "best_moves")
AUTOTUNE_KEYS = ("kernel", "gpu", "driver", "triton", "torch", "configs", "autotune_seconds", "autotune_bench_time_s",
                 "autotune_failed_configs", "autotune_best_config", "autotune_ms", "cutune_best_variant",
                 "cutune_best_moves", "cutune_best_config", "cutune_ms", "cutune_seconds", "cutune_builds",
                 "cutune_builds_to_best", "baseline_ms", "speedup_autotune", "speedup_cutune", "autotune_correct",
                 "cutune_correct", "command", "note", "precompile_processes", "precompile_wall_s",
                 "precompile_compile_s_sum", "autotune_cache_entries_added", "autotune_seconds_parallel_compile")


def merge(run_dirs, autotune_files):
    res = {"seeds": {}, "kernels": {}, "autotune": [], "env": [], "runs": {}}
    calls = []
    for d in run_dirs:
        call = os.path.dirname(os.path.abspath(d))
        if call not in calls:
            calls.append(call)
        path = os.path.join(d, "summary.json")
        summ = load_json(path) if os.path.exists(path) else None
        seed = seed_of(d, summ)
        key = "s%s" % seed
        while key in res["seeds"]:  # the same seed from two calls: both kept
            key += "'"
        runs = read_runs(os.path.join(call, "runs.txt")) if os.path.exists(os.path.join(call, "runs.txt")) else {}
        run = runs.get(os.path.basename(os.path.normpath(d)), {})
        s = {"dir": d, "seed": seed, "rc": run.get("rc"), "wall_s": run.get("wall_s"),
             "bench_command": run.get("command"), "complete": summ is not None}
        if summ is not None:
            s.update(gpu=summ.get("gpu"), backend=summ.get("backend"), command=summ.get("command"),
                     geomean_speedup=geomean([k["speedup"] for k in summ["kernels"]]),
                     kernels=len(summ["kernels"]))
            for k in summ["kernels"]:
                res["kernels"].setdefault(k["name"], {})[key] = {x: k.get(x) for x in KERNEL_KEYS}
        res["seeds"][key] = s
    for f in autotune_files:  # a call that only compared with the autotuner has its env.txt too
        if os.path.dirname(os.path.abspath(f)) not in calls:
            calls.append(os.path.dirname(os.path.abspath(f)))
    for call in calls:
        if os.path.exists(os.path.join(call, "env.txt")):
            res["env"].append(read_env(os.path.join(call, "env.txt")))
        if os.path.exists(os.path.join(call, "runs.txt")):
            res["runs"][call] = read_runs(os.path.join(call, "runs.txt"))
        autotune_files = autotune_files + sorted(glob.glob(os.path.join(call, "autotune_*.json")))
    seen = set()
    for f in autotune_files:
        if os.path.abspath(f) in seen:
            continue
        seen.add(os.path.abspath(f))
        a = load_json(f)
        res["autotune"].append(dict({k: a.get(k) for k in AUTOTUNE_KEYS}, file=f))
    all_speedups = [v["speedup"] for k in res["kernels"].values() for v in k.values()]
    res["geomean_all_seeds"] = geomean(all_speedups)
    return res


def fmt(x, spec="%.2f"):
    return "" if x is None else spec % x


def tables(res):
    seeds = list(res["seeds"])
    out = ["| kernel | " + " | ".join("seed %s" % res["seeds"][s]["seed"] for s in seeds) + " |",
           "| --- |" + " --- |" * len(seeds)] if seeds else []
    for name, per in sorted(res["kernels"].items()):
        cells = []
        for s in seeds:
            k = per.get(s)
            cells.append("%.2fx (%s, best at %s/%s)" % (k["speedup"], k["best_variant"], k["builds_to_best"],
                                                         k["builds"]) if k else "")
        out.append("| %s | %s |" % (name, " | ".join(cells)))
    out += [] if not seeds else ["| **geomean** | " + " | ".join(
        fmt(res["seeds"][s].get("geomean_speedup"), "**%.2fx**") or "(rc %s, no summary)" % res["seeds"][s]["rc"]
        for s in seeds) + " |"]
    if res["autotune"]:
        out += ["", "| kernel | configs | autotune s | autotune best | autotune ms | cutune s | builds | cutune best |"
                " cutune ms | baseline ms | speedup autotune | speedup cutune | correct |",
                "| --- |" + " --- |" * 12]
        for a in res["autotune"]:
            # compiled ahead (triton_autotune.py --precompile N): the compiles' wall on N processes + the autotuner's
            # benchmarking on cache hits, both shown
            secs = fmt(a["autotune_seconds"], "%.1f")
            if a.get("precompile_processes"):
                secs = "%s (%s compiling ahead on %d processes + %s benchmarking)" % (
                    fmt(a["autotune_seconds_parallel_compile"], "%.1f"), fmt(a["precompile_wall_s"], "%.1f"),
                    a["precompile_processes"], fmt(a["autotune_seconds"], "%.1f"))
            best = ", ".join("%s=%s" % kv for kv in (a["autotune_best_config"] or {}).items())
            cbest = "%s (%s)" % (a["cutune_best_variant"], ", ".join(a["cutune_best_moves"] or []) or "baseline")
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                a["kernel"], a["configs"], secs, best, fmt(a["autotune_ms"], "%.4f"),
                fmt(a["cutune_seconds"], "%.0f"), a["cutune_builds"], cbest, fmt(a["cutune_ms"], "%.4f"),
                fmt(a["baseline_ms"], "%.4f"), fmt(a["speedup_autotune"], "%.2fx"), fmt(a["speedup_cutune"], "%.2fx"),
                "yes" if a["autotune_correct"] and a["cutune_correct"] else "**no**"))
    for e in res["env"]:
        if not e.get("gpus"):
            out.append("\n(no GPU row from nvidia-smi: %s)" % e.get("nvidia_smi", "").strip()[:200])
            continue
        g = e["gpus"][0]
        out.append("\n%s, driver %s, SM clock %s (max %s), power limit %s; triton %s, torch %s; commit %s" % (
            g.get("name"), g.get("driver_version"), g.get("clocks.sm"), g.get("clocks.max.sm"), g.get("power.limit"),
            e.get("triton"), e.get("torch"), e.get("commit")))
    return "\n".join(out)


def main(argv):
    if len(argv) < 2 or not argv[-1].endswith(".json"):
        print(__doc__, file=sys.stderr)
        return 2
    out, args = argv[-1], argv[:-1]
    dirs = [a for a in args if os.path.isdir(a)]
    files = [a for a in args if a.endswith(".json") and os.path.isfile(a)]
    missing = [a for a in args if a not in dirs and a not in files]
    if missing or not args:
        print("triton_merge: %s" % ("not a run folder or autotune JSON: " + ", ".join(missing) if missing
                                    else "nothing to merge"), file=sys.stderr)
        return 2
    res = merge(dirs, files)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(tables(res))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
