#!/usr/bin/env bash
# Seed 001 phase 3 on the lent GPU at its current power cap (never changed there): the 25 representatives of two
# seed-001 cases, sampled from the committed H200 tuning logs (bench/results/conv_seed001_h200/records.tgz), each
# measured by `cutune energy` (3 lrounds of >= 10 energy-counter steps; kernels checked before and after).
# usage: bench/energy_h200.sh [CASES="1 2"] [WORKDIR=/tmp/energy_work] [OUTDIR=bench/results/energy_h200]
# Run through the device tool with build/ and .dev/ carried, e.g.
#   bash bench/energy_h200.sh "1 2" /tmp/w $OUT/energy_h200
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/device_env.sh
CASES=${1:-1 2}
WORK=${2:-/tmp/energy_work}
OUTDIR=${3:-bench/results/energy_h200}
# Extra `cutune energy` flags (e.g. CUTUNE_ENERGY_ARGS="--min-steps 5 --warmup 0.1"), stated in the command.
EXTRA=${CUTUNE_ENERGY_ARGS:-}
COMMAND="CUTUNE_ENERGY_ARGS='$EXTRA' bench/energy_h200.sh '$CASES'"
rm -rf "$WORK"; mkdir -p "$WORK" "$OUTDIR"
tar xzf bench/results/conv_seed001_h200/records.tgz -C "$WORK"
"$CUTUNE_BIN" devices --json > "$WORK/devices.json"
"$CUTUNE_BIN" sample --keep 25 --in "$WORK/tuningrecords" --out "$WORK/tuningresults" > /dev/null
"$CUTUNE_BIN" energy --outdir "$WORK" --detect | tee "$WORK/detect.txt"
t0=$(date +%s.%N)
for c in $CASES; do
  "$CUTUNE_BIN" energy --outdir "$WORK" --power-caps current --case "$c" $EXTRA 2>&1 | tee -a "$WORK/energy.log"
done
t1=$(date +%s.%N)
python3 bench/energy_json.py --work "$WORK" --devices "$WORK/devices.json" --command "$COMMAND" \
  --wall "$(python3 -c "print(round($t1 - $t0, 1))")" --out "$OUTDIR.json"
# the seed-001 folder layout: kernel_outputs/caseN/powercapP/{output_kernelK.txt,results.csv,energy.jsonl}, all.csv
cp -r "$WORK/kernel_outputs" "$OUTDIR/"
cp "$WORK/energy.log" "$WORK/detect.txt" "$OUTDIR/"
