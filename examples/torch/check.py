"""Runs the cutune_conv extension (built by setup.py) against torch.nn.functional.conv2d on the same tensors, on
two streams at once as well, and times both with CUDA events (PyTorch's default: cuDNN, TF32 off for this fp32
comparison unless --tf32). Prints one JSON object."""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cutune_conv  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--shape", required=True, help="N,H,W,CO,CI,KH,KW,stride,pad")
ap.add_argument("--tf32", action="store_true")
a = ap.parse_args()
n, h, w, co, ci, kh, kw, s, p = map(int, a.shape.split(","))
torch.backends.cudnn.allow_tf32 = a.tf32
torch.backends.cuda.matmul.allow_tf32 = a.tf32
g = torch.Generator(device="cuda").manual_seed(1)
x = torch.rand(n, ci, h, w, device="cuda", generator=g) * 2 - 1
wt = torch.rand(co, ci, kh, kw, device="cuda", generator=g) * 2 - 1
ref = F.conv2d(x.double(), wt.double(), stride=s, padding=p)
y = cutune_conv.conv2d(x, wt)
err = (y.double() - ref).abs().max().item()
ok = torch.allclose(y.double(), ref, rtol=1e-4, atol=1e-4)

# two streams at once, each with its own inputs
xs = [torch.rand_like(x) * 2 - 1 for _ in range(2)]
refs = [F.conv2d(xi.double(), wt.double(), stride=s, padding=p) for xi in xs]
streams = [torch.cuda.Stream() for _ in range(2)]
outs = [None, None]
torch.cuda.synchronize()
for _ in range(20):
    for i, st in enumerate(streams):
        with torch.cuda.stream(st):
            outs[i] = cutune_conv.conv2d(xs[i], wt)
torch.cuda.synchronize()
streams_ok = all(torch.allclose(o.double(), r, rtol=1e-4, atol=1e-4) for o, r in zip(outs, refs))


def time_ms(fn, iters=200):
    for _ in range(10):
        fn()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    t0.record()
    for _ in range(iters):
        fn()
    t1.record()
    torch.cuda.synchronize()
    return t0.elapsed_time(t1) / iters


ours = time_ms(lambda: cutune_conv.conv2d(x, wt))
theirs = time_ms(lambda: F.conv2d(x, wt, stride=s, padding=p))
print(json.dumps({"shape": a.shape, "max_abs_err": err, "ok": bool(ok), "two_streams_ok": bool(streams_ok),
                  "cutune_ms": ours, "torch_ms": theirs, "torch_tf32": a.tf32, "speedup": theirs / ours,
                  "device": torch.cuda.get_device_name(), "torch": torch.__version__}))
sys.exit(0 if ok and streams_ok else 1)
