#!/usr/bin/env python3
"""The Triton suite (kernels/triton/*.json, issue 18) is correct: each spec's baseline, at its check_sizes and its
first tunable values, is run through tools/triton_worker.py under Triton's interpreter on two input sets (captured,
as the optimizer's baseline is), and its outputs are compared with numpy's float64 computation of the same op within
the spec's tolerance; then run again against those outputs as references (checked, timed, fresh inputs: ok).

    TRITON_INTERPRET=1 python3 tests/test_triton_suite.py
Exit 0 when every kernel passes, 1 when one fails, 77 (skipped) when numpy or triton does not import."""
import json
import math
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "..", "kernels", "triton")
sys.path.insert(0, HERE)
from test_triton_worker import Worker, check, failures, np  # noqa: E402  (exits 77 without numpy or triton)


def reference(name, ins, scal):
    """numpy's float64 result of each suite op."""
    f = {k: v.astype(np.float64) for k, v in ins.items()}
    if name == "triton_softmax_row":
        e = np.exp(f["x"] - f["x"].max(axis=1, keepdims=True))
        return {"y": e / e.sum(axis=1, keepdims=True)}
    if name == "triton_layernorm":
        x = f["x"]
        d = x - x.mean(axis=1, keepdims=True)
        return {"y": d / np.sqrt((d * d).mean(axis=1, keepdims=True) + scal["eps"]) * f["w"] + f["b"]}
    if name == "triton_matmul":
        return {"c": f["a"] @ f["b"]}
    if name == "triton_lora_expand":
        return {"y": f["base"] + f["x"] @ f["w"]}
    if name == "triton_gelu":
        x = f["x"]
        return {"y": 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))}
    raise KeyError(name)


def ev(expr, names):
    """A spec expression of the suite's kind (names, integers, + - * /, cdiv) at names' values."""
    if isinstance(expr, (int, float)):
        return expr
    return eval(expr, {"__builtins__": {}}, dict(names, cdiv=lambda a, b: -(-a // b)))  # noqa: S307


def inputs(t, sizes, s):
    shape = [ev(d, sizes) for d in t["shape"]]
    rng = np.random.default_rng(1000 * t.get("seed", 1) + s)  # not cutune's generator: any inputs must do
    if t.get("init", "randn") == "uniform":
        return rng.uniform(t.get("lo", -1.0), t.get("hi", 1.0), shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def one(path, tmp):
    spec = json.load(open(path))
    name = spec["name"]
    sizes = spec["check_sizes"]
    tun = {k: v[0] for k, v in spec["tunables"].items()}
    names = dict(sizes, **tun)
    sets = [{t["name"]: inputs(t, sizes, s) for t in spec["inputs"]} for s in range(2)]
    scal = {c["name"]: ev(c["value"], sizes) for c in spec["scalars"]}
    bufs = []
    for t in spec["inputs"]:
        paths = []
        for s in range(2):
            p = os.path.join(tmp, "%s.%s.set%d.bin" % (name, t["name"], s))
            sets[s][t["name"]].astype("<f4").tofile(p)
            paths.append(p)
        bufs.append({"name": t["name"], "dtype": t["dtype"], "shape": [ev(d, sizes) for d in t["shape"]],
                     "is_output": False, "inputs": paths})
    outs = [{"name": t["name"], "dtype": t["dtype"], "shape": [ev(d, sizes) for d in t["shape"]], "is_output": True}
            for t in spec["outputs"]]
    atol, rtol = spec["tolerance"]["atol"], spec["tolerance"]["rtol"]
    args = [a if a not in scal else {"value": scal[a], "dtype": next(c["dtype"] for c in spec["scalars"]
                                                                     if c["name"] == a)} for a in spec["args"]]
    grid = [ev(g, names) for g in spec["launch"]["grid"]]
    meta = {k: v for k, v in tun.items() if k not in ("num_warps", "num_stages")}
    run = {"op": "run", "module": os.path.join(SUITE, spec["source_path"]), "entry": spec["entry"], "grid": grid,
           "meta": meta, "num_warps": tun.get("num_warps", 4), "num_stages": tun.get("num_stages", 2), "args": args,
           "timing": {"warmup": 0, "min_repeats": 1, "max_repeats": 1, "min_total_ms": 0, "flush_l2": False}}
    w = Worker(tmp)
    try:
        # the baseline captured on both sets, as the optimizer captures its references
        r = w.ask({"op": "prepare", "buffers": bufs + outs, "atol": atol, "rtol": rtol, "check": "close"})
        if not (r and r.get("ok")):
            check(False, "%s: prepare -> %s" % (name, r))
            return
        r = w.ask(dict(run, capture=True, out_dir=os.path.join(tmp, name)))
        if not (r and r.get("status") == "ok"):
            check(False, "%s: capture -> %s; worker stderr: %s" % (name, r, w.stderr()[-800:]))
            return
        refs = {}
        for o in outs:
            files = r["outputs"][o["name"]]
            for s in range(2):
                got = np.fromfile(files[s], dtype="<f4").reshape(o["shape"]).astype(np.float64)
                want = reference(name, sets[s], scal)[o["name"]]
                err = np.abs(got - want) - (atol + rtol * np.abs(want))
                check(bool(np.all(err <= 0)), "%s: %s set %d against numpy: max |err| %.3g (atol %g, rtol %g)"
                      % (name, o["name"], s, float(np.max(np.abs(got - want))), atol, rtol))
            refs[o["name"]] = files
        # the captured outputs as references: the same baseline checked, timed and checked on fresh inputs
        for o in outs:
            o["refs"] = refs[o["name"]]
        r = w.ask({"op": "prepare", "buffers": bufs + outs, "atol": atol, "rtol": rtol, "check": "close"})
        r = r and r.get("ok") and w.ask(run)
        check(bool(r) and r.get("status") == "ok", "%s: checked against its own capture -> %s" % (name, r))
    finally:
        w.close()


def main():
    tmp = tempfile.mkdtemp(prefix="cutune-triton-suite-")
    specs = sorted(f for f in os.listdir(SUITE) if f.endswith(".json"))
    check(len(specs) >= 5, "%d Triton suite kernels: %s" % (len(specs), ", ".join(specs)))
    for f in specs:
        one(os.path.join(SUITE, f), tmp)
    if failures:
        print("%d check(s) failed; files in %s" % (len(failures), tmp))
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    print("the Triton suite matches numpy (interpreter)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
