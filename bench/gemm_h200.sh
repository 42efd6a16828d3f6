#!/usr/bin/env bash
# GEMM against the best vendor kernel (issue 6, seed 004) on GPU 0, in one work directory:
#   for every shape x layout (nn, nt) x dtype (fp32, tf32, fp16, bf16), or the layouts and dtypes a row names:
#     vendor   `cutune baseline --gemm`: cuBLAS GemmEx + cuBLASLt heuristic top-N + enumerated algorithms, the best
#              valid one (tuningresults/vendor_<gemm>.json);
#     generic  `cutune tune --gemm --tpl simt`: the SIMT register-tiled template (fp32 FMA math on the dtype's
#              inputs), the analogue of TVM's generic tuning;
#     template `cutune tune --gemm --tpl mma,wgmma,gemv` (not for fp32 unless M <= 16: no tensor-core template
#              computes plain fp32): the cp.async + mma.sync and the Hopper TMA + wgmma templates, and for M <= 16
#              the skinny-GEMM gemv template (issue 21; CUDA cores at memory bandwidth);
#   then `cutune report --gemm` (report/gemm.md, report/gemm.json) and the JSON of the issue with the GPU, driver,
#   clocks and the exact command.
# Every candidate and every vendor algorithm is checked (relative Frobenius error against a double reference of the
# same rounded inputs: CPU up to 2^32 FLOP, cuBLAS DGEMM in the worker beyond; NaN poison) and timed by the same worker routine (CUDA events, L2 flush, median).
# usage: bench/gemm_h200.sh "SHAPES" RESULT_JSON [WORKDIR]
#   SHAPES: rows "MxNxK" (every layout of CUTUNE_GEMM_LAYOUTS x dtype of CUTUNE_GEMM_DTYPES) or
#   "MxNxK[bBATCH]:LAYOUTS:DTYPES" (comma lists; bBATCH a strided batch), e.g. "512x512x512b32:nn:fp16"; default:
#   issue 6's six shapes, then issue 21's rows (LLM decode 1/16/64 x 4096 x 4096 fp16 and bf16 NN and NT, a batched
#   32 x 512^3 fp16, 4096^3 TN fp16).
# Env: CUTUNE_GEMM_T_GENERIC, CUTUNE_GEMM_T_TEMPLATE (trials per row), CUTUNE_GEMM_T_TARGET (trials of the generic
# fp32 4096^3 rows, the issue's SIMT target), CUTUNE_GEMM_BUDGET (seconds per tune), CUTUNE_GEMM_VENDOR_BUDGET,
# CUTUNE_GEMM_DTYPES, CUTUNE_GEMM_LAYOUTS.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
blas=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))' \
       2>/dev/null || true)
[ -n "$blas" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$blas"
ISSUE21="1x4096x4096:nn,nt:fp16,bf16 16x4096x4096:nn,nt:fp16,bf16 64x4096x4096:nn,nt:fp16,bf16"
ISSUE21="$ISSUE21 512x512x512b32:nn:fp16 4096x4096x4096:tn:fp16"
SHAPES=${1:-"1024x2048x3072 1024x1024x2048 4096x4096x4096 8192x8192x8192 7384x7384x7384 512x512x512 $ISSUE21"}
RESULT=${2:-bench/results/gemm_h200.json}
WORK=${3:-bench_work/gemm_h200}
TG=${CUTUNE_GEMM_T_GENERIC:-48}
TT=${CUTUNE_GEMM_T_TEMPLATE:-128}
TTARGET=${CUTUNE_GEMM_T_TARGET:-256}
BUDGET=${CUTUNE_GEMM_BUDGET:-60}
VBUDGET=${CUTUNE_GEMM_VENDOR_BUDGET:-15}
DTYPES=${CUTUNE_GEMM_DTYPES:-"fp32 tf32 fp16 bf16"}
LAYOUTS=${CUTUNE_GEMM_LAYOUTS:-"nn nt"}
COMMAND="CUTUNE_GEMM_T_GENERIC=$TG CUTUNE_GEMM_T_TEMPLATE=$TT CUTUNE_GEMM_T_TARGET=$TTARGET CUTUNE_GEMM_BUDGET=$BUDGET"
COMMAND="$COMMAND CUTUNE_GEMM_VENDOR_BUDGET=$VBUDGET bench/gemm_h200.sh \"$SHAPES\""
CUT=$(cd "$(dirname "$CUTUNE_BIN")" && pwd)/$(basename "$CUTUNE_BIN")
mkdir -p "$WORK" "$(dirname "$RESULT")"
RESULT=$(cd "$(dirname "$RESULT")" && pwd)/$(basename "$RESULT")
cd "$WORK"
"$CUT" devices --json > devices.json
: > timing.jsonl
run() { # label, command...: runs it, logs its wall time
  local label=$1; shift
  local t0; t0=$(date +%s%N)
  if ! "$@" >> bench.log 2>&1; then echo "FAILED: $*" | tee -a bench.log >&2; fi
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '{"what":"%s","wall_s":%d.%03d}\n' "$label" $((ms / 1000)) $((ms % 1000)) >> timing.jsonl
}
for row in $SHAPES; do
  IFS=: read -r shape row_layouts row_dtypes <<< "$row"
  row_layouts=${row_layouts:-$LAYOUTS}; row_dtypes=${row_dtypes:-$DTYPES}
  batch=1
  [[ $shape == *b* ]] && batch=${shape#*b} && shape=${shape%b*}
  IFS=x read -r m n k <<< "$shape"
  for layout in ${row_layouts//,/ }; do
    for dt in ${row_dtypes//,/ }; do
      words=(M="$m" N="$n" K="$k")
      [ "$batch" -gt 1 ] && words+=(batch="$batch")
      flags=(--layout "$layout" --dtype "$dt")
      echo "== ${m}x${n}x${k} batch $batch $layout $dt" >&2
      run "vendor ${row} $layout $dt" "$CUT" baseline --gemm "${words[@]}" "${flags[@]}" --budget "$VBUDGET"
      tg=$TG
      [ "$shape" = 4096x4096x4096 ] && [ "$dt" = fp32 ] && tg=$TTARGET
      ttot=$tg
      if [ "$dt" != fp32 ] || [ "$m" -le 16 ]; then # gemv (M <= 16) computes fp32 too
        run "template ${row} $layout $dt" "$CUT" tune --gemm "${words[@]}" t="$TT" "${flags[@]}" \
            --tpl mma,wgmma,gemv --time-budget "$BUDGET" --quiet
        ttot=$((TT + tg))
      fi
      # the log holds the template trials already: t counts every trial of the log
      run "generic ${row} $layout $dt" "$CUT" tune --gemm "${words[@]}" t="$ttot" "${flags[@]}" --tpl simt \
          --time-budget "$BUDGET" --quiet
    done
  done
done
"$CUT" report --gemm --no-plots >> bench.log 2>&1 || echo "report --gemm failed" >&2
python3 - devices.json report/gemm.json timing.jsonl "$COMMAND" "$RESULT" <<'PY'
import json, sys
dev_path, rep_path, timing_path, command, out = sys.argv[1:6]
devs = json.load(open(dev_path))
d = devs["devices"][0] if isinstance(devs, dict) else devs[0]
rep = json.load(open(rep_path))
doc = {"bench": "gemm_h200", "gpu": d.get("name"), "gpu_uuid": d.get("uuid"), "driver": d.get("driver"),
       "sm_clock_mhz": d.get("sm_clock_mhz"), "max_sm_clock_mhz": d.get("max_sm_clock_mhz"),
       "power_limit_w": d.get("power_limit_w"), "command": command,
       "method": "per row: vendor = best valid of cuBLAS GemmEx, cuBLASLt heuristic and enumerated algorithms; "
                 "generic = best valid SIMT kernel found by cutune tune --tpl simt; template = best valid mma/wgmma/"
                 "gemv kernel found by cutune tune --tpl mma,wgmma,gemv (gemv for M <= 16 only; none for fp32 beyond); "
                 "all checked against a double reference "
                 "of the rounded inputs (CPU up to 2^32 FLOP, cuBLAS DGEMM in the worker beyond) and timed by the "
                 "same worker routine (CUDA events, L2 flush, median)",
       "timing": [json.loads(l) for l in open(timing_path) if l.strip()],
       "rows": rep["rows"]}
json.dump(doc, open(out, "w"), indent=1)
def f(x, w=8, p=1):
    return f"{x:>{w}.{p}f}" if isinstance(x, (int, float)) else f"{'-':>{w}}"
print(f"{'shape':>16} {'lay':>3} {'dtype':>5} {'generic':>8} {'template':>8} {'vendor':>8} {'tpl/vnd':>7} "
      f"{'gen/vnd':>7}  vendor algo")
for r in doc["rows"]:
    g, t, v = r.get("generic_tflops"), r.get("template_tflops"), r.get("vendor_tflops")
    tv = t / v if t and v else None
    gv = g / v if g and v else None
    b = f"b{r['batch']}" if r.get("batch", 1) > 1 else ""
    print(f"{str(r['m'])+'x'+str(r['n'])+'x'+str(r['k'])+b:>16} {r['layout']:>3} {r['dtype']:>5} {f(g)} {f(t)} {f(v)} "
          f"{f(tv, 7, 3)} {f(gv, 7, 3)}  {r.get('vendor_algo') or ''}")
print(f"wrote {out}")
PY
