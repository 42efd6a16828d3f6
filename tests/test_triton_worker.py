#!/usr/bin/env python3
"""Tests tools/triton_worker.py under Triton's interpreter (TRITON_INTERPRET=1, on the CPU): a correct row softmax
passes and is timed; planted kernels get the status that names them (wrong_result, input_modified,
wrong_other_data, wrong_later, fault, compile_error); a worker that dies (an out-of-bounds read against a guard
page) or hangs (killed after a timeout) is replaced by a fresh one that works; a capture run writes the outputs and
checks later runs against them; what a kernel prints never reaches the replies.

    TRITON_INTERPRET=1 python3 tests/test_triton_worker.py     (the worker is started with TRITON_INTERPRET=1)
    python3 tests/test_triton_worker.py --gpu                  (on a GPU, with torch: the fixtures that keep Python
                                                                state are interpreter-only and left out)
Exit 0 when every check passes, 1 when one fails, 77 (skipped) when numpy or triton does not import."""
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "..", "tools", "triton_worker.py")
FIX = os.path.join(HERE, "fixtures", "triton")
ROWS, COLS, BLOCK = 5, 100, 128
HANG_TIMEOUT_S = 5.0
REPLY_TIMEOUT_S = 120.0

try:
    import numpy as np
    import triton  # noqa: F401  (only whether it imports: the worker imports it itself)
except Exception as e:  # noqa: BLE001
    print("SKIP: %s (pip install numpy triton)" % e)
    sys.exit(77)


class Worker:
    """The worker as a child process speaking JSON lines; stderr collected in a file."""

    def __init__(self, tmp, gpu=False):
        env = dict(os.environ, CUTUNE_TRITON_CACHE_DIR=os.path.join(tmp, "triton-cache"))
        if gpu:
            env.pop("TRITON_INTERPRET", None)
        else:
            env["TRITON_INTERPRET"] = "1"
        self.err = open(os.path.join(tmp, "worker-%d.stderr" % time.monotonic_ns()), "w+")
        self.p = subprocess.Popen([sys.executable, WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, env=env)
        self.buf = b""

    def ask(self, req, timeout=REPLY_TIMEOUT_S):
        """The reply to req, or None when the worker ended or timeout passed first."""
        try:
            self.p.stdin.write((json.dumps(req) + "\n").encode())
            self.p.stdin.flush()
        except BrokenPipeError:
            return None
        end = time.monotonic() + timeout
        fd = self.p.stdout.fileno()
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        return self.p.wait()

    def stderr(self):
        self.err.flush()
        self.err.seek(0)
        return self.err.read()

    def close(self):
        if self.p.poll() is None:
            self.ask({"op": "quit"}, timeout=10)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.err.close()


failures = []


def check(cond, what):
    print("%s  %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def files(tmp):
    """Two input sets of x and their references, as raw little-endian files."""
    paths = {"x": [], "y": []}
    for s in range(2):
        x = np.random.default_rng(100 + s).standard_normal((ROWS, COLS)).astype(np.float32)
        for name, a in (("x", x), ("y", softmax(x))):
            p = os.path.join(tmp, "%s.set%d.bin" % (name, s))
            a.astype("<f4").tofile(p)
            paths[name].append(p)
    return paths


def prepare(w, paths, refs=True, **extra):
    """A prepare of x (paths["x"]) and y (references paths["y"], or none); extra: "key", "hold"."""
    y = {"name": "y", "dtype": "float32", "shape": [ROWS, COLS], "is_output": True}
    if refs:
        y["refs"] = paths["y"]
    req = {"op": "prepare", "atol": 1e-5, "rtol": 1e-5, "scalars": {"n_cols": COLS},
           "buffers": [{"name": "x", "dtype": "float32", "shape": [ROWS, COLS], "is_output": False,
                        "inputs": paths["x"]}, y]}
    req.update(extra)
    return w.ask(req)


def held_works(w, paths):
    """Works held by key: a held key is a select that reads nothing, a held work is as clean as a fresh one after a
    candidate wrote its input, at most "hold" works are kept (the least recently selected dropped), a prepare
    without a key drops them all."""
    swapped = {n: p[::-1] for n, p in paths.items()}  # another work of the same shape: the sets exchanged
    every = 4 * ROWS * COLS * 4  # x and y, two sets each, fp32

    def held(p, key, want, hold=2):
        r = prepare(w, p, key=key, hold=hold)
        good = r is not None and r.get("ok") and r.get("held") is want and r.get("loaded_bytes") == (0 if want else
                                                                                                    every)
        check(good, "prepare key %s -> %s (held: %s)" % (key, json.dumps(r), want))

    held(paths, "a", False)
    held(swapped, "b", False)
    expect(w, "softmax_writes_input.py", "input_modified", "'x'")  # on b
    held(paths, "a", True)
    expect(w, "softmax_ok.py", "ok")
    held(swapped, "b", True)
    expect(w, "softmax_ok.py", "ok")  # b restored after the input writer
    held(paths, "c", False)  # evicts a, the least recently selected
    held(paths, "a", False)  # evicts b
    held(paths, "c", True)
    held(swapped, "b", False)
    check(prepare(w, paths) == {"ok": True, "capture": False}, "prepare without a key")
    held(paths, "c", False)  # dropped by the keyless prepare
    r = prepare(w, paths, key="d", hold=0)
    check(r is not None and r.get("ok") is False and "'hold'" in r.get("error", ""), "hold 0 -> %s" % json.dumps(r))


def run(w, fixture, timeout=REPLY_TIMEOUT_S, **extra):
    req = {"op": "run", "module": os.path.join(FIX, fixture), "entry": "softmax_kernel", "grid": [ROWS],
           "meta": {"BLOCK": BLOCK}, "num_warps": 4, "num_stages": 2, "args": ["x", "y", "n_cols"],
           "timing": {"warmup": 1, "min_repeats": 3, "max_repeats": 5, "min_total_ms": 0, "flush_l2": True}}
    req.update(extra)
    return w.ask(req, timeout=timeout)


def show(r):
    return "%s (%s)" % (r.get("status"), r.get("error") or "median %.3f ms over %d" % (r["median_ms"], r["repeats"])) \
        if r else "no reply"


def expect(w, fixture, status, needle=None):
    r = run(w, fixture)
    good = r is not None and r.get("status") == status and (needle is None or needle in (r.get("error") or ""))
    check(good, "%-24s -> %s" % (fixture, show(r)))
    return r


def dies(w, fixture, gpu):
    """A fault that ends the worker: under the interpreter a SIGSEGV (no reply); on a GPU a "fault" reply with
    "fatal", then the worker exits 3. True when it went so."""
    r = run(w, fixture)
    try:
        rc = w.p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        rc = None
    if gpu:
        good = r is not None and r.get("status") == "fault" and r.get("fatal") is True and rc == 3
        check(good, "%-24s -> %s, the worker exited %s" % (fixture, show(r), rc))
    else:
        good = r is None and rc == -11 and "Segmentation fault" in w.stderr()
        check(good, "%-24s -> the worker died (exit %s, SIGSEGV): fault" % (fixture, rc))


def main():
    gpu = "--gpu" in sys.argv[1:]
    tmp = tempfile.mkdtemp(prefix="cutune-triton-test-")
    paths = files(tmp)
    w = Worker(tmp, gpu)
    try:
        h = w.ask({"op": "hello"})
        check(h is not None and h.get("ok") and h.get("interpreter") is (not gpu), "hello -> %s" % json.dumps(h))
        check(prepare(w, paths) == {"ok": True, "capture": False}, "prepare with references")

        asm = os.path.join(tmp, "variant")
        r = run(w, "softmax_ok.py", out_dir=asm)
        check(r is not None and r.get("status") == "ok", "%-24s -> %s" % ("softmax_ok.py", show(r)))
        check(r is not None and r.get("repeats", 0) >= 3 and r.get("median_ms", 0) > 0 and
              0 <= r.get("min_ms", -1) <= r["median_ms"] <= r["max_ms"] and r.get("max_abs_err", 1) < 1e-5,
              "softmax_ok: timed (%s repeats, max_abs_err %s)" % (r and r.get("repeats"), r and r.get("max_abs_err")))
        if gpu:
            got = sorted(os.listdir(asm)) if os.path.isdir(asm) else []
            check("kernel.ptx" in got, "out_dir holds %s" % got)
        expect(w, "softmax_wrong.py", "wrong_result", "outputs wrong: y[")
        check("a module that prints to stdout" in w.stderr() and "writes to fd 1" in w.stderr(),
              "what a module prints goes to stderr, the replies still parse")
        expect(w, "softmax_writes_input.py", "input_modified", "the kernel wrote its input 'x' (set 0)")
        expect(w, "softmax_ok.py", "ok")  # the input was restored
        if not gpu:  # kernels that keep Python state: the interpreter runs their bodies as Python
            expect(w, "softmax_stale.py", "wrong_other_data", "after timing, fresh inputs: ")
            expect(w, "softmax_once.py", "wrong_later", "after timing: ")
            expect(w, "softmax_once.py", "wrong_later", "after timing: ")  # a fresh module: no state of the last run
            expect(w, "softmax_raises.py", "fault", "the kernel raised under Triton's interpreter")
        else:
            expect(w, "softmax_raises.py", "compile_error", "Triton does not compile it")
        expect(w, "syntax_error.py", "compile_error", "SyntaxError")
        expect(w, "softmax_ok.py", "ok")  # the worker lives on after Python errors

        # faults that end the worker: the parent sees it end, and a fresh worker works
        for fixture in (["softmax_fault.py"] if gpu else ["softmax_oob.py", "softmax_fault.py"]):
            dies(w, fixture, gpu)
            w.close()
            w = Worker(tmp, gpu)
            check(prepare(w, paths) is not None, "a fresh worker after the fault")
            expect(w, "softmax_ok.py", "ok")

        # a hang: the parent kills the worker after its timeout, and a fresh worker works
        if gpu:
            run(w, "softmax_ok.py")  # compiled and warm: the timeout below is the hang's, not a compile's
        t0 = time.monotonic()
        r = run(w, "softmax_hang.py", timeout=HANG_TIMEOUT_S * (6 if gpu else 1))
        rc = w.kill() if r is None else None
        check(r is None and rc == -9, "softmax_hang.py          -> no reply in %.0f s, killed (exit %s): timeout" %
              (time.monotonic() - t0, rc))
        w.close()
        w = Worker(tmp, gpu)
        check(prepare(w, paths) is not None, "a fresh worker after the hang")
        expect(w, "softmax_ok.py", "ok")

        # capture: no references; the outputs of both sets are written and become the references
        cap = os.path.join(tmp, "capture")
        check(prepare(w, paths, refs=False) == {"ok": True, "capture": True}, "prepare without references")
        r = run(w, "softmax_ok.py", capture=True, out_dir=cap)
        outs = (r or {}).get("outputs", {}).get("y", [])
        same = len(outs) == 2 and all(np.allclose(np.fromfile(outs[s], "<f4"), np.fromfile(paths["y"][s], "<f4"),
                                                  atol=1e-6) for s in range(2))
        check(r is not None and r.get("status") == "ok" and same,
              "capture                  -> %s, %s" % (show(r), outs))
        expect(w, "softmax_wrong.py", "wrong_result")  # checked against the captured outputs

        # an accumulated output: zeroed before each launch (poisoned, the atomic adds would keep the NaN)
        sums = []
        for k in range(2):
            p = os.path.join(tmp, "s.set%d.bin" % k)
            np.fromfile(paths["x"][k], "<f4").reshape(ROWS, COLS).astype(np.float64).sum(axis=1).astype("<f4").tofile(p)
            sums.append(p)
        r = w.ask({"op": "prepare", "atol": 1e-4, "rtol": 1e-5, "scalars": {"n_cols": COLS},
                   "buffers": [{"name": "x", "dtype": "f32", "shape": [ROWS, COLS], "inputs": paths["x"]},
                               {"name": "s", "dtype": "f32", "shape": [ROWS], "is_output": True, "accumulate": True,
                                "refs": sums}]})
        r = r and run(w, "rowsum_atomic.py", entry="rowsum_kernel", grid=[ROWS, (COLS + 31) // 32],
                      meta={"BLOCK": 32}, args=["x", "s", "n_cols"])
        check(r is not None and r.get("status") == "ok", "%-24s -> %s (accumulate)" % ("rowsum_atomic.py", show(r)))

        held_works(w, paths)

        # malformed requests: a reply that says why, the worker goes on
        r = w.ask({"op": "prepare", "buffers": [{"name": "x", "dtype": "f8", "shape": [1], "inputs": ["a", "b"]}]})
        check(r is not None and r.get("ok") is False and "unknown dtype 'f8'" in r.get("error", ""),
              "bad prepare -> %s" % json.dumps(r))
        r = w.ask({"op": "frobnicate"})
        check(r is not None and r.get("ok") is False, "unknown op -> %s" % json.dumps(r))
        check(w.ask({"op": "quit"}) == {"ok": True} and w.p.wait(timeout=10) == 0, "quit")
    finally:
        w.close()
    if failures:
        print("%d check(s) failed; worker stderr in %s" % (len(failures), tmp))
        return 1
    print("all Triton worker checks passed (%s)" % ("GPU" if gpu else "interpreter"))
    shutil.rmtree(tmp, ignore_errors=True)  # kept only when a check failed, for its worker's stderr
    return 0


if __name__ == "__main__":
    sys.exit(main())
