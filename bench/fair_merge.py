#!/usr/bin/env python3
"""Merges bench/fair_baseline.sh's runs into one JSON document and a table: per shape, cuDNN as cutune's harness
times it (cold single launch, a one-launch CUDA graph after an L2 flush; warm, a graph of launches back to back) and
as PyTorch times it (bench/torch_conv_time.py, same modes), how far apart the two timers are, and cutune's tuned
kernel against both.
usage: fair_merge.py BASELINE.jsonl TORCH.jsonl SMI.csv COMMAND > fair.json   (the table goes to stderr)
"""
import json
import sys


def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def ratio(a, b):
    return round(a / b, 3) if a and b and a > 0 and b > 0 else None


def main():
    base = {tuple(r["shape"]): r for r in lines(sys.argv[1])}
    torch = {tuple(r["shape"]): r for r in lines(sys.argv[2])}
    with open(sys.argv[3]) as f:
        smi = f.read().strip().splitlines()
    rows = []
    for shape, t in torch.items():
        b = base.get(shape)
        if not b:
            continue
        row = {
            "shape": list(shape),
            "cudnn_algo_harness": b.get("cudnn_algo"),
            "harness_cudnn_cold_ms": b.get("cudnn_ms"),
            "harness_cudnn_warm_ms": b.get("cudnn_warm_ms"),
            "torch_cudnn_cold_graph_ms": t["cold_graph_ms"],
            "torch_cudnn_cold_eager_ms": t["cold_eager_ms"],
            "torch_cudnn_warm_ms": t["warm_ms"],
            "cutune_cold_ms": b.get("cutune_ms"),
            "cutune_warm_ms": b.get("cutune_warm_ms"),
        }
        row["harness_over_torch_cold"] = ratio(row["harness_cudnn_cold_ms"], row["torch_cudnn_cold_graph_ms"])
        row["harness_over_torch_warm"] = ratio(row["harness_cudnn_warm_ms"], row["torch_cudnn_warm_ms"])
        row["speedup_cold_vs_harness_cudnn"] = ratio(row["harness_cudnn_cold_ms"], row["cutune_cold_ms"])
        row["speedup_warm_vs_harness_cudnn"] = ratio(row["harness_cudnn_warm_ms"], row["cutune_warm_ms"])
        row["speedup_cold_vs_torch"] = ratio(row["torch_cudnn_cold_graph_ms"], row["cutune_cold_ms"])
        row["speedup_warm_vs_torch"] = ratio(row["torch_cudnn_warm_ms"], row["cutune_warm_ms"])
        rows.append(row)
    first = next(iter(torch.values()), {})
    doc = {"what": "cuDNN fp32 timed by cutune's harness and by PyTorch, and cutune's tuned kernel, same GPU, one run",
           "command": sys.argv[4], "nvidia_smi": smi, "torch": first.get("torch"), "cudnn": first.get("cudnn"),
           "gpu": first.get("gpu"), "rows": rows}
    json.dump(doc, sys.stdout, indent=1)
    print()
    fmt = "{:<28} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>9} {:>9} {:>7} {:>7}"
    print(fmt.format("shape N,H,W,CO,CI,KH,KW,S,P", "hcold", "tcold", "hwarm", "twarm", "h/t c", "h/t w", "ours c",
                     "ours w", "x t c", "x t w"), file=sys.stderr)
    for r in rows:
        v = lambda k: "-" if r[k] is None else ("%.4f" % r[k] if isinstance(r[k], float) and r[k] < 100 else str(r[k]))
        print(fmt.format(",".join(map(str, r["shape"])), v("harness_cudnn_cold_ms"), v("torch_cudnn_cold_graph_ms"),
                         v("harness_cudnn_warm_ms"), v("torch_cudnn_warm_ms"), v("harness_over_torch_cold"),
                         v("harness_over_torch_warm"), v("cutune_cold_ms"), v("cutune_warm_ms"),
                         v("speedup_cold_vs_torch"), v("speedup_warm_vs_torch")), file=sys.stderr)


if __name__ == "__main__":
    main()
