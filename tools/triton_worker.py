#!/usr/bin/env python3
"""cutune's Triton worker (issue 18): checks and times @triton.jit kernels for the core, one process per GPU.

The core starts it and speaks JSON lines: one request per line on stdin, one reply per line on stdout. Anything a
kernel or a module prints goes to stderr (fd 1 is pointed at fd 2 at start; replies go to a dup of the original
fd 1), so it cannot corrupt the replies. docs/triton_worker.md describes the requests; in short:

  {"op": "hello"}    -> {"ok": true, "device": "...", "interpreter": bool, "triton": "3.x"}
  {"op": "prepare", "buffers": [...], "atol", "rtol", "check", "scalars": {...}, "key", "hold"}
                     -> {"ok": true, "capture": bool} (+ "held": bool, "loaded_bytes": n with a key)
     with a key, the work is held under it (at most "hold" works, the least recently used dropped beyond): a prepare
     naming a key held already selects that work and reads nothing (the core never reuses a key for other data)
  {"op": "run", "module", "entry", "grid", "meta", "num_warps", "num_stages", "args", "timing", "capture",
   "out_dir", "keep_dir"} -> {"status", "error", "median_ms", "min_ms", "max_ms", "repeats", "max_abs_err", ...}
  {"op": "quit"}     -> {"ok": true}, then exits 0
With --compile-for BACKEND:ARCH:WARP_SIZE (cuda:90:32) it is a compile-only worker instead (no device, no torch):
  {"op": "compile", "module", "entry", "meta", "num_warps", "num_stages", "args": [{"pointer": dtype} or
   {"value", "dtype"}]} -> {"status", "error", "hash", "cache_entry", "seconds"}: the launch compiled into the cache
   with Triton's own JIT key, for the C runner's compile pool (src/measure/triton_ahead.c).

A run follows cutune's one check-and-time protocol (src/measure/verify.h), with the hooks this device has:
  A  outputs poisoned (bytes 0xFF; an accumulated output zeroed), one launch on input set 0, outputs compared with
     reference 0 (wrong_result), inputs of set 0 compared with their bytes (input_modified)
  T  timed launches on set 0, each armed (poisoned) outside the timed region; the last one's outputs compared
     with reference 0 (wrong_later), inputs of set 0 again (input_modified)
  C  outputs poisoned with 0x7F, one launch on set 1 (fresh inputs) against reference 1 (wrong_other_data), unless
     the same launch on set 0 with 0x7F is wrong too (wrong_later); inputs of set 1 (input_modified)
Whatever the outcome, a modified input is restored before the next run. Without references (prepare gave no
"refs") A and C capture the outputs instead: they are written to out_dir and become the references of later runs.
Not here (yet): B (a Triton kernel has no module variables on the GPU; Python module state is fresh per run
request, since each run loads its module under a new name), too_fast (no FLOPs and peaks) and timing_escape.

A fault that leaves the GPU unusable (an illegal address) is replied as "fault" with "fatal": true, and the worker
exits: the core starts a fresh one. A hang is the core's to catch: it kills the worker after its timeout. Under
the interpreter every buffer ends against a guard page, so an out-of-bounds access kills the worker (SIGSEGV, with
a Python traceback on stderr) as a GPU fault would.

Environment: TRITON_INTERPRET=1 (or --interpret) runs kernels under Triton's interpreter on the CPU, with numpy;
CUTUNE_TRITON_CACHE_DIR is Triton's cache folder (TRITON_CACHE_DIR), by default cutune's per-user cache
($XDG_CACHE_HOME/cutune/triton, else ~/.cache/cutune/triton). --device N picks the GPU (default 0).
Needs numpy and triton; torch on a GPU only.
"""
import collections
import ctypes
import faulthandler
import importlib.util
import json
import math
import mmap
import os
import sys
import time
import traceback

# cutune's status names (src/core/common.c, cut_status_name)
OK, COMPILE_ERROR, LAUNCH_ERROR, WRONG_RESULT, FAULT = "ok", "compile_error", "launch_error", "wrong_result", "fault"
INPUT_MODIFIED, WRONG_LATER, WRONG_OTHER_DATA = "input_modified", "wrong_later", "wrong_other_data"
POISON0, POISON1 = 0xFF, 0x7F  # CUT_WORK_POISON0, CUT_WORK_POISON1

PROTOCOL = 1


class Failed(Exception):
    """A candidate's failure: a status and its sentence (fatal: the device is gone)."""

    def __init__(self, status, error, fatal=False):
        super().__init__(error)
        self.status, self.error, self.fatal = status, error, fatal


class SetupError(Exception):
    """A request the worker cannot carry out (a malformed request, a missing file): {"ok": false}."""


def _cache_dir():
    d = os.environ.get("CUTUNE_TRITON_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cutune", "triton")


def _args(argv):
    """(device, interpret, compile target or None) from --device N, --interpret, --compile-for BACKEND:ARCH:WARPS."""
    dev, interp, target = 0, False, None
    i = 1
    while i < len(argv):
        if argv[i] == "--device" and i + 1 < len(argv):
            dev = int(argv[i + 1])
            i += 1
        elif argv[i] == "--compile-for" and i + 1 < len(argv):
            target = argv[i + 1]
            i += 1
        elif argv[i] == "--interpret":
            interp = True
        else:
            sys.stderr.write("cutune triton worker: unknown argument '%s' (--device N, --interpret, "
                             "--compile-for BACKEND:ARCH:WARP_SIZE)\n" % argv[i])
            sys.exit(2)
        i += 1
    return dev, interp, target


# ---- element types ----

# cutune's names (cut_elem_name) and the spelled-out ones: numpy storage type, Triton's name for the pointer type
DTYPES = {
    "f32": ("float32", "float32"), "f64": ("float64", "float64"), "f16": ("float16", "float16"),
    "bf16": ("uint16", "bfloat16"), "i32": ("int32", "int32"), "i64": ("int64", "int64"), "u8": ("uint8", "uint8"),
}
ALIASES = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int32": "i32",
           "int64": "i64", "uint8": "u8"}
INTS = ("i32", "i64", "u8")


def _dtype(name):
    d = ALIASES.get(name, name)
    if d not in DTYPES:
        raise SetupError("unknown dtype '%s' (f32, f64, f16, bf16, i32, i64, u8)" % name)
    return d


def _values(np, dtype, raw):
    """The elements of raw bytes (a uint8 array) of dtype as float64 (integers as int64)."""
    if dtype == "bf16":
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    a = raw.view(DTYPES[dtype][0])
    return a.astype(np.int64) if dtype in INTS else a.astype(np.float64)


def _g(x):
    return "%.9g" % x


def compare(np, name, dtype, got, ref, rule, atol, rtol):
    """cut_work_compare: (wrong elements, largest |got - ref| among finite pairs, sentence)."""
    g, r = _values(np, dtype, got), _values(np, dtype, ref)
    n = g.size
    if rule == "frobenius" and dtype not in INTS:
        fin = np.isfinite(g)
        d = np.where(fin, np.abs(g - r), np.inf)
        num, den = float(np.sum(d * d)), float(np.sum(r * r))
        rel = (math.sqrt(num / den) if den > 0 else math.sqrt(num)) if math.isfinite(num) else math.inf
        if rel <= rtol:
            return 0, rel, ""
        nonfin = np.flatnonzero(~np.isfinite(d))
        w = int(nonfin[0]) if nonfin.size else int(np.argmax(d))
        return 1, rel, "relative Frobenius error %.3g > tolerance %.3g (%s[%d] = %.6g, want %.6g)" % (
            rel, rtol, name, w, g[w], r[w])
    if rule == "exact" or dtype in INTS:
        es = got.size // max(n, 1)
        ok = np.all(got.reshape(n, es) == ref.reshape(n, es), axis=1)
        fin = np.zeros(n, bool) if dtype in INTS else (np.isfinite(g) & np.isfinite(r))
        maxe = float(np.max(np.abs(g - r)[fin])) if fin.any() else 0.0
    else:
        fin = np.isfinite(g) & np.isfinite(r)
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(g - r)
            ok = np.where(fin, d <= atol + rtol * np.abs(r),
                          ~np.isfinite(r) & np.where(np.isnan(r), np.isnan(g), g == r))
        maxe = float(np.max(d[fin])) if fin.any() else 0.0
    bad = np.flatnonzero(~ok)
    if not bad.size:
        return 0, maxe, ""
    i = int(bad[0])
    first = ("%s[%d] = %d, want %d" % (name, i, g[i], r[i])) if dtype in INTS else \
        ("%s[%d] = %s, want %s" % (name, i, _g(g[i]), _g(r[i])))
    return int(bad.size), maxe, "%d of %d outputs wrong: %s" % (bad.size, n, first)


# ---- devices: where the buffers live and kernels run ----

class HostTensor:
    """A numpy array as Triton's interpreter takes a tensor: data_ptr, dtype (its name after the last '.'), storage."""

    class _Dt:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return "cutune." + self.name

        __repr__ = __str__

    class _Storage:
        def __init__(self, arr):
            self.arr = arr

        def data_ptr(self):
            return self.arr.ctypes.data

        def cpu(self):
            return self

        def copy_(self, other):  # the interpreter copies its host copy back: here they are the same memory
            pass

    def __init__(self, arr, tname):
        self.arr, self.dtype = arr, HostTensor._Dt(tname)

    def data_ptr(self):
        return self.arr.ctypes.data

    def untyped_storage(self):
        return HostTensor._Storage(self.arr)

    def new_empty(self, *a, **k):
        return HostTensor(self.arr, self.dtype.name)

    def set_(self, storage, offset, size, stride):
        return self

    def storage_offset(self):
        return 0

    def size(self):
        return self.arr.shape

    def stride(self):
        return tuple(s // self.arr.itemsize for s in self.arr.strides)


class HostDevice:
    """Triton's interpreter on the CPU: every buffer ends against a guard page (an access past it is a SIGSEGV)."""

    interpreter = True

    def __init__(self, np):
        self.np = np
        self.page = mmap.PAGESIZE
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

    def name(self):
        return "cpu (Triton interpreter)"

    def alloc(self, nbytes):
        """(uint8 array of nbytes whose end touches a PROT_NONE page, owner) ."""
        p = self.page
        body = -(-max(nbytes, 1) // p) * p
        mm = mmap.mmap(-1, body + 2 * p)
        full = self.np.frombuffer(mm, self.np.uint8)
        base = full.ctypes.data
        for at in (base, base + p + body):
            if self.libc.mprotect(at, p, 0) != 0:
                raise SetupError("mprotect (a guard page): errno %d" % ctypes.get_errno())
        start = p + body - nbytes
        return full[start:start + nbytes]

    def fill(self, buf, byte):
        buf.fill(byte)

    def upload(self, buf, raw):
        buf[:] = raw

    def read(self, buf):
        return buf.copy()

    def typed(self, buf, dtype, shape):
        arr = buf.view(DTYPES[dtype][0]).reshape(shape)
        return HostTensor(arr, DTYPES[dtype][1])

    def sync(self):
        pass

    def healthy(self):
        return True

    def time(self, launch, arm, policy):
        """(times in ms) of timed launches, each armed outside the timed region."""
        times = []
        for _ in range(policy["warmup"]):
            arm()
            launch()
        total = 0.0
        while len(times) < policy["max_repeats"] and (len(times) < policy["min_repeats"] or
                                                      total < policy["min_total_ms"]):
            arm()
            t0 = time.perf_counter()
            launch()
            t = (time.perf_counter() - t0) * 1e3
            times.append(t)
            total += t
        return times


class CudaDevice:
    """A GPU through PyTorch: buffers are CUDA tensors, times are CUDA events around a one-launch CUDA graph (a
    direct launch when the launch cannot be captured), the L2 flushed before each."""

    interpreter = False

    def __init__(self, np, torch, dev):
        self.np, self.torch = np, torch
        torch.cuda.set_device(dev)
        self.dev = torch.device("cuda", dev)
        self.flush_buf = None
        self.tdt = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
                    "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}

    def name(self):
        p = self.torch.cuda.get_device_properties(self.dev)
        return "%s (sm_%d%d)" % (p.name, p.major, p.minor)

    def alloc(self, nbytes):
        return self.torch.empty(max(nbytes, 1), dtype=self.torch.uint8, device=self.dev)[:nbytes]

    def fill(self, buf, byte):
        buf.fill_(byte)

    def upload(self, buf, raw):
        buf.copy_(self.torch.from_numpy(raw))

    def read(self, buf):
        return buf.cpu().numpy()

    def typed(self, buf, dtype, shape):
        return buf.view(self.tdt[dtype]).view(tuple(shape))

    def sync(self):
        self.torch.cuda.synchronize(self.dev)

    def healthy(self):
        """False when the context is gone (a sticky error: an illegal address, a trap)."""
        try:
            self.torch.cuda.synchronize(self.dev)
            self.torch.zeros(1, device=self.dev).add_(1).item()
            return True
        except Exception:
            return False

    def time(self, launch, arm, policy):
        torch = self.torch
        if policy["flush_l2"] and self.flush_buf is None:
            l2 = getattr(torch.cuda.get_device_properties(self.dev), "L2_cache_size", 64 << 20)
            self.flush_buf = torch.empty(max(2 * l2, 64 << 20), dtype=torch.uint8, device=self.dev)
        for _ in range(policy["warmup"]):
            arm()
            launch()
        graph = None
        try:  # one-launch graph, as the CUDA worker: no host overhead of the launch inside the timed window
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                launch()
            graph = g
        except Exception:
            self.sync()
        times, total = [], 0.0
        while len(times) < policy["max_repeats"] and (len(times) < policy["min_repeats"] or
                                                      total < policy["min_total_ms"]):
            arm()
            if self.flush_buf is not None:
                self.flush_buf.zero_()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            graph.replay() if graph is not None else launch()
            b.record()
            b.synchronize()
            t = a.elapsed_time(b)
            times.append(t)
            total += t
        return times


# ---- the work ----

class Work:
    """A prepared work: buffers with both input sets (inputs: one device buffer per set; outputs: one), the
    references of both sets or none (capture), the check rule, the scalars."""

    def __init__(self, np, dev, req):
        self.np, self.dev = np, dev
        bufs = req.get("buffers")
        if not isinstance(bufs, list) or not bufs:
            raise SetupError("prepare: 'buffers' must be a non-empty list")
        self.atol, self.rtol = float(req.get("atol", 0)), float(req.get("rtol", 0))
        self.check = req.get("check", "close")
        if self.check not in ("close", "frobenius", "exact"):
            raise SetupError("prepare: unknown check '%s' (close, frobenius, exact)" % self.check)
        self.scalars = dict(req.get("scalars") or {})
        self.bufs, self.by_name = [], {}
        self.loaded = 0  # bytes read from the request's files
        for i, b in enumerate(bufs):
            self.bufs.append(self._buf(i, b))
            self.by_name[self.bufs[-1]["name"]] = i
        outs = [b for b in self.bufs if b["is_output"]]
        if not outs:
            raise SetupError("prepare: no output buffer")
        with_refs = [b["data"] is not None for b in outs]
        if any(with_refs) and not all(with_refs):
            raise SetupError("prepare: either every output has 'refs' or none (capture)")
        self.has_refs = all(with_refs)

    def _buf(self, i, b):
        np = self.np
        name = b.get("name")
        if not isinstance(name, str) or not name:
            raise SetupError("prepare: buffers[%d] has no name" % i)
        dtype = _dtype(b.get("dtype", ""))
        shape = [int(x) for x in b.get("shape", [])]
        elems = 1
        for x in shape:
            elems *= x
        if not shape or elems < 1:
            raise SetupError("prepare: buffer '%s': shape must have elements" % name)
        nbytes = elems * np.dtype(DTYPES[dtype][0]).itemsize
        out = bool(b.get("is_output"))
        paths = b.get("refs") if out else b.get("inputs")
        data = None
        if paths is not None:
            if not isinstance(paths, list) or len(paths) != 2:
                raise SetupError("prepare: buffer '%s': '%s' must name two files (set 0, set 1)" %
                                 (name, "refs" if out else "inputs"))
            data = []
            for s, p in enumerate(paths):
                try:
                    raw = np.fromfile(p, dtype=np.uint8)
                except OSError as e:
                    raise SetupError("prepare: buffer '%s' set %d: %s" % (name, s, e))
                if raw.size != nbytes:
                    raise SetupError("prepare: buffer '%s' set %d: '%s' has %d bytes, the shape needs %d" %
                                     (name, s, p, raw.size, nbytes))
                data.append(raw)
                self.loaded += nbytes
        elif not out:
            raise SetupError("prepare: input '%s' has no 'inputs'" % name)
        d = {"name": name, "dtype": dtype, "shape": shape, "elems": elems, "nbytes": nbytes, "is_output": out,
             "zero": bool(b.get("accumulate")) and out, "data": data, "dev": []}
        for s in range(1 if out else 2):
            buf = self.dev.alloc(nbytes)
            if not out:
                self.dev.upload(buf, data[s])
            d["dev"].append(buf)
        self.dev.sync()
        return d


class Run:
    """One run request on a work: the kernel, its arguments per set, and the protocol's hooks."""

    def __init__(self, np, dev, work, kernel, req):
        self.np, self.dev, self.w, self.kernel = np, dev, work, kernel
        self.grid = tuple(int(x) for x in req["grid"])
        if not 1 <= len(self.grid) <= 3 or min(self.grid) < 1:
            raise SetupError("run: 'grid' must be 1 to 3 positive integers")
        self.kw = launch_options(req)
        self.args = [self._args(req.get("args") or [], s) for s in range(2)]
        self.set, self.capture = 0, None

    def _args(self, names, s):
        out = []
        for n in names:
            if isinstance(n, dict):  # a scalar given in the request: {"value": v, "dtype": "i32"}
                out.append(_scalar(n))
            elif not isinstance(n, str):
                raise SetupError("run: an argument must be a name or {\"value\", \"dtype\"}, not %r" % (n,))
            elif n in self.w.by_name:
                b = self.w.bufs[self.w.by_name[n]]
                out.append(self.dev.typed(b["dev"][0 if b["is_output"] else s], b["dtype"], b["shape"]))
            elif n in self.w.scalars:
                out.append(self.w.scalars[n])
            else:
                raise SetupError("run: argument '%s' is neither a buffer nor a scalar of the work" % n)
        return out

    # hooks (verify.h's cut_vf_dev)
    def arm(self, s, poison):
        self.set = s
        for b in self.w.bufs:
            if b["is_output"]:
                self.dev.fill(b["dev"][0], 0 if b["zero"] else poison)

    def launch_raw(self):
        self.kernel[self.grid](*self.args[self.set], **self.kw)

    def launch(self):
        try:
            self.launch_raw()
            self.dev.sync()
        except Exception as e:
            raise self.launch_failure(e)

    def launch_failure(self, e):
        fatal = not self.dev.healthy()
        msg = _exc_line(e)
        if fatal:
            return Failed(FAULT, "the kernel faulted: %s" % msg, fatal=True)
        if self.dev.interpreter:
            return Failed(FAULT, "the kernel raised under Triton's interpreter: %s" % msg)
        return Failed(LAUNCH_ERROR, "the launch failed: %s" % msg)

    def read(self, b, s):
        return self.dev.read(b["dev"][0] if b["is_output"] else b["dev"][s])


def _scalar(a):
    """A scalar argument {"value": v, "dtype": d} as Triton types it: a float dtype as a Python float (fp32 in the
    kernel), an integer one as an int (i32 or i64 by value). v may be "nan", "inf", "-inf" for a float."""
    d = _dtype(a.get("dtype", ""))
    v = a.get("value")
    if isinstance(v, bool) or v is None:
        raise SetupError("run: scalar argument %r has no number as its value" % (a,))
    try:
        return int(v) if d in INTS else float(v)
    except (TypeError, ValueError):
        raise SetupError("run: scalar argument %r: '%s' is not a number" % (a, v))


def compile_failure(e):
    """Triton's exception from a compile as the run's Failed: out of resources is the launch's, the rest the code's."""
    if "OutOfResources" in type(e).__name__:
        return Failed(LAUNCH_ERROR, "the launch cannot fit: %s" % _exc_line(e))
    return Failed(COMPILE_ERROR, "Triton does not compile it: %s" % _exc_line(e))


def _exc_line(e):
    """An exception as one line: its type and message, the interpreter's wrapper unwrapped, at most 400 chars."""
    while getattr(e, "__cause__", None) is not None and type(e).__name__ == "InterpreterError":
        e = e.__cause__
    text = " ".join(("%s: %s" % (type(e).__name__, e)).split())
    return text[:400]


def compare_outputs(r, s, status, when, res, capture):
    """Outputs of the last launch against reference s (or captured as set s's). Failed on a mismatch."""
    w = r.w
    for i, b in enumerate(w.bufs):
        if not b["is_output"]:
            continue
        got = r.read(b, s)
        if capture is not None:
            capture.setdefault(i, [None, None])[s] = got
            continue
        bad, maxe, msg = compare(r.np, b["name"], b["dtype"], got, b["data"][s], w.check, w.atol, w.rtol)
        res["max_abs_err"] = max(res["max_abs_err"], maxe)
        if bad:
            raise Failed(status, when + msg)


def check_inputs(r, s, when, first=None):
    """Every input of set s against its bytes; a modified one is restored. Raises Failed(INPUT_MODIFIED) naming the
    first (first: a failure already found, which stands; raised after the restore)."""
    np = r.np
    found = first
    for b in r.w.bufs:
        if b["is_output"]:
            continue
        host, want = r.read(b, s), b["data"][s]
        if np.array_equal(host, want):
            continue
        if found is None:
            es = np.dtype(DTYPES[b["dtype"]][0]).itemsize
            diff = np.flatnonzero(np.any(host.reshape(-1, es) != want.reshape(-1, es), axis=1))
            j = int(diff[0])
            at = slice(j * es, (j + 1) * es)
            gv, wv = _values(np, b["dtype"], host[at]), _values(np, b["dtype"], want[at])
            found = Failed(INPUT_MODIFIED, "%sthe kernel wrote its input '%s' (set %d): %d of %d elements changed, "
                           "%s[%d] = %.6g, was %.6g" % (when, b["name"], s, diff.size, b["elems"], b["name"], j,
                                                          gv[0], wv[0]))
        r.dev.upload(b["dev"][s], want)
    r.dev.sync()
    if found is not None:
        raise found


def checked(r, s, poison, status, when, res, capture):
    r.arm(s, poison)
    r.launch()
    try:
        compare_outputs(r, s, status, when, res, capture)
    except Failed as f:
        check_inputs(r, s, when, first=f)  # restores what it finds; f stands
        raise
    check_inputs(r, s, when)


def diagnose_c(r, res, err1):
    """C failed: wrong on set 0 too with C's poison -> WRONG_LATER, else it stays WRONG_OTHER_DATA."""
    r0 = {"max_abs_err": 0.0}
    try:
        r.arm(0, POISON1)
        r.launch()
        compare_outputs(r, 0, WRONG_LATER, "", r0, None)
    except Failed as f:
        if f.fatal:
            raise
        raise Failed(WRONG_LATER, "after timing, wrong on either input set (set 0: %.90s; set 1: %.90s)" %
                     (f.error, err1))


def check_and_time(r, policy, res, capture):
    # A
    checked(r, 0, POISON0, WRONG_RESULT, "", res, capture)
    first_err = res["max_abs_err"]
    # T
    times = r.dev.time(r.launch_checked_raw, lambda: r.arm(0, POISON0), policy)
    times.sort()
    n = len(times)
    res.update(repeats=n, min_ms=times[0], max_ms=times[-1],
               median_ms=times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2]))
    r.dev.sync()
    if capture is None:
        compare_outputs(r, 0, WRONG_LATER, "after timing: ", res, None)
    check_inputs(r, 0, "after timing: ")
    # C
    try:
        checked(r, 1, POISON1, WRONG_OTHER_DATA, "after timing, fresh inputs: ", res, capture)
    except Failed as f:
        if f.status == WRONG_OTHER_DATA and capture is None:
            diagnose_c(r, res, f.error)
        raise
    res["max_abs_err"] = max(first_err, res["max_abs_err"])


# ---- compiling ahead: no device, no torch (docs/triton_worker.md, "Compiling ahead") ----

def parse_target(text):
    """'cuda:90:32' (backend, arch, warp size; what a GPU worker's hello reports) as Triton's GPUTarget."""
    from triton.backends.compiler import GPUTarget
    parts = str(text).split(":")
    if len(parts) != 3 or not parts[0] or not parts[2].isdigit():
        raise SetupError("a compile target is BACKEND:ARCH:WARP_SIZE (cuda:90:32), not '%s'" % text)
    arch = int(parts[1]) if parts[1].isdigit() else parts[1]
    return GPUTarget(parts[0], arch, int(parts[2]))


def target_text(t):
    return "%s:%s:%d" % (t.backend, t.arch, t.warp_size)


class CompileOnlyDriver:
    """Triton's driver in a compile-only worker: it reports the measuring GPU's target and has no device, so a JIT
    warmup computes the launch's cache key with Triton's own code and compiles into the cache, launching nothing."""

    def __init__(self, target):
        self.target = target

    def get_current_target(self):
        return self.target

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0


class PointerArg:
    """A buffer argument as the JIT specialises it: its dtype (the name after the last '.' is Triton's, as a torch
    dtype's) and an address divisible by 16 (a CUDA tensor of the GPU worker: torch's allocations are 512-byte
    aligned and each buffer is its own)."""

    def __init__(self, dtype):
        self.dtype = HostTensor._Dt(DTYPES[_dtype(dtype)][1])

    @staticmethod
    def data_ptr():
        return 0


def compile_args(req):
    """A compile request's arguments as the GPU worker passes them: a buffer {"pointer": dtype} as a PointerArg, a
    scalar {"value", "dtype"} as _scalar makes it."""
    out = []
    for a in req.get("args") or []:
        if isinstance(a, dict) and "pointer" in a:
            out.append(PointerArg(a["pointer"]))
        elif isinstance(a, dict):
            out.append(_scalar(a))
        else:
            raise SetupError("compile: an argument is {\"pointer\": dtype} or {\"value\", \"dtype\"}, not %r" % (a,))
    return out


def cache_entry(h):
    """The folder of Triton's cache that holds the compile of hash h (None when Triton does not say)."""
    try:
        from triton.runtime.cache import get_cache_manager
        return getattr(get_cache_manager(h), "cache_dir", None) if h else None
    except Exception:
        return None


def launch_options(req):
    """The run request's meta-parameters and launch options as the JIT's keyword arguments (Run does the same)."""
    kw = dict(req.get("meta") or {})
    for k in ("num_warps", "num_stages"):
        if req.get(k) is not None:
            kw[k] = int(req[k])
    return kw


# ---- the worker ----

class Worker:
    def __init__(self, out, dev_index, interp, target=None):
        self.out = out
        self.dev_index = dev_index
        self.interp = interp
        self.target = target  # compile-only: the GPUTarget compiled for (no device, no torch)
        self.np = self.triton = self.dev = None
        self.work = None  # the selected work
        self.works = collections.OrderedDict()  # key -> Work, least recently selected first
        self.seq = 0

    def reply(self, obj):
        def clean(v):
            if isinstance(v, float) and not math.isfinite(v):
                return None
            return v
        self.out.write(json.dumps({k: clean(v) for k, v in obj.items()}) + "\n")
        self.out.flush()

    def setup(self):
        """Imports numpy and triton and opens the device. None, or a sentence why the worker cannot serve."""
        try:
            import numpy
            self.np = numpy
        except ImportError as e:
            return "the Triton worker needs numpy: %s" % e
        try:
            import triton
            self.triton = triton
        except Exception as e:
            return "triton does not import: %s" % _exc_line(e)
        if self.target is not None:
            try:
                self.target = parse_target(self.target)
            except SetupError as e:
                return str(e)
            triton.runtime.driver.set_active(CompileOnlyDriver(self.target))
            return None
        if self.interp:
            self.dev = HostDevice(self.np)
            return None
        try:
            import torch
        except ImportError:
            return "the Triton worker needs PyTorch on a GPU (or TRITON_INTERPRET=1 for Triton's interpreter)"
        if not torch.cuda.is_available():
            return "no CUDA GPU for PyTorch (TRITON_INTERPRET=1 runs Triton's interpreter on the CPU)"
        try:
            self.dev = CudaDevice(self.np, torch, self.dev_index)
        except Exception as e:
            return "GPU %d: %s" % (self.dev_index, _exc_line(e))
        return None

    def hello(self, req):
        """The device, and on a GPU the target Triton compiles for (what a compile-only worker is started with)."""
        rep = {"ok": True, "protocol": PROTOCOL, "triton": self.triton.__version__,
               "cache_dir": os.environ.get("TRITON_CACHE_DIR")}
        if self.target is not None:
            return dict(rep, device="compile only (%s)" % target_text(self.target), interpreter=False,
                        target=target_text(self.target))
        rep.update(device=self.dev.name(), interpreter=self.dev.interpreter)
        if not self.dev.interpreter:
            rep["target"] = target_text(self.triton.runtime.driver.active.get_current_target())
        return rep

    def prepare(self, req):
        """Selects the work held under req["key"], else makes it from the request's files and holds it under that key
        (a request without a key: the one work, nothing else held). Between runs a held work is as a fresh one: every
        run poisons its outputs and restores any input it finds modified, whatever the outcome."""
        if self.target is not None:
            raise SetupError("a compile-only worker (--compile-for) takes no work: it compiles")
        key, hold = req.get("key"), req.get("hold", 2)
        if key is not None and not isinstance(key, str):
            raise SetupError("prepare: 'key' must be a string")
        if isinstance(hold, bool) or not isinstance(hold, int) or hold < 1:
            raise SetupError("prepare: 'hold' must be a positive integer, not %r" % (hold,))
        if key in self.works:
            self.works.move_to_end(key)
            self.work = self.works[key]
            return {"ok": True, "capture": not self.work.has_refs, "held": True, "loaded_bytes": 0}
        self.work = None
        if key is None:
            self.works.clear()
        while len(self.works) >= hold:  # room first: at most `hold` works in memory, the new one included
            self.works.popitem(last=False)
        work = Work(self.np, self.dev, req)
        self.work = work
        if key is None:
            return {"ok": True, "capture": not work.has_refs}
        self.works[key] = work
        return {"ok": True, "capture": not work.has_refs, "held": False, "loaded_bytes": work.loaded}

    def load(self, req):
        """The entry of the module at req["module"], loaded under a name of its own. Failed(COMPILE_ERROR)."""
        path, entry = req.get("module"), req.get("entry")
        if not isinstance(path, str) or not isinstance(entry, str):
            raise SetupError("run: 'module' and 'entry' are required")
        self.seq += 1
        name = "cutune_triton_%d_%d" % (os.getpid(), self.seq)
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None:
                raise ImportError("not a Python module: %s" % path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            spec.loader.exec_module(mod)
        except Exception as e:
            sys.modules.pop(name, None)
            raise Failed(COMPILE_ERROR, "the module does not load: %s" % _exc_line(e))
        fn = getattr(mod, entry, None)
        if fn is None or not hasattr(fn, "__getitem__"):
            raise Failed(COMPILE_ERROR, "the module has no @triton.jit function '%s'" % entry)
        return name, fn

    def compile(self, r, out_dir):
        """On a GPU: compiles the kernel (a compile_error here, not at the first launch) and writes its PTX and
        SASS into out_dir. The interpreter has nothing to compile."""
        if self.dev.interpreter:
            return None
        try:
            ck = r.kernel.warmup(*r.args[0], grid=r.grid, **r.kw)
        except Exception as e:
            raise compile_failure(e)
        if not out_dir:
            return None
        os.makedirs(out_dir, exist_ok=True)
        asm = getattr(ck, "asm", {}) or {}
        for key, fname in (("ptx", "kernel.ptx"), ("ttgir", "kernel.ttgir"), ("sass", "kernel.sass")):
            try:
                text = asm[key] if key in asm or key == "sass" else None
            except Exception:  # no disassembler: no SASS
                text = None
            if text:
                with open(os.path.join(out_dir, fname), "w" if isinstance(text, str) else "wb") as f:
                    f.write(text)
        return ck

    def compile_ahead(self, req):
        """A compile request (a compile-only worker): the module's entry compiled for the target at the launch's
        specialisation (the run request's meta, options and typed arguments), into TRITON_CACHE_DIR, where the
        measuring worker's JIT finds it. {"status": ok | compile_error | launch_error, "error", "hash" (the cache
        entry's folder), "seconds"}."""
        if self.target is None:
            raise SetupError("compile: only a compile-only worker (--compile-for) compiles ahead")
        t0 = time.perf_counter()
        res = {"status": OK, "error": "", "hash": None}
        name = None
        try:
            name, fn = self.load(req)
            ck = fn.warmup(*compile_args(req), grid=(1,), **launch_options(req))
            res["hash"] = getattr(ck, "hash", None)
            res["cache_entry"] = cache_entry(res["hash"])
        except Failed as f:
            res.update(status=f.status, error=f.error)
        except SetupError:
            raise
        except Exception as e:
            f = compile_failure(e)
            res.update(status=f.status, error=f.error)
        finally:
            if name:
                sys.modules.pop(name, None)
        res["seconds"] = time.perf_counter() - t0
        return res

    @staticmethod
    def write_meta(ck, out_dir):
        """What Triton says of the binary (triton_meta.json): the optimizer's result.json carries regs and spills as
        for CUDA variants. Written after the launches: Triton fills n_regs and n_spills when it loads the binary."""
        meta = {}
        for key, attr in (("regs", "n_regs"), ("spill_stores", "n_spills"), ("shared_bytes", "shared")):
            v = getattr(ck, attr, None)
            if v is None:
                v = getattr(getattr(ck, "metadata", None), attr, None)
            if isinstance(v, int):
                meta[key] = v
        with open(os.path.join(out_dir, "triton_meta.json"), "w") as f:
            json.dump(meta, f)

    def run(self, req):
        if self.work is None:
            raise SetupError("run before prepare")
        t = dict(req.get("timing") or {})
        policy = {"warmup": int(t.get("warmup", 1)), "min_repeats": max(1, int(t.get("min_repeats", 3))),
                  "max_repeats": max(1, int(t.get("max_repeats", 100))),
                  "min_total_ms": float(t.get("min_total_ms", 0)),
                  "flush_l2": bool(t.get("flush_l2", True))}
        policy["max_repeats"] = max(policy["max_repeats"], policy["min_repeats"])
        capture = {} if (req.get("capture") or not self.work.has_refs) else None
        out_dir = req.get("out_dir")
        if capture is not None and not out_dir:
            raise SetupError("run: capturing (no references) needs 'out_dir'")
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
        res = {"status": OK, "error": "", "median_ms": -1.0, "min_ms": -1.0, "max_ms": -1.0, "repeats": 0,
               "max_abs_err": 0.0}
        name = None
        r = None
        try:
            name, fn = self.load(req)
            r = Run(self.np, self.dev, self.work, fn, req)
            r.launch_checked_raw = r.launch_raw
            keep = req.get("keep_dir") or out_dir
            ck = self.compile(r, keep)
            check_and_time(r, policy, res, capture)
            if ck is not None:
                self.write_meta(ck, keep)
        except Failed as f:
            res.update(status=f.status, error=f.error, median_ms=-1.0, min_ms=-1.0, max_ms=-1.0, repeats=0)
            if f.fatal:
                res["fatal"] = True
            elif r is not None:
                self.sweep(r)
        except SetupError:
            raise
        except Exception as e:  # a launch inside timing, or the harness itself
            if r is not None:
                f = r.launch_failure(e)
            else:
                f = Failed(FAULT, "the worker failed: %s" % _exc_line(e))
            res.update(status=f.status, error=f.error, median_ms=-1.0, min_ms=-1.0, max_ms=-1.0, repeats=0)
            if f.fatal:
                res["fatal"] = True
            elif r is not None:
                self.sweep(r)
        finally:
            if name:
                sys.modules.pop(name, None)
        if res["status"] == OK and capture is not None:
            res["outputs"] = self.keep_capture(capture, out_dir)
        return res

    def sweep(self, r):
        """Every input of both sets back to its bytes after a failure that may have skipped a check."""
        for s in range(2):
            try:
                check_inputs(r, s, "")
            except Failed:
                pass
            except Exception:
                return

    def keep_capture(self, capture, out_dir):
        """Writes the captured outputs (out_dir/NAME.set0.bin, .set1.bin) and makes them the work's references."""
        files = {}
        for i, sets in capture.items():
            b = self.work.bufs[i]
            paths = []
            for s in range(2):
                p = os.path.join(out_dir, "%s.set%d.bin" % (b["name"], s))
                sets[s].tofile(p)
                paths.append(p)
            b["data"] = [sets[0].copy(), sets[1].copy()]
            files[b["name"]] = paths
        self.work.has_refs = True
        return files


def main():
    dev_index, interp, target = _args(sys.argv)
    if interp:
        os.environ["TRITON_INTERPRET"] = "1"
    if target is not None:  # compile-only: never the interpreter, which compiles nothing
        os.environ["TRITON_INTERPRET"] = "0"
    os.environ["TRITON_CACHE_DIR"] = _cache_dir()
    interp = os.environ.get("TRITON_INTERPRET", "").lower() in ("1", "true", "on", "yes")
    # replies go to the original stdout; fd 1 (a kernel's printf, a module's print) goes to stderr
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    faulthandler.enable(file=sys.stderr)
    w = Worker(out, dev_index, interp, target)
    why = w.setup()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            op = req.get("op") if isinstance(req, dict) else None
        except ValueError as e:
            w.reply({"ok": False, "error": "not a JSON request: %s" % e})
            continue
        if op == "quit":
            w.reply({"ok": True})
            return 0
        if why is not None:
            w.reply({"ok": False, "error": why})
            continue
        try:
            if op == "hello":
                w.reply(w.hello(req))
            elif op == "prepare":
                w.reply(w.prepare(req))
            elif op == "compile":
                w.reply(w.compile_ahead(req))
            elif op == "run":
                res = w.run(req)
                w.reply(res)
                if res.get("fatal"):
                    return 3  # the device is gone: the core starts a fresh worker
            else:
                w.reply({"ok": False, "error": "unknown op %r (hello, prepare, run, compile, quit)" % (op,)})
        except SetupError as e:
            w.reply({"ok": False, "error": str(e)})
        except Exception as e:
            traceback.print_exc()
            w.reply({"ok": False, "error": "the worker failed: %s" % _exc_line(e)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
