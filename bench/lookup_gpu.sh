#!/usr/bin/env bash
# Issue 16 on the GPU: a tuned kernel taken into programs.
#   1. examples/tune_lookup_launch tunes a Conv2D on this GPU, looks the best kernel up (cutune/lookup.h), compiles
#      it with NVRTC, launches it with the driver API, checks it against a CPU reference and times it;
#   2. the fastest split-K kernels of that tuning are exported (cutune export) and built with nvcc alone; the
#      exported driver validates and times each, then runs each on 4 streams at once (own inputs per stream,
#      launches released together) with the per-stream workspaces, and again with one shared workspace (the
#      control: a split-K kernel must then fail, which shows the concurrency check can fail);
#   3. the fastest exported kernel becomes a PyTorch extension (examples/torch) and is compared with
#      torch.nn.functional.conv2d (fp32, TF32 off) on the same tensors, on two streams as well.
# usage: bench/lookup_gpu.sh BINDIR OUTDIR   (BINDIR: cutune, cutune-worker, examples/tune_lookup_launch)
# env: LOOKUP_SHAPE (default seed 001's case 4, 1,17,17,1024,512,3,3,1,1), LOOKUP_TRIALS (default 96)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
BIN=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
export CUTUNE_WORKER=$BIN/cutune-worker CUTUNE_WORKLOADS=$PWD/workloads
SHAPE=${LOOKUP_SHAPE:-1,17,17,1024,512,3,3,1,1}
TRIALS=${LOOKUP_TRIALS:-96}
W=/tmp/lookup_gpu
rm -rf "$W" && mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.csv" 2>&1

echo "== 1. tune, look up, launch ($SHAPE, $TRIALS trials)"
"$BIN/examples/tune_lookup_launch" --records "$W/recs" --trials "$TRIALS" --conv "$SHAPE" > "$OUT/example.txt" 2>&1
echo "exit $?" >> "$OUT/example.txt"
cat "$OUT/example.txt"

echo "== 2. export split-K kernels, two-stream check"
mkdir -p "$W/proj/tuningresults"
python3 - "$W" <<'PY' > "$OUT/export_pick.txt"
import glob, json, os, sys
w = sys.argv[1]
log = glob.glob(os.path.join(w, "recs", "case1_*.json"))[0]
recs = [json.loads(l) for l in open(log)]
ok = sorted((r for r in recs if r["status"] == "ok"), key=lambda r: r["median_ms"])
split = [r for r in ok if r["sched"]["tpl"] == "igemm" and r["sched"].get("splitk", 1) > 1][:3]
other = [r for r in ok if r not in split][:1]
pick = split + other
with open(os.path.join(w, "proj", "tuningresults", os.path.basename(log)), "w") as f:
    for r in pick:
        f.write(json.dumps(r) + "\n")
for i, r in enumerate(pick, 1):
    print("kernel %d: %s %.4f ms splitk=%s" % (i, r["sched"]["tpl"], r["median_ms"], r["sched"].get("splitk", 1)))
PY
cat "$OUT/export_pick.txt"
"$BIN/cutune" export --outdir "$W/proj" > "$OUT/export.txt" 2>&1 || cat "$OUT/export.txt"
cp "$W/proj/kernels/cutune_kernels.h" "$W/proj/kernels/kernel_metadata.csv" "$OUT/" 2>/dev/null
(cd "$W/proj/kernels" && nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I. -o driver driver.cu \
   cutune_runtime.cu case1/kernel*.cu) > "$OUT/nvcc.txt" 2>&1 || cat "$OUT/nvcc.txt"
"$W/proj/kernels/driver" --streams 4 --repeats 50 --min-ms 100 > "$OUT/streams.txt" 2>&1
echo "exit $?" >> "$OUT/streams.txt"
cat "$OUT/streams.txt"
"$W/proj/kernels/driver" --streams 4 --repeats 50 --min-ms 10 --shared-workspace > "$OUT/streams_shared.txt" 2>&1
echo "exit $?" >> "$OUT/streams_shared.txt"
cat "$OUT/streams_shared.txt"

echo "== 3. PyTorch extension: the split-K kernel 1 and the fastest exported kernel"
fastest=$(python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(min(r, key=lambda x: float(x["tuned_ms"]))["kernel_id"])' "$W/proj/kernels/kernel_metadata.csv")
for k in 1 $fastest; do
  rm -rf "$W/torch" && cp -r examples/torch "$W/torch"
  (cd "$W/torch" && CUTUNE_EXPORT="$W/proj/kernels" CUTUNE_CASE=1 CUTUNE_KERNEL=$k \
     python3 setup.py build_ext --inplace --build-temp "$W/torch/tmp") > "$OUT/torch_build_k$k.txt" 2>&1 \
     || tail -30 "$OUT/torch_build_k$k.txt"
  (cd "$W/torch" && python3 check.py --shape "$SHAPE") > "$OUT/torch_k$k.json" 2>&1
  echo "exit $?" >> "$OUT/torch_k$k.json"
  cat "$OUT/torch_k$k.json"
done

# One summary, and everything in one archive (the device returns few files).
python3 - "$OUT" "$SHAPE" "$TRIALS" <<'PY2' > "$OUT/summary.json"
import glob, json, os, re, sys
out, shape, trials = sys.argv[1], sys.argv[2], int(sys.argv[3])
rd = lambda f: open(os.path.join(out, f)).read() if os.path.exists(os.path.join(out, f)) else ""
gpu = rd("gpu.csv").splitlines()[-1].split(", ") if rd("gpu.csv") else []
ex = rd("example.txt")
m = re.search(r"looked up: (.*), ([0-9.]+) ms .* the best of (\d+) valid records", ex)
t = re.search(r"timed: median ([0-9.]+) ms", ex)
streams = [l for l in rd("streams.txt").splitlines() if "concurrent launches" in l]
shared = [l for l in rd("streams_shared.txt").splitlines() if "concurrent launches" in l]
torch = {}
for f in sorted(glob.glob(os.path.join(out, "torch_k*.json"))):
    line = open(f).read().splitlines()[0]
    try:
        torch[os.path.basename(f)[:-5]] = json.loads(line)
    except ValueError:
        torch[os.path.basename(f)[:-5]] = line
print(json.dumps({
    "command": "bench/lookup_gpu.sh BINDIR OUTDIR (LOOKUP_SHAPE=%s LOOKUP_TRIALS=%d)" % (shape, trials),
    "gpu": gpu[0] if gpu else None, "driver": gpu[1] if len(gpu) > 1 else None,
    "power_limit": gpu[2] if len(gpu) > 2 else None, "sm_clock_mhz_idle": gpu[3] if len(gpu) > 3 else None,
    "sm_clock_mhz_max": gpu[4] if len(gpu) > 4 else None,
    "example": {"exit": int(re.search(r"exit (\d+)", ex).group(1)) if "exit" in ex else None,
                "looked_up": m.group(1) if m else None, "recorded_ms": float(m.group(2)) if m else None,
                "valid_records": int(m.group(3)) if m else None, "launched_ms": float(t.group(1)) if t else None,
                "correct": "correct" in ex},
    "export_picked": rd("export_pick.txt").splitlines(),
    "streams_per_stream_workspace": streams, "streams_shared_workspace_control": shared,
    "torch": torch}, indent=1))
PY2
cat "$OUT/summary.json"
tar czf "$OUT/../lookup_all.tgz" -C "$OUT" . && echo "archive: lookup_all.tgz"
