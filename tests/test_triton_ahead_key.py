#!/usr/bin/env python3
"""The compile ahead is the launch's compile (docs/triton_worker.md, "Compiling ahead"), checked on the CPU.

A compile-only worker (tools/triton_worker.py, Worker.compile_ahead) compiles the suite matmul for sm_90 at its sizes
and its check_sizes into a fresh Triton cache. Then the GPU worker's own launch path runs on the same module: its
Work and Run (tools/triton_worker.py) over a stand-in device whose tensors are what torch gives the GPU worker (a
dtype named torch.float32, a 512-byte aligned address), launched as the worker launches (Run.launch_raw:
kernel[grid](*args, **meta)). Triton's JIT binds and specialises the arguments and calls its compile; the test lets
that compile run (Triton's own key and cache lookup) and stops before the launch. The launch's cache hash must be the
ahead compile's, and the cache must hold no new entry (a hit). A launch whose pointer is not 16-byte aligned must not
match (the check can fail). Exit 77 when triton or numpy does not import."""
import json
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import triton_worker  # noqa: E402 (needs the path above; imports neither triton nor numpy)

MODULE = os.path.join(ROOT, "kernels", "triton", "matmul.py")
META = {"BM": 32, "BN": 32, "BK": 16}
OPTS = {"num_warps": 4, "num_stages": 2}


class Stop(Exception):
    """Raised by the wrapped compile: the launch's kernel is known, nothing is launched."""

    def __init__(self, ck):
        super().__init__("stop")
        self.ck = ck


class TorchLike:
    """What the GPU worker passes for a buffer (CudaDevice.typed): its dtype's str is torch's, its address aligned."""

    class _Dt(triton_worker.HostTensor._Dt):
        def __str__(self):
            return "torch." + self.name

    def __init__(self, tname, ptr):
        self.dtype, self.ptr = TorchLike._Dt(tname), ptr

    def data_ptr(self):
        return self.ptr


class StandInGpu:
    """A CudaDevice without a GPU: allocations are addresses (512-byte aligned, as torch's; misalign adds an
    offset), typed() gives TorchLike tensors; nothing is copied."""

    interpreter = False

    def __init__(self, misalign=0):
        self.next, self.misalign = 1 << 20, misalign

    def alloc(self, nbytes):
        self.next += (nbytes + 1023) // 512 * 512
        return self.next + self.misalign

    def upload(self, buf, raw):
        pass

    def fill(self, buf, byte):
        pass

    def sync(self):
        pass

    def typed(self, buf, dtype, shape):
        return TorchLike(triton_worker.DTYPES[dtype][1], buf)


def prepare_req(tmp, m, n, k):
    import numpy as np
    bufs = []
    for name, shape, out in (("a", [m, k], False), ("b", [k, n], False), ("c", [m, n], True)):
        paths = []
        for s in range(2):
            p = os.path.join(tmp, "%s_%d_%d.bin" % (name, m, s))
            np.zeros(shape, np.float32).tofile(p)
            paths.append(p)
        bufs.append(dict({"name": name, "dtype": "f32", "shape": shape, "is_output": out},
                         **({"refs": paths} if out else {"inputs": paths})))
    return {"op": "prepare", "buffers": bufs, "atol": 1e-3, "rtol": 1e-4}


def compile_req(m, n, k):
    args = [{"pointer": "f32"}] * 3 + [{"value": v, "dtype": "i32"} for v in (m, n, k)]
    return dict({"op": "compile", "module": MODULE, "entry": "matmul", "meta": META, "args": args}, **OPTS)


def launch_hash(w, tmp, m, n, k, misalign=0):
    """The cache hash of the GPU worker's launch at m, n, k: its Work and Run, its launch, Triton's compile."""
    import numpy as np
    dev = StandInGpu(misalign)
    work = triton_worker.Work(np, dev, prepare_req(tmp, m, n, k))
    run_req = dict({"op": "run", "module": MODULE, "entry": "matmul", "grid": [1, 1, 1], "meta": META,
                    "args": ["a", "b", "c", {"value": m, "dtype": "i32"}, {"value": n, "dtype": "i32"},
                             {"value": k, "dtype": "i32"}]}, **OPTS)
    name, fn = w.load(run_req)
    r = triton_worker.Run(np, dev, work, fn, run_req)
    _ = fn.device_caches[0]  # the binder made: it sets fn.compile, Triton's compile, wrapped below
    real = fn.compile

    def compile_then_stop(*a, **kw):
        raise Stop(real(*a, **kw))

    fn.compile = compile_then_stop
    try:
        r.launch_raw()
    except Stop as s:
        return s.ck.hash
    finally:
        sys.modules.pop(name, None)
    raise AssertionError("the launch did not compile (no Stop)")


def entries(cache):
    return sorted(d for d in os.listdir(cache) if any(f.endswith(".json") and not f.startswith("__grp")
                                                      for f in os.listdir(os.path.join(cache, d))))


def main():
    try:
        import numpy  # noqa: F401
        import triton  # noqa: F401
    except Exception as e:
        print("skipped: triton and numpy do not import: %s" % e)
        return 77
    tmp = tempfile.mkdtemp(prefix="cutune-ahead-key-")
    cache = os.path.join(tmp, "cache")
    os.environ["TRITON_CACHE_DIR"] = cache
    os.environ["TRITON_INTERPRET"] = "0"
    try:
        w = triton_worker.Worker(sys.stdout, 0, False, "cuda:90:32")
        why = w.setup()
        assert why is None, why
        ahead = {}
        for sizes in ((2048, 2048, 2048), (37, 45, 53)):
            res = w.compile_ahead(compile_req(*sizes))
            assert res["status"] == "ok", res
            assert res["cache_entry"] and os.path.isfile(os.path.join(res["cache_entry"], "matmul.json")), res
            assert os.path.dirname(res["cache_entry"]) == cache, (res["cache_entry"], cache)
            ahead[sizes] = res["hash"]
            print("ahead %s: %s (%.2f s)" % (sizes, res["hash"][:16], res["seconds"]))
        assert ahead[(2048, 2048, 2048)] != ahead[(37, 45, 53)], "the two size sets should specialise apart"
        before = entries(cache)
        assert len(before) == 2, before
        for sizes, h in ahead.items():
            got = launch_hash(w, tmp, *sizes)
            print("launch %s: %s" % (sizes, got[:16]))
            assert got == h, "the GPU worker's launch key %s is not the ahead compile's %s" % (got, h)
        assert entries(cache) == before, "the launches compiled anew: %s" % (set(entries(cache)) - set(before))
        odd = launch_hash(w, tmp, 2048, 2048, 2048, misalign=4)
        assert odd != ahead[(2048, 2048, 2048)], "an unaligned pointer should specialise apart"
        print("ok: the ahead compiles are the launches' (cache hits); an unaligned pointer is not")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
