#!/usr/bin/env bash
# Tunes the unique conv layers of ResNet-18 (224x224) and YOLOv3's Darknet-53 (416x416), fp32, and compares each
# with cuDNN's fastest fp32 forward algorithm in the same worker and harness (see bench/conv_seed001.sh).
# usage: bench/conv_networks.sh [TRIALS=1000] [WORKDIR=bench_work] [RESULT_DIR=bench/results] [LISTS="resnet18 yolov3"]
# CUTUNE_BENCH_CASE_BUDGET=S caps each case's tuning time so that a list fits one device call.
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=${1:-1000}
WORK=${2:-bench_work}
RESULTS=${3:-bench/results}
LISTS=${4:-resnet18 yolov3}
for list in $LISTS; do
  CUTUNE_BENCH_LIST=$list bash bench/conv_seed001.sh "$TRIALS" "$WORK/$list" "$RESULTS/conv_${list}_h200.json"
done
