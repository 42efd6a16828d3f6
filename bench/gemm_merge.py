#!/usr/bin/env python3
"""Joins the parts of a bench/gemm_h200.sh run that was split over several device calls (each part a JSON the
script wrote for some shapes, layouts or dtypes) into the issue's file {"gpu", "command", "rows": [...]}: a row of
a later part replaces the same (m, n, k, layout, dtype) row of an earlier one. Each part may name the commit it
ran (--commit PART=HASH). Rows are keyed by shape, batch (1 when a part's rows predate it), layout and dtype.
Prints the table."""
import argparse, json

ap = argparse.ArgumentParser()
ap.add_argument("parts", nargs="+", help="part JSON files, earliest first")
ap.add_argument("--commit", action="append", default=[], help="PART_FILE=COMMIT")
ap.add_argument("--out", required=True)
a = ap.parse_args()
commits = dict(c.split("=", 1) for c in a.commit)
parts = [(p, json.load(open(p))) for p in a.parts]
first = parts[0][1]
rows = {}
for path, doc in parts:
    for r in doc["rows"]:
        r = dict(r, part=path.split("/")[-1], commit=commits.get(path))
        rows[(r["m"], r["n"], r["k"], r.get("batch", 1), r["layout"], r["dtype"])] = r
order = {"fp32": 0, "tf32": 1, "fp16": 2, "bf16": 3}
lorder = {"nn": 0, "nt": 1, "tn": 2, "tt": 3}
out = {k: first.get(k) for k in ("bench", "gpu", "gpu_uuid", "driver", "max_sm_clock_mhz", "power_limit_w")}
out["command"] = " ; ".join(d["command"] for _, d in parts)
out["method"] = first.get("method")
out["parts"] = [{"file": p.split("/")[-1], "command": d["command"], "commit": commits.get(p), "gpu_uuid": d.get("gpu_uuid"),
                 "sm_clock_mhz_idle": d.get("sm_clock_mhz"), "timing": d.get("timing")} for p, d in parts]
out["rows"] = sorted(rows.values(), key=lambda r: (r["m"] * r["n"] * r["k"] * r.get("batch", 1), r["m"],
                                                   r.get("batch", 1), lorder[r["layout"]], order[r["dtype"]]))
json.dump(out, open(a.out, "w"), indent=1)

def f(x, w=8, p=1):
    return f"{x:>{w}.{p}f}" if isinstance(x, (int, float)) else f"{'-':>{w}}"
print(f"{'shape':>16} {'lay':>3} {'dtype':>5} {'generic':>8} {'template':>8} {'vendor':>8} {'tpl/vnd':>7} {'gen/vnd':>7}"
      f"  best template kernel / vendor algo")
for r in out["rows"]:
    g, t, v = r.get("generic_tflops"), r.get("template_tflops"), r.get("vendor_tflops")
    b = f"b{r['batch']}" if r.get("batch", 1) > 1 else ""
    print(f"{str(r['m'])+'x'+str(r['n'])+'x'+str(r['k'])+b:>16} {r['layout']:>3} {r['dtype']:>5} {f(g)} {f(t)} {f(v)} "
          f"{f(t / v if t and v else None, 7, 3)} {f(g / v if g and v else None, 7, 3)}  "
          f"{r.get('template_knobs') or r.get('generic_knobs') or ''} / {r.get('vendor_algo') or ''}")
print(f"wrote {a.out}")
