#!/usr/bin/env python3
"""PyTorch's own timing of the cuDNN fp32 convolutions that bench/fair_baseline.sh also times with cutune's harness.

As a PyTorch user gets them: cudnn.benchmark on (cuDNN's engines searched by PyTorch), TF32 off (fp32 FMA math, the
baseline cutune compares with), NCHW fp32 tensors. Three times per shape, each the median of its repeats:
  warm_ms        a CUDA graph of K calls back to back, replayed (L2 warm), per call
  cold_graph_ms  the L2 flushed (a buffer twice its size written), then a one-call CUDA graph between two events
  cold_eager_ms  the L2 flushed, then one eager call between two events (host overhead of the call included)
usage: torch_conv_time.py "N,H,W,CO,CI,KH,KW,S,P ..." OUT.jsonl
"""
import json
import statistics
import sys

import torch


def events():
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def time_shape(shape, flush):
    n, h, w, co, ci, kh, kw, s, p = shape
    x = torch.randn(n, ci, h, w, device="cuda")
    wt = torch.randn(co, ci, kh, kw, device="cuda")

    def call():
        return torch.nn.functional.conv2d(x, wt, stride=s, padding=p)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # benchmark mode picks its engine here; graphs need a warm side stream
        for _ in range(5):
            call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    a, b = events()
    a.record()
    for _ in range(10):
        call()
    b.record()
    torch.cuda.synchronize()
    est = max(a.elapsed_time(b) / 10, 1e-4)
    k = int(min(1000, max(4, 2.0 / est)))

    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(k):
            call()
    g1 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1):
        call()
    g.replay()
    torch.cuda.synchronize()

    warm = []
    for _ in range(7):
        a, b = events()
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        warm.append(a.elapsed_time(b) / k)

    def cold(run, reps=50):
        ts = []
        for _ in range(reps):
            flush.zero_()
            a, b = events()
            a.record()
            run()
            b.record()
            torch.cuda.synchronize()
            ts.append(a.elapsed_time(b))
        return statistics.median(ts)

    return {"shape": list(shape), "warm_ms": statistics.median(warm), "graph_calls": k,
            "cold_graph_ms": cold(g1.replay), "cold_eager_ms": cold(call)}


def main():
    shapes = [tuple(int(v) for v in s.split(",")) for s in sys.argv[1].split()]
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    with open(sys.argv[2], "w") as f:
        for shape in shapes:
            r = time_shape(shape, flush)
            r.update({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                      "gpu": torch.cuda.get_device_name(0)})
            f.write(json.dumps(r) + "\n")
            print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
