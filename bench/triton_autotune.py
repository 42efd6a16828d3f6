#!/usr/bin/env python3
"""One Triton suite kernel: cutune's best variant against @triton.autotune over the same configurations (issue 18).

The autotuner gets exactly cutune's search space: the cartesian product of the spec's tunables, kept where every
restriction holds and the launch resolves (src/ops/kernel/kspace.c, ks_check), evaluated at the spec's sizes with
cutune's expression grammar (src/ops/kernel/expr.c, ported below). It runs first, in a fresh Triton cache, so that
its compiles count as cutune's do in a fresh run; its first call (compile and bench of every config, then the
launch) is timed by the wall clock. Then three kernels are timed with cutune's own timing of a Triton kernel
(tools/triton_worker.py, CudaDevice.time: L2 flushed, CUDA events around a one-launch graph, median): the baseline
(the spec's first tunable values), the autotuner's choice and cutune's best variant (OUT_DIR/kernels/_NAME/best);
the last two are checked against the baseline's outputs with the spec's tolerance.

usage: bench/triton_autotune.py SPEC.json CUTUNE_OUT_DIR OUT.json [--reps N] [--precompile N]
  SPEC.json       a suite spec (kernels/triton/matmul.json, softmax_row.json)
  CUTUNE_OUT_DIR  the --outdir of `cutune optimize` over that spec (kernels/_NAME/{best,events.jsonl,spec.json},
                  summary.json)
  --reps N        rounds of the three timings, interleaved (default 3); each kernel's time is the median of its
                  rounds' medians
  --precompile N  compile every configuration first, in N processes, into the fresh cache (the JIT's warmup path:
                  the launch's own key), then run the autotuner on cache hits; the JSON gives the compiles' wall
                  and summed seconds beside the autotuner's, for spaces whose serial compile outlasts a run's limit
                  (the matmul's 576 configurations did not finish in 350 s on an H100)
Exit 0; 2 when it cannot run (no GPU, torch or triton, a missing folder); 3 when a kernel's outputs differ from the
baseline's (OUT.json is written all the same)."""
import argparse
import base64
import importlib.util
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER_BEGIN = "# cutune: tunables (edit these values, the launch follows)"  # include/cutune/kstate.h
HEADER_END = "# cutune: end of tunables"
OPTIONS = ("num_warps", "num_stages")  # Triton's launch options; every other tunable is a constexpr meta-parameter
POLICY = {"warmup": 2, "min_repeats": 20, "max_repeats": 200, "min_total_ms": 20.0, "flush_l2": True}


class Setup(Exception):
    """Why this script cannot run (exit 2)."""


def load_json(path):
    with open(path) as f:
        return json.load(f)


# ---- spec expressions: src/ops/kernel/expr.c in Python (64-bit C integers, && and || short-circuit) ----

class ExprError(ValueError):
    pass


_TOKEN = re.compile(r"[ \t]*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\|\||&&|==|!=|<=|>=|[-+*/%<>!(),]))")
_I64 = (-(1 << 63), (1 << 63) - 1)


def _tokens(text):
    out, at = [], 0
    while text[at:].strip(" \t"):
        m = _TOKEN.match(text, at)
        if not m:
            raise ExprError("expression %r: unexpected text at byte %d" % (text, at + 1))
        out.append(("int", int(m.group(1))) if m.group(1) else ("name", m.group(2)) if m.group(2)
                   else ("op", m.group(3)))
        at = m.end()
    return out


def _cdiv(a, b):  # C's division: truncates toward zero
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _arith(op, a, b):
    if op in "/%" and b == 0:
        raise ExprError("division by zero")
    r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: _cdiv(a, b),
         "%": lambda: a - b * _cdiv(a, b), "min": lambda: min(a, b), "max": lambda: max(a, b)}
    if op == "cdiv":
        if b <= 0:
            raise ExprError("cdiv by a divisor <= 0")
        r = _cdiv(a + b - 1, b)
    else:
        r = r[op]()
    if not _I64[0] <= r <= _I64[1]:
        raise ExprError("overflow")
    return r


class _Parser:
    """Parses into a tree of tuples, checking every name (as the C parser does, in a dead operand too); evaluation
    is lazy, so the operand && or || does not need cannot fail ("N > 0 && M / N > 2")."""

    LEVELS = (("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("+", "-"), ("*", "/", "%"))

    def __init__(self, text, names):
        self.text, self.names, self.t, self.i = text, names, _tokens(text), 0

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else (None, None)

    def take(self, op):
        if self.peek() != ("op", op):
            raise ExprError("expression %r: expected '%s'" % (self.text, op))
        self.i += 1

    def binary(self, level):
        if level == len(self.LEVELS):
            return self.unary()
        node = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in self.LEVELS[level]:
            op = self.peek()[1]
            self.i += 1
            node = (op, node, self.binary(level + 1))
        return node

    def unary(self):
        kind, v = self.peek()
        if (kind, v) in (("op", "-"), ("op", "!")):
            self.i += 1
            return ("neg" if v == "-" else "not", self.unary())
        self.i += 1
        if kind == "int":
            if v > _I64[1]:
                raise ExprError("expression %r: integer too large" % self.text)
            return ("int", v)
        if kind == "name" and self.peek() == ("op", "("):
            if v not in ("min", "max", "cdiv"):
                raise ExprError("expression %r: unknown function %s (min, max, cdiv)" % (self.text, v))
            self.take("(")
            a = self.binary(0)
            self.take(",")
            b = self.binary(0)
            self.take(")")
            return (v, a, b)
        if kind == "name":
            if v not in self.names:
                raise ExprError("expression %r: unknown name %s (not a size or tunable)" % (self.text, v))
            return ("name", v)
        if (kind, v) == ("op", "("):
            node = self.binary(0)
            self.take(")")
            return node
        raise ExprError("expression %r: expected a number, a name or '('" % self.text)


def _value(node, names):
    op = node[0]
    if op == "int":
        return node[1]
    if op == "name":
        return names[node[1]]
    if op == "neg":
        return _arith("-", 0, _value(node[1], names))
    if op == "not":
        return int(not _value(node[1], names))
    a = _value(node[1], names)
    if op == "&&":
        return int(a != 0 and _value(node[2], names) != 0)
    if op == "||":
        return int(a != 0 or _value(node[2], names) != 0)
    b = _value(node[2], names)
    cmp = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}
    return int(cmp[op]) if op in cmp else _arith(op, a, b)


def evaluate(text, names):
    """A spec expression (a string, or a JSON integer) at names (name -> int); ExprError when it cannot be."""
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise ExprError("expression %r: not a string or an integer" % (text,))
    if isinstance(text, int):
        return text
    p = _Parser(text, names)
    node = p.binary(0)
    if p.i != len(p.t):
        raise ExprError("expression %r: unexpected text" % text)
    return _value(node, names)


# ---- the configuration space: src/ops/kernel/kspace.c (cut_kspec_space_new's check and nth) ----

def valid(spec, sizes, cfg):
    """ks_check: every restriction true (one that cannot be evaluated rejects), every grid dimension 1 to 2^31-1,
    a Triton block (32 * num_warps, else 128 threads) at most 1024 threads."""
    names = dict(sizes, **cfg)
    try:
        if not all(evaluate(r, names) for r in spec.get("restrictions", [])):
            return False
        if not all(1 <= evaluate(g, names) <= 2 ** 31 - 1 for g in spec["launch"]["grid"]):
            return False
    except ExprError:
        return False
    return 1 <= 32 * cfg.get("num_warps", 4) <= 1024


def configs(spec, sizes=None):
    """Every valid configuration (tunable name -> value), in cutune's order (ks_nth: mixed radix, tunable 0 varying
    fastest, so the baseline, each tunable's first value, comes first)."""
    sizes = spec["sizes"] if sizes is None else sizes
    tun = list(spec["tunables"].items())
    total = 1
    for _, vals in tun:
        total *= len(vals)
    out = []
    for i in range(total):
        cfg = {}
        for name, vals in tun:
            cfg[name] = vals[i % len(vals)]
            i //= len(vals)
        if valid(spec, sizes, cfg):
            out.append(cfg)
    return out


def split(cfg):
    """(meta-parameters, launch options) of a configuration."""
    return ({k: v for k, v in cfg.items() if k not in OPTIONS}, {k: v for k, v in cfg.items() if k in OPTIONS})


def read_header(path):
    """The NAME = INTEGER lines of a variant's tunables header (src/measure/triton_runner.c, parse_meta)."""
    cfg, inside = {}, False
    with open(path) as f:
        lines = f.readlines()
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith(HEADER_BEGIN):
            inside = True
        elif line.startswith(HEADER_END):
            return cfg
        elif inside and line.strip() and not line.strip().startswith("#"):
            m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([-+]?\d+)\s*", line)
            if not m:
                raise Setup("%s: the tunables header's line is not NAME = INTEGER: %r" % (path, line))
            cfg[m.group(1)] = int(m.group(2), 10)
    if inside:
        raise Setup("%s: the tunables header has no end line" % path)
    return cfg


# ---- on the GPU ----

def load_module(path, tag):
    spec = importlib.util.spec_from_file_location("cutune_bench_%s" % tag, path)
    if spec is None:
        raise Setup("not a Python module: %s" % path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def entry_of(path, entry, tag):
    fn = getattr(load_module(path, tag), entry, None)
    if fn is None:
        raise Setup("%s has no @triton.jit function '%s'" % (path, entry))
    return fn


def scalar(s, sizes):
    """A spec scalar's value: an expression over the sizes, or a number ("1e-5", "nan" for a float dtype)."""
    v, is_float = s["value"], s["dtype"] in ("f32", "f64", "f16", "bf16")
    if isinstance(v, str):
        try:
            v = evaluate(v, sizes)
        except ExprError:
            if not is_float:
                raise
            v = float(v)
    return float(v) if is_float else int(v)


def tensors(torch, spec, sizes):
    """Buffers by name (inputs as the spec inits them; exact values do not matter for timing), scalars by name, and
    the names of the outputs the kernel accumulates into."""
    dt = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
          "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}
    dt.update({str(v).split(".")[-1]: v for v in list(dt.values())})  # the long names the parser takes too
    bufs, acc = {}, []
    for is_out, t in [(0, t) for t in spec["inputs"]] + [(1, t) for t in spec["outputs"]]:
        shape = [evaluate(d, sizes) for d in t["shape"]]
        d, init = dt[t["dtype"]], t.get("init", "randn")
        g = torch.Generator(device="cuda").manual_seed(int(t.get("seed", 1)))
        if is_out:
            x = torch.zeros(shape, dtype=d, device="cuda")
            acc += [t["name"]] if t.get("accumulate") else []
        elif "data" in t:  # the optimizer's spec.json carries a file's inputs, zlib'd and base64'd
            raw = zlib.decompress(base64.b64decode(t["data"]))
            x = torch.frombuffer(bytearray(raw), dtype=d).reshape(shape).cuda()
        elif init in ("zeros", "ones", "full"):
            x = torch.full(shape, {"zeros": 0, "ones": 1}.get(init, t.get("value", 0)), dtype=d, device="cuda")
        elif init == "arange":
            x = torch.arange(math.prod(shape), device="cuda").reshape(shape).to(d)
        elif not d.is_floating_point:
            x = torch.randint(0, 8, shape, generator=g, device="cuda", dtype=d)
        elif init == "uniform":
            lo, hi = t.get("lo", -1.0), t.get("hi", 1.0)
            x = (torch.rand(shape, generator=g, device="cuda") * (hi - lo) + lo).to(d)
        else:
            x = torch.randn(shape, generator=g, device="cuda").to(d)
        bufs[t["name"]] = x
    return bufs, {s["name"]: scalar(s, sizes) for s in spec.get("scalars", [])}, acc


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def gpu_env(torch, triton):
    env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "triton": triton.__version__}
    try:
        q = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=driver_version,clocks.sm,clocks.max.sm,power.limit",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        env["nvidia_smi"] = q.stdout.strip()
        env["driver"] = q.stdout.split(",")[0].strip() or None
    except (OSError, subprocess.SubprocessError) as e:
        env["driver"], env["nvidia_smi"] = None, "nvidia-smi: %s" % e
    return env


def cutune_side(out_dir, name):
    """What the optimizer left for kernel name: its summary entry, the best variant's folder, its seconds."""
    kd = os.path.join(out_dir, "kernels", "_" + name)
    try:
        summ = load_json(os.path.join(out_dir, "summary.json"))
    except (OSError, ValueError) as e:
        raise Setup("%s/summary.json: %s" % (out_dir, e))
    k = next((k for k in summ.get("kernels", []) if k.get("name") == name), None)
    if k is None:
        raise Setup("%s/summary.json has no kernel '%s'" % (out_dir, name))
    if not os.path.isfile(os.path.join(kd, "best", "kernel.py")):
        raise Setup("%s/best/kernel.py is missing" % kd)
    with open(os.path.join(kd, "events.jsonl")) as f:
        ev = [json.loads(line) for line in f if line.strip()]
    if not ev:
        raise Setup("%s/events.jsonl is empty" % kd)
    first, last = ev[0]["t"], ev[-1]["t"]
    # the journal's times are whole seconds, from the baseline's event on: the baseline's compile and measure come
    # before it, but after spec.json is written (cmd_optimize.c, save_spec), so the span starts there
    spec_path = os.path.join(kd, "spec.json")
    start = min(os.path.getmtime(spec_path), first) if os.path.exists(spec_path) else first
    done = [e for e in ev if e.get("event") == "done"]
    return {"summary": k, "kdir": kd, "best_variant": os.path.basename(os.path.realpath(os.path.join(kd, "best"))),
            "seconds": round(last - start, 1), "events_span_s": last - first,
            "builds": done[-1]["builds"] if done else k.get("builds"),
            "seconds_note": "from spec.json written (before the baseline's build) to the last event of "
                            "events.jsonl (whole seconds); the GPU is held by the search all that time"}


def _precompile_one(job):
    """A child of --precompile: one configuration compiled into the shared Triton cache by the JIT's own warmup path
    (the launch's key: a buffer stands in as the compile-ahead worker's PointerArg, its dtype and a 16-divisible
    null address, as the real ones are aligned; the sizes are the same Python ints); (wall seconds, error or None)."""
    cache, src, entry, sig, meta, opts, grid = job
    os.environ["TRITON_CACHE_DIR"] = cache
    worker = load_module(os.path.join(ROOT, "tools", "triton_worker.py"), "precompile_worker")
    fn = entry_of(src, entry, "precompile")
    args = [worker.PointerArg(a[1]) if isinstance(a, tuple) else a for a in sig]
    t0 = time.perf_counter()
    try:
        fn.warmup(*args, grid=grid, **meta, **opts)
    except Exception as e:  # the autotuner meets the same failure in its own call, and skips the config
        return (time.perf_counter() - t0, "%s: %s" % (type(e).__name__, str(e)[:200]))
    return (time.perf_counter() - t0, None)


def precompile(a, src, entry, spec, scal, space, grid_of):
    """Every configuration compiled ahead into a.cache by a.precompile processes: (wall s, each compile's seconds,
    the errors of those that failed)."""
    import multiprocessing
    bufs = {t["name"]: t["dtype"] for t in spec["inputs"] + spec["outputs"]}
    sig = [("pointer", bufs[n]) if n in bufs else scal[n] for n in spec["args"]]
    jobs = [(a.cache, src, entry, sig, *split(c), grid_of(c)) for c in space]
    t0 = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(a.precompile) as pool:
        each = pool.map(_precompile_one, jobs, chunksize=1)
    return time.perf_counter() - t0, [t for t, _ in each], [e for _, e in each if e]


def cache_entries(cache):
    return sum(1 for d in os.listdir(cache) if os.path.isdir(os.path.join(cache, d)))


def run(a):
    spec = load_json(a.spec)
    name, entry = spec["name"], spec["entry"]
    kd = os.path.join(a.out_dir, "kernels", "_" + name)
    saved = os.path.join(kd, "spec.json")
    sizes = {k: int(v) for k, v in (load_json(saved) if os.path.exists(saved) else spec)["sizes"].items()}
    cut = cutune_side(a.out_dir, name)
    space = configs(spec, sizes)
    if not space:
        raise Setup("%s: no configuration satisfies the restrictions" % a.spec)

    # a fresh Triton cache, set before triton is imported (it reads TRITON_CACHE_DIR), so every compile counts
    cache = a.cache = tempfile.mkdtemp(prefix="cutune_autotune_triton_")  # removed by main
    os.environ["TRITON_CACHE_DIR"] = cache
    try:
        import numpy as np
        import torch
        import triton
    except ImportError as e:
        raise Setup("needs torch, numpy and triton: %s" % e)
    if not torch.cuda.is_available():
        raise Setup("no CUDA GPU for torch")
    wspec = importlib.util.spec_from_file_location("cutune_triton_worker", os.path.join(ROOT, "tools",
                                                                                        "triton_worker.py"))
    worker = importlib.util.module_from_spec(wspec)
    wspec.loader.exec_module(worker)

    bufs, scal, acc = tensors(torch, spec, sizes)
    args = [bufs[n] if n in bufs else scal[n] for n in spec["args"]]
    src = os.path.join(os.path.dirname(os.path.abspath(a.spec)), spec["source_path"])
    fn = entry_of(src, entry, "baseline")
    params = list(fn.arg_names)
    key = [params[i] for i, n in enumerate(spec["args"]) if n in scal and isinstance(scal[n], int)]
    reset = [params[i] for i, n in enumerate(spec["args"]) if n in acc] or None

    def grid_of(cfg):
        return tuple(evaluate(g, dict(sizes, **cfg)) for g in spec["launch"]["grid"])

    def tuned_grid(meta):  # the autotuner passes the bound arguments with the config's meta-parameters
        return grid_of({k: int(getattr(meta[k], "value", meta[k])) for k in spec["tunables"] if k in meta})

    # the autotuner, timed from its first call (compile and bench of every config, then the launch) to the sync
    tcfgs = [triton.Config(split(c)[0], **split(c)[1]) for c in space]
    tuned = triton.autotune(configs=tcfgs, key=key, reset_to_zero=reset)(fn)
    try:  # the driver's own helpers (built once per Triton cache) are not the autotuner's work
        triton.runtime.driver.active.utils
    except Exception:
        pass
    pre_wall, pre_each, pre_errors, before = None, [], [], 0
    if a.precompile:
        pre_wall, pre_each, pre_errors = precompile(a, src, entry, spec, scal, space, grid_of)
        before = cache_entries(cache)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tuned[tuned_grid](*args)
    torch.cuda.synchronize()
    autotune_s = time.perf_counter() - t0
    misses = cache_entries(cache) - before  # the autotuner's own compiles (0 when every config was compiled ahead)
    best = getattr(tuned, "best_config", None)
    if best is None:
        raise Setup("this Triton's Autotuner has no best_config")
    best_cfg = dict(best.kwargs, num_warps=best.num_warps, num_stages=best.num_stages)
    best_cfg = {k: best_cfg[k] for k in spec["tunables"]}
    timings = getattr(tuned, "configs_timings", None) or {}
    per_cfg = [{"config": dict(c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages),
                "ms": [None if x != x or x == float("inf") else x for x in (t if isinstance(t, list) else [t])]}
               for c, t in timings.items()]

    # the three kernels, as cutune times them
    base_cfg = {k: v[0] for k, v in spec["tunables"].items()}
    best_path = os.path.join(cut["kdir"], "best", "kernel.py")
    kernels = {"baseline": (fn, base_cfg), "autotune": (fn, best_cfg),
               "cutune": (entry_of(best_path, entry, "cutune_best"), read_header(best_path))}
    header_base = os.path.join(cut["kdir"], "baseline", "kernel.py")
    if os.path.exists(header_base) and read_header(header_base) != base_cfg:
        print("triton_autotune: note: baseline/kernel.py's header %s is not the spec's first values %s"
              % (read_header(header_base), base_cfg), file=sys.stderr)
    outs = [bufs[t["name"]] for t in spec["outputs"]]

    def launcher(k):
        f, cfg = kernels[k]
        meta, opts = split(cfg)
        g = grid_of(cfg)
        return lambda: f[g](*args, **meta, **opts)

    def arm():  # as the worker: outputs poisoned (0xFF bytes), an accumulated one zeroed
        for t, o in zip(spec["outputs"], outs):
            (o.zero_() if t.get("accumulate") else o.view(torch.uint8).fill_(0xFF))

    results, ref = {}, None
    tol = spec.get("tolerance", {})
    for k in kernels:
        arm()
        launcher(k)()
        torch.cuda.synchronize()
        got = [o.clone() for o in outs]
        ref = got if ref is None else ref
        close = [torch.allclose(x, r, atol=tol.get("atol", 1e-5), rtol=tol.get("rtol", 1e-5)) for x, r in zip(got, ref)]
        results[k] = {"config": kernels[k][1], "ms_rounds": [], "matches_baseline": all(close),
                      "max_abs_diff": max(float((x.double() - r.double()).abs().max()) for x, r in zip(got, ref))}
    dev = worker.CudaDevice(np, torch, 0)
    for _ in range(a.reps):  # interleaved rounds: a drift of the clocks falls on the three alike
        for k in kernels:
            results[k]["ms_rounds"].append(median(dev.time(launcher(k), arm, POLICY)))
    for r in results.values():
        r["median_ms"] = median(r["ms_rounds"])
    base_ms = results["baseline"]["median_ms"]
    summ = cut["summary"]
    res = {"kernel": name, "spec": os.path.relpath(os.path.abspath(a.spec), ROOT), "sizes": sizes,
           "command": " ".join(shlex.quote(x) for x in ["bench/triton_autotune.py"] + a.argv),
           **gpu_env(torch, triton),
           "timing_policy": POLICY, "reps": a.reps, "triton_cache_dir": cache + " (fresh; removed after)",
           "configs": len(space), "autotune_key": key,
           "autotune_seconds": round(autotune_s, 2),
           "precompile_processes": a.precompile,
           "precompile_wall_s": None if pre_wall is None else round(pre_wall, 2),
           "precompile_compile_s_sum": round(sum(pre_each), 2) if pre_each else None,
           "precompile_compile_s_max": round(max(pre_each), 2) if pre_each else None,
           "precompile_errors": len(pre_errors), "precompile_first_errors": pre_errors[:3],
           "autotune_cache_entries_added": misses,
           "autotune_seconds_serial_compile": None if pre_wall is None else round(autotune_s + sum(pre_each), 2),
           "autotune_seconds_parallel_compile": None if pre_wall is None else round(autotune_s + pre_wall, 2),
           "autotune_bench_time_s": getattr(tuned, "bench_time", None),
           "autotune_failed_configs": sum(1 for c in per_cfg if not c["ms"] or c["ms"][0] is None),
           "autotune_best_config": best_cfg, "autotune_ms": results["autotune"]["median_ms"],
           "autotune_config_timings": per_cfg,
           "cutune_best_variant": cut["best_variant"], "cutune_summary_best_variant": summ.get("best_variant"),
           "cutune_best_moves": summ.get("best_moves"), "cutune_best_config": kernels["cutune"][1],
           "cutune_ms": results["cutune"]["median_ms"], "cutune_summary_best_ms": summ.get("best_ms"),
           "cutune_seconds": cut["seconds"], "cutune_events_span_s": cut["events_span_s"],
           "cutune_builds": cut["builds"], "cutune_builds_to_best": summ.get("builds_to_best"),
           "baseline_ms": base_ms,
           "speedup_autotune": base_ms / results["autotune"]["median_ms"],
           "speedup_cutune": base_ms / results["cutune"]["median_ms"],
           "autotune_correct": results["autotune"]["matches_baseline"],
           "cutune_correct": results["cutune"]["matches_baseline"],
           "kernels": results,
           "note": "autotune_seconds is the wall time of the autotuned kernel's first call with a fresh Triton cache "
                   "(every config compiled and benched by Triton's do_bench, then one launch), torch synchronized "
                   "before and after: the GPU is busy or held idle by this process for all of it, so it counts as "
                   "GPU-seconds (Triton's driver helpers are built before the clock starts, as cutune's worker "
                   "has them before its first event). With --precompile N, every configuration was first compiled "
                   "into that cache by N processes through the JIT's warmup path (precompile_wall_s; each compile's "
                   "own seconds summed in precompile_compile_s_sum), so autotune_seconds is the autotuner's "
                   "benchmarking with cache hits (autotune_cache_entries_added counts the compiles it still did); "
                   "autotune_seconds_parallel_compile adds the compiles' parallel wall, as cutune's compile pool "
                   "runs them; autotune_seconds_serial_compile adds their summed seconds, an upper bound of the "
                   "stock autotuner's serial compiles, not an estimate: each was timed under N-way contention and "
                   "includes its process's first-compile start (on an H100 host, softmax_row's 24: 103 s summed, "
                   "6.2 s for the stock autotuner's compiles and benchmarking together). cutune_seconds: " + cut["seconds_note"] + ". All *_ms are cutune's timing "
                   "(tools/triton_worker.py CudaDevice.time with timing_policy), median of the rounds' medians."}
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print("%s: %d configs; autotune %.1f s -> %s %.4f ms; cutune %.1f s, %s builds -> %s %.4f ms; baseline %.4f ms;"
          " correct: autotune %s, cutune %s" % (name, len(space), autotune_s, best_cfg, res["autotune_ms"],
                                               cut["seconds"], cut["builds"], cut["best_variant"], res["cutune_ms"],
                                               base_ms, res["autotune_correct"], res["cutune_correct"]))
    return 0 if res["autotune_correct"] and res["cutune_correct"] else 3


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("spec")
    p.add_argument("out_dir")
    p.add_argument("out")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--precompile", type=int, default=0, metavar="N",
                   help="compile every configuration ahead in N processes (0: none, the stock autotuner compiles "
                        "each in its first call); for spaces whose serial compile outlasts a run's time limit")
    a = p.parse_args(argv)
    a.argv, a.cache = argv, None
    try:
        if a.reps < 1:
            raise Setup("--reps must be at least 1")
        if a.precompile < 0:
            raise Setup("--precompile must be 0 or more")
        if not os.path.isfile(a.spec):
            raise Setup("no spec file %s" % a.spec)
        if not os.path.isdir(a.out_dir):
            raise Setup("no cutune output folder %s" % a.out_dir)
        if not os.path.isdir(os.path.dirname(os.path.abspath(a.out))):
            raise Setup("no folder for %s" % a.out)
        return run(a)
    except (Setup, ExprError, KeyError, OSError, ValueError) as e:
        print("triton_autotune: %s%s" % ("" if isinstance(e, Setup) else type(e).__name__ + ": ", e),
              file=sys.stderr)
        return 2
    finally:
        if a.cache:
            shutil.rmtree(a.cache, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
