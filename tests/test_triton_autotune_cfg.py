#!/usr/bin/env python3
"""bench/triton_autotune.py gives @triton.autotune cutune's search space: the suite specs' configuration counts (by
hand: the product of the tunables' list lengths, less what a restriction or the launch rules out), the baseline
first, restrictions and grids evaluated as src/ops/kernel/expr.c does (C's integer division, short-circuit, errors),
and a variant's tunables header read as src/measure/triton_runner.c reads it. Standard library only (no triton, no
torch: the script imports those in main).

    python3 tests/test_triton_autotune_cfg.py"""
import copy
import importlib.util
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
_spec = importlib.util.spec_from_file_location("triton_autotune", os.path.join(ROOT, "bench", "triton_autotune.py"))
ta = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ta)


def suite(name):
    with open(os.path.join(ROOT, "kernels", "triton", name + ".json")) as f:
        return json.load(f)


class Space(unittest.TestCase):
    def test_matmul(self):
        cfgs = ta.configs(suite("matmul"))
        self.assertEqual(len(cfgs), 4 * 4 * 3 * 3 * 4)  # BM, BN, BK, num_warps, num_stages; no restriction
        self.assertEqual(cfgs[0], {"BM": 32, "BN": 32, "BK": 16, "num_warps": 4, "num_stages": 1})
        self.assertEqual(cfgs[1]["BM"], 16)  # tunable 0 varies fastest, as ks_nth
        self.assertEqual(len({json.dumps(c, sort_keys=True) for c in cfgs}), len(cfgs))
        meta, opts = ta.split(cfgs[0])
        self.assertEqual(meta, {"BM": 32, "BN": 32, "BK": 16})
        self.assertEqual(opts, {"num_warps": 4, "num_stages": 1})

    def test_softmax_restriction(self):
        s = suite("softmax_row")
        self.assertEqual(s["restrictions"], ["BLOCK >= COLS"])
        self.assertEqual(len(ta.configs(s)), 2 * 4 * 3)  # COLS 2048: both blocks hold a row
        self.assertEqual(ta.configs(s)[0], {"BLOCK": 2048, "num_warps": 4, "num_stages": 1})
        three_k = ta.configs(s, {"ROWS": 8192, "COLS": 3000})
        self.assertEqual(len(three_k), 4 * 3)  # only BLOCK 4096 >= 3000
        self.assertTrue(all(c["BLOCK"] == 4096 for c in three_k))
        self.assertEqual(ta.configs(s, {"ROWS": 8192, "COLS": 5000}), [])

    def test_launch_rules(self):
        s = suite("softmax_row")
        s["tunables"]["num_warps"] = [4, 32, 64]  # 64 warps: 2048 threads, more than a block may have
        self.assertEqual(len(ta.configs(s)), 2 * 2 * 3)
        g = copy.deepcopy(suite("matmul"))
        g["launch"]["grid"] = ["cdiv(M, BM) - 64", "1"]  # M 2048: BM 32 gives 0 programs, BM 16 64
        self.assertEqual({c["BM"] for c in ta.configs(g)}, {16})
        bad = suite("softmax_row")
        bad["restrictions"] = ["COLS / (BLOCK - 2048) > 0"]  # cannot be evaluated at BLOCK 2048: rejected
        self.assertEqual({c["BLOCK"] for c in ta.configs(bad)}, {4096})

    def test_every_suite_spec(self):
        for f in sorted(os.listdir(os.path.join(ROOT, "kernels", "triton"))):
            if f.endswith(".json"):
                s = suite(f[:-5])
                cfgs = ta.configs(s)
                self.assertTrue(cfgs, f)
                self.assertEqual(cfgs[0], {k: v[0] for k, v in s["tunables"].items()}, f)


class Expressions(unittest.TestCase):
    def ev(self, text, **names):
        return ta.evaluate(text, names)

    def test_c_semantics(self):
        self.assertEqual(self.ev("cdiv(M, BM)", M=2048, BM=128), 16)
        self.assertEqual(self.ev("cdiv(45, 32)"), 2)
        self.assertEqual(self.ev("-7 / 2"), -3)  # truncates toward zero, not Python's floor
        self.assertEqual(self.ev("-7 % 2"), -1)
        self.assertEqual(self.ev("1 + 2 * 3 - 4 / 2"), 5)
        self.assertEqual(self.ev("1 < 2 < 1"), 0)  # (1 < 2) < 1, left to right as in C
        self.assertEqual(self.ev("!0 == 1"), 1)  # ! binds tighter than ==
        self.assertEqual(self.ev("!(1 != 1) && max(2, 3) == 3 || 0"), 1)
        self.assertEqual(self.ev("min(BX, 8) * max(-1, -2)", BX=5), -5)
        self.assertEqual(self.ev("BX == BY * TY", BX=64, BY=16, TY=4), 1)
        self.assertEqual(self.ev("BLOCK >= COLS", BLOCK=2048, COLS=2048), 1)
        self.assertEqual(self.ev(7), 7)

    def test_short_circuit(self):
        self.assertEqual(self.ev("N > 0 && M / N > 2", N=0, M=5), 0)
        self.assertEqual(self.ev("N == 0 || M / N > 2", N=0, M=5), 1)
        with self.assertRaises(ta.ExprError):  # a dead operand's names are checked all the same
            self.ev("0 && Q > 1")

    def test_errors(self):
        for bad in ("1 / 0", "5 % 0", "cdiv(4, 0)", "X", "foo(1, 2)", "1 +", "(1", "1 2", "1 = 1", "min(1)",
                    "9223372036854775807 + 1", "99999999999999999999", "1 $ 2", "3000000000 * 4000000000"):
            with self.assertRaises(ta.ExprError, msg=bad):
                self.ev(bad)


class Header(unittest.TestCase):
    def test_read(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "kernel.py")
            with open(p, "w") as f:
                f.write("import triton\n%s\nBM = 64\n\n# a comment\nnum_warps = 8\n num_stages=3 \n%s\n"
                        "@triton.jit\ndef k():\n    pass\n" % (ta.HEADER_BEGIN, ta.HEADER_END))
            self.assertEqual(ta.read_header(p), {"BM": 64, "num_warps": 8, "num_stages": 3})
            with open(p, "w") as f:
                f.write("%s\nBM = 6.5\n%s\n" % (ta.HEADER_BEGIN, ta.HEADER_END))
            with self.assertRaises(ta.Setup):
                ta.read_header(p)
            with open(p, "w") as f:
                f.write("%s\nBM = 64\n" % ta.HEADER_BEGIN)
            with self.assertRaises(ta.Setup):
                ta.read_header(p)

    def test_setup_errors_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            spec = os.path.join(ROOT, "kernels", "triton", "matmul.json")
            self.assertEqual(ta.main([spec, os.path.join(d, "nope"), os.path.join(d, "o.json")]), 2)
            self.assertEqual(ta.main([os.path.join(d, "nope.json"), d, os.path.join(d, "o.json")]), 2)
            self.assertEqual(ta.main([spec, d, os.path.join(d, "o.json")]), 2)  # no summary.json
            self.assertFalse(os.path.exists(os.path.join(d, "o.json")))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=1)
