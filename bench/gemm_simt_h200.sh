#!/usr/bin/env bash
# Best of N random SIMT GEMM schedules (src/gemm) vs cuBLAS, fp32, on GPU 0: shapes 4096^3 and 1024x2048x3072, NN
# and NT. For each, bench/gemm_sample (built by CMake) draws N random valid schedules, compiles them with NVRTC,
# measures them all in one GPU worker (relative Frobenius check against a double CPU reference, then CUDA-event
# timing with L2 flush: median of >= 5 launches and >= 20 ms) and times cuBLAS SGEMM (CUBLAS_PEDANTIC_MATH: fp32
# FMA, no TF32) in the same worker with the same routine. This is random sampling, not search (the GEMM tuner comes
# later). Prints a table and writes JSON {gpu, driver, command, method, rows}.
# usage: bench/gemm_simt_h200.sh [N=300] [RESULT_JSON=bench/results/gemm_simt_h200.json] [WORKDIR=bench_work/gemm]
# CUTUNE_BENCH_BUDGET=S caps the measuring time per row (0: none); a row says how many candidates it measured.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
# cuBLAS 13 from the toolkit, else from the image's Python packages.
blas=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))' \
       2>/dev/null || true)
[ -n "$blas" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$blas"
N=${1:-300}
RESULT=${2:-bench/results/gemm_simt_h200.json}
WORK=${3:-bench_work/gemm}
BUDGET=${CUTUNE_BENCH_BUDGET:-0}
SEED=${CUTUNE_BENCH_SEED:-1}
DRIVER=${CUTUNE_GEMM_SAMPLE:-build/gemm_sample}
COMMAND="CUTUNE_BENCH_BUDGET=$BUDGET CUTUNE_BENCH_SEED=$SEED bench/gemm_simt_h200.sh $N"
mkdir -p "$WORK" "$(dirname "$RESULT")"
"$CUTUNE_BIN" devices --json > "$WORK/devices.json"
: > "$WORK/rows.jsonl"
for shape in "4096 4096 4096" "1024 2048 3072"; do
  for layout in nn nt; do
    echo "== $shape $layout: $N random schedules" >&2
    $DRIVER $shape $layout "$N" "$SEED" "$BUDGET" >> "$WORK/rows.jsonl" || echo "gemm_sample failed for $shape $layout" >&2
  done
done
python3 - "$WORK/devices.json" "$WORK/rows.jsonl" "$COMMAND" "$RESULT" "$N" <<'PY'
import json, sys
dev_path, rows_path, command, out, n = sys.argv[1:6]
devs = json.load(open(dev_path))
d = devs[0] if isinstance(devs, list) and devs else (devs.get("devices", [{}])[0] if isinstance(devs, dict) else {})
rows = [json.loads(l) for l in open(rows_path) if l.strip()]
doc = {"bench": "gemm_simt_h200", "gpu": d.get("name"), "gpu_uuid": d.get("uuid"),
       "driver": d.get("driver"), "cuda_driver_version": d.get("cuda_driver_version"), "sm_clock_mhz": d.get("sm_clock_mhz"),
       "power_limit_w": d.get("power_limit_w"), "command": command,
       "method": "best of N random schedules", "N": int(n),
       "note": "random sampling of the SIMT template, not search; cuBLAS SGEMM with CUBLAS_PEDANTIC_MATH (fp32 FMA, "
               "no TF32); both checked by relative Frobenius error against a double CPU reference and timed by the "
               "same worker routine (CUDA events, L2 flush, median)",
       "rows": rows}
json.dump(doc, open(out, "w"), indent=1)
print(f"{'shape':>16} {'layout':>6} {'N':>5} {'ok':>5} {'best SIMT TFLOP/s':>18} {'cuBLAS TFLOP/s':>15} {'ratio':>6}")
for r in rows:
    shape = f"{r['m']}x{r['n']}x{r['k']}"
    print(f"{shape:>16} {r['layout']:>6} {r['measured']:>5} {r['ok']:>5} {r['best_simt_tflops']:>18.2f} "
          f"{r['cublas_tflops']:>15.2f} {r['ratio_simt_over_cublas']:>6.3f}")
print(f"wrote {out}")
PY
