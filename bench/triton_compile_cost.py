#!/usr/bin/env python3
"""What a Triton build costs in compiles, measured on the CPU (no GPU): each suite spec (kernels/triton/*.json) at a
few of its configurations, compiled for a GPU target (sm_90 by default) exactly as a build's launches specialise it.

A build (one variant) is launched by the measuring worker (tools/triton_worker.py) twice over: at the spec's sizes
(checked and timed) and, when the spec has check_sizes, at those sizes (src/pipeline/kcheck.c, checked once more on
a work of their own). Both launches pass the same buffers (pointers, 16-byte aligned) and the sizes as Python ints,
which Triton specialises (an int divisible by 16 gets tt.divisibility=16, an int equal to 1 becomes a constant), so
the two launches compile twice when their ints specialise differently. This script compiles each configuration at
both size sets through the worker's compile-only path (Worker.compile_ahead: the JIT's own key, a target without a
device), in a fresh Triton cache, and reports seconds per compile, the distinct cache entries (compiles) a build
needs, and what a cache hit costs (the same launch once more).

usage: bench/triton_compile_cost.py [--target cuda:90:32] [--configs N] [--json OUT.json] [SPEC.json ...]
Exit 0; 2 when triton does not import."""
import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "bench"))


def pick_configs(spec, n):
    """n configurations of the spec: the baseline (each tunable's first value), the last of its space (each tunable's
    last value: the largest blocks, the most warps and stages, as a rule) and others spread between."""
    from triton_autotune import configs
    every = configs(spec)
    if len(every) <= n:
        return every
    return [every[i * (len(every) - 1) // (n - 1)] for i in range(n)] if n > 1 else every[:1]


def compile_request(spec, module, cfg, sizes):
    """The compile request of one launch at sizes, as the C runner makes a run request (triton_runner.c)."""
    from triton_autotune import scalar, split
    meta, opts = split(cfg)
    bufs = {b["name"]: b["dtype"] for b in spec["inputs"] + spec["outputs"]}
    scal = {s["name"]: s for s in spec.get("scalars", [])}
    args = [{"pointer": bufs[a]} if a in bufs else {"value": scalar(scal[a], sizes), "dtype": scal[a]["dtype"]}
            for a in spec["args"]]
    return dict({"op": "compile", "module": module, "entry": spec["entry"], "meta": meta, "args": args}, **opts)


def int_specialisation(req):
    """The int arguments as Triton specialises them: value, then 'D' (divisible by 16) or '1' (a constant)."""
    out = []
    for a in req["args"]:
        v = a.get("value")
        if isinstance(v, int):
            out.append("%d%s" % (v, "=1" if v == 1 else "/16" if v % 16 == 0 else ""))
    return " ".join(out)


def measure_spec(worker, path, n):
    with open(path) as f:
        spec = json.load(f)
    module = os.path.join(os.path.dirname(path), spec["source_path"])
    sets = [("sizes", spec["sizes"])] + ([("check_sizes", spec["check_sizes"])] if "check_sizes" in spec else [])
    rows = []
    for cfg in pick_configs(spec, n):
        hashes, row = set(), {"config": cfg, "compiles": []}
        for tag, sizes in sets:
            req = compile_request(spec, module, cfg, sizes)
            res = worker.compile_ahead(req)
            again = worker.compile_ahead(req)  # the same launch once more: a cache hit
            if res["status"] != "ok":
                raise SystemExit("%s %s at %s: %s" % (spec["name"], cfg, tag, res["error"]))
            hashes.add(res["hash"])
            row["compiles"].append({"at": tag, "ints": int_specialisation(req), "s": res["seconds"],
                                    "hit_s": again["seconds"], "hash": res["hash"]})
        row["distinct"] = len(hashes)
        rows.append(row)
    return {"name": spec["name"], "rows": rows}


def warm_up(worker, path, cache):
    """Triton's first compile in a process also loads its backend: done once, not counted, and the cache emptied."""
    with open(path) as f:
        spec = json.load(f)
    t0 = time.perf_counter()
    worker.compile_ahead(compile_request(spec, os.path.join(os.path.dirname(path), spec["source_path"]),
                                         pick_configs(spec, 1)[0], spec["sizes"]))
    print("process warm-up (the first compile, Triton's backend loaded): %.2f s\n" % (time.perf_counter() - t0))
    shutil.rmtree(cache)
    os.makedirs(cache)


def report(results, target):
    print("| kernel | config | at | int args (/16: divisible by 16) | compile s | cache hit s | distinct compiles |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    all_s = []
    for r in results:
        for row in r["rows"]:
            cfg = " ".join("%s=%s" % kv for kv in row["config"].items())
            for i, c in enumerate(row["compiles"]):
                all_s.append(c["s"])
                print("| %s | %s | %s | %s | %.2f | %.3f | %s |" % (r["name"], cfg, c["at"], c["ints"], c["s"],
                                                                   c["hit_s"], row["distinct"] if i == 0 else ""))
    builds = [row["distinct"] for r in results for row in r["rows"]]
    all_s.sort()
    print("\n%d compiles for %s: median %.2f s, min %.2f s, max %.2f s; a build needs %s distinct compiles" %
          (len(all_s), target, all_s[len(all_s) // 2], all_s[0], all_s[-1], sorted(set(builds))))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("specs", nargs="*")
    p.add_argument("--target", default="cuda:90:32")
    p.add_argument("--configs", type=int, default=3)
    p.add_argument("--json")
    a = p.parse_args(argv)
    specs = a.specs or sorted(glob.glob(os.path.join(ROOT, "kernels", "triton", "*.json")))
    cache = tempfile.mkdtemp(prefix="cutune-compile-cost-")
    os.environ["TRITON_CACHE_DIR"] = cache
    os.environ["TRITON_INTERPRET"] = "0"
    try:
        import triton_worker
        w = triton_worker.Worker(sys.stdout, 0, False, a.target)
        why = w.setup()
        if why:
            print("cannot compile: %s" % why, file=sys.stderr)
            return 2
        warm_up(w, specs[0], cache)
        results = [measure_spec(w, s, a.configs) for s in specs]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    report(results, a.target)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"target": a.target, "triton": __import__("triton").__version__, "kernels": results}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
