#!/usr/bin/env python3
"""bench/triton_merge.py joins the seeds of bench/triton_suite.sh and its autotune comparisons: on a fabricated call
folder (two seeds with summary.json, a third killed without one, env.txt, runs.txt, an autotune JSON), the per-seed
geomeans, the kernel x seed rows, the env's GPU and clocks, the commands and the Markdown tables. The numbers are
made up: test input only. Standard library only.

    python3 tests/test_triton_merge.py"""
import contextlib
import importlib.util
import io
import json
import math
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
_spec = importlib.util.spec_from_file_location("triton_merge", os.path.join(ROOT, "bench", "triton_merge.py"))
tm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tm)

SPEEDUPS = {1: {"triton_matmul": 4.0, "triton_softmax_row": 1.0}, 2: {"triton_matmul": 2.0, "triton_softmax_row": 2.0}}


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text if isinstance(text, str) else json.dumps(text))


def fabricate(call):
    """A call folder as bench/triton_suite.sh leaves it (and triton_suite.tgz unpacks)."""
    for seed, ks in SPEEDUPS.items():
        write(os.path.join(call, "s%d" % seed, "summary.json"), {
            "gpu": "NVIDIA H200", "backend": "cuda",
            "command": "cutune optimize --input kernels/triton --backend cuda --budget-builds 50 --seed %d --no-llm "
                       "--outdir /x/work/s%d --quiet" % (seed, seed),
            "kernels": [{"name": n, "baseline_ms": 1.0, "best_ms": 1.0 / s, "speedup": s, "builds": 50,
                         "builds_to_best": 10 + seed, "best_variant": "v%04d" % seed,
                         "best_moves": ["change_block_sizes"], "measured": 48, "failed": 2, "transpositions": 0}
                        for n, s in ks.items()],
            "geomean_speedup": math.sqrt(ks["triton_matmul"] * ks["triton_softmax_row"])})
    os.makedirs(os.path.join(call, "s3", "kernels"))  # killed: no summary.json
    write(os.path.join(call, "runs.txt"),
          "s1 0 812.3 cutune optimize --input kernels/triton --seed 1\n"
          "autotune_matmul 0 95.1 python3 bench/triton_autotune.py kernels/triton/matmul.json s1 autotune_matmul.json\n"
          "s2 0 790.0 cutune optimize --input kernels/triton --seed 2\n"
          "s3 124 3000.0 cutune optimize --input kernels/triton --seed 3\n")
    write(os.path.join(call, "env.txt"),
          "date: 2026-12-07T10:00:00Z\ncommit: abc123\ntorch: 2.9.0 cuda 13.0\ntriton: 3.6.0\nnvidia-smi:\n"
          "name, driver_version, clocks.current.sm [MHz], clocks.max.sm [MHz], power.limit [W]\n"
          "NVIDIA H200, 580.65.06, 1980 MHz, 1980 MHz, 700.00 W\n"
          "commands:\ns1: cutune optimize --input kernels/triton --seed 1\n")
    write(os.path.join(call, "autotune_matmul.json"), {
        "kernel": "triton_matmul", "gpu": "NVIDIA H200", "configs": 576, "autotune_seconds": 95.0,
        "autotune_best_config": {"BM": 64, "BN": 64, "BK": 32, "num_warps": 4, "num_stages": 3},
        "autotune_ms": 0.25, "cutune_best_variant": "v0011", "cutune_best_moves": ["change_block_sizes"],
        "cutune_ms": 0.26, "cutune_seconds": 120.0, "cutune_builds": 50, "baseline_ms": 1.0,
        "speedup_autotune": 4.0, "speedup_cutune": 1.0 / 0.26, "autotune_correct": True, "cutune_correct": True,
        "autotune_config_timings": [{"config": {}, "ms": [1.0]}]})


class Merge(unittest.TestCase):
    def test_call(self):
        with tempfile.TemporaryDirectory() as d:
            call = os.path.join(d, "call1")
            fabricate(call)
            out = os.path.join(d, "merged.json")
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = tm.main([os.path.join(call, s) for s in ("s1", "s2", "s3")] + [out])
            self.assertEqual(rc, 0)
            with open(out) as f:
                res = json.load(f)
            md = buf.getvalue()

        self.assertEqual(list(res["seeds"]), ["s1", "s2", "s3"])
        self.assertAlmostEqual(res["seeds"]["s1"]["geomean_speedup"], 2.0)
        self.assertAlmostEqual(res["seeds"]["s2"]["geomean_speedup"], 2.0)
        self.assertEqual(res["seeds"]["s1"]["wall_s"], 812.3)
        self.assertEqual(res["seeds"]["s3"], dict(res["seeds"]["s3"], complete=False, rc=124))
        self.assertAlmostEqual(res["geomean_all_seeds"], 2.0)
        mm = res["kernels"]["triton_matmul"]
        self.assertEqual(set(mm), {"s1", "s2"})
        self.assertEqual(mm["s1"], {"baseline_ms": 1.0, "best_ms": 0.25, "speedup": 4.0, "builds": 50,
                                    "builds_to_best": 11, "best_variant": "v0001",
                                    "best_moves": ["change_block_sizes"]})
        g = res["env"][0]["gpus"][0]
        self.assertEqual((g["name"], g["driver_version"], g["clocks.sm"], g["clocks.max.sm"], g["power.limit"]),
                         ("NVIDIA H200", "580.65.06", "1980 MHz", "1980 MHz", "700.00 W"))
        self.assertEqual(res["env"][0]["commands"], ["s1: cutune optimize --input kernels/triton --seed 1"])
        self.assertEqual(len(res["autotune"]), 1)  # found beside the run folders, once
        a = res["autotune"][0]
        self.assertEqual((a["configs"], a["autotune_ms"], a["cutune_builds"]), (576, 0.25, 50))
        self.assertNotIn("autotune_config_timings", a)
        self.assertEqual(len(res["runs"][os.path.abspath(call)]), 4)

        self.assertIn("| kernel | seed 1 | seed 2 | seed 3 |", md)
        self.assertIn("| triton_matmul | 4.00x (v0001, best at 11/50) | 2.00x (v0002, best at 12/50) |  |", md)
        self.assertIn("| **geomean** | **2.00x** | **2.00x** | (rc 124, no summary) |", md)
        self.assertIn("| triton_matmul | 576 | 95.0 | BM=64, BN=64, BK=32, num_warps=4, num_stages=3 | 0.2500 | 120 |"
                      " 50 | v0011 (change_block_sizes) | 0.2600 | 1.0000 | 4.00x | 3.85x | yes |", md)
        self.assertIn("NVIDIA H200, driver 580.65.06, SM clock 1980 MHz (max 1980 MHz), power limit 700.00 W", md)

    def test_explicit_autotune_and_errors(self):
        with tempfile.TemporaryDirectory() as d:
            call = os.path.join(d, "c")
            fabricate(call)
            os.rename(os.path.join(call, "autotune_matmul.json"), os.path.join(d, "at.json"))
            out = os.path.join(d, "m.json")
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(tm.main([os.path.join(call, "s2"), os.path.join(d, "at.json"), out]), 0)
            with open(out) as f:
                res = json.load(f)
            self.assertEqual(list(res["seeds"]), ["s2"])
            self.assertEqual(res["autotune"][0]["kernel"], "triton_matmul")
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):  # only a comparison (a call of AUTOTUNE_RUN): its env beside it
                self.assertEqual(tm.main([os.path.join(d, "at.json"), out]), 0)
            with open(out) as f:
                res = json.load(f)
            self.assertEqual((res["seeds"], len(res["autotune"]), res["env"]), ({}, 1, []))
            self.assertTrue(buf.getvalue().startswith("\n| kernel | configs |"))
            with contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(tm.main([os.path.join(d, "nope"), out]), 2)
                self.assertEqual(tm.main([os.path.join(call, "s1")]), 2)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=1)
