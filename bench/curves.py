#!/usr/bin/env python3
"""Tuning curves from cutune's raw logs: for each case, the best GFLOP/s after each trial (caseN_curve.csv:
trial,best_ms,best_gflops) and the search-quality figure best@200 / best@end (time ratio; 1.0 = the first 200
trials already found the final best). usage: bench/curves.py RECORDS_DIR OUT_DIR"""
import glob, json, os, re, sys

rec_dir, out_dir = sys.argv[1], sys.argv[2]
os.makedirs(out_dir, exist_ok=True)
summary = []
for f in sorted(glob.glob(os.path.join(rec_dir, "case*.json")), key=lambda p: int(re.search(r"case(\d+)_", p).group(1))):
    recs = sorted((json.loads(l) for l in open(f)), key=lambda r: r["trial"])
    case = recs[0]["case"]
    best, curve = None, []
    for r in recs:
        if r["status"] == "ok" and (best is None or r["median_ms"] < best[0]):
            best = (r["median_ms"], r["gflops"])
        curve.append((r["trial"], best))
    with open(os.path.join(out_dir, f"case{case}_curve.csv"), "w") as o:
        o.write("trial,best_ms,best_gflops\n")
        for t, b in curve:
            o.write(f"{t},{b[0]:.6f},{b[1]:.1f}\n" if b else f"{t},,\n")
    end = curve[-1][1][0]
    at200 = curve[min(199, len(curve) - 1)][1][0]
    summary.append({"case": case, "trials": len(recs), "best_ms_at_200": at200, "best_ms_at_end": end,
                    "ratio_200_vs_end": round(at200 / end, 3)})
    print(f"case {case}: {len(recs)} trials, best@200 {at200:.4f} ms, best@end {end:.4f} ms, ratio {at200 / end:.3f}")
json.dump(summary, open(os.path.join(out_dir, "search_quality.json"), "w"), indent=1)
