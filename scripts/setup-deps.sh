#!/usr/bin/env bash
# Installs the Debian packages cutune's build and tests need (the CUDA toolkit is expected at /usr/local/cuda).
set -euo pipefail
pkgs="cmake make gcc g++ pkg-config libcjson-dev libcmocka-dev libxgboost-dev python3 gzip clang gnuplot-nox patch diffutils zlib1g-dev libcurl4-openssl-dev python3-venv libopenmpi-dev openmpi-bin"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  echo "installing:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
if [ ! -f /usr/local/cuda/include/nvrtc.h ]; then
  echo "cutune needs the CUDA toolkit (NVRTC and headers) at /usr/local/cuda" >&2
  exit 1
fi
# Triton (issue 18): the optimizer's Triton worker (tools/triton_worker.py) is tested under Triton's interpreter
# (TRITON_INTERPRET=1: the CPU, no GPU, no torch), with Triton and numpy from PyPI in a venv of the checkout
# (.venv-triton, ignored by git; ctest takes its python). Without it the Triton test skips and says why; CI must have it.
cd "$(dirname "$0")/.."
venv=.venv-triton
if ! "$venv/bin/python" -c 'import triton, numpy' 2>/dev/null; then
  echo "installing Triton and numpy into $venv"
  if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check 'triton==3.9.*' 'numpy>=1.24'; }; then
    echo "could not install Triton into $venv: the Triton worker's test will skip" >&2
    [ "${CI:-}" != true ] || exit 1
  fi
fi
