#!/usr/bin/env bash
# Installs the Debian packages cutune's build and tests need (the CUDA toolkit is expected at /usr/local/cuda).
set -euo pipefail
pkgs="cmake make gcc g++ pkg-config libcjson-dev libcmocka-dev libxgboost-dev python3 gzip clang gnuplot-nox patch diffutils zlib1g-dev libcurl4-openssl-dev"
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
