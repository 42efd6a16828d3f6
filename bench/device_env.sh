# Sourced by the bench scripts on the lent GPU machine: finds the shared libraries a binary built on the
# development machine needs there (cJSON is carried in .dev/lib; NVRTC comes with the CUDA toolkit; cuDNN with
# the image's Python packages).
CUTUNE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
libs="$CUTUNE_ROOT/.dev/lib:/usr/local/cuda/lib64"
cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(os.path.dirname(nvidia.cudnn.__file__), "lib"))' \
        2>/dev/null || true)
[ -n "$cudnn" ] && libs="$libs:$cudnn"
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUTUNE_BIN=${CUTUNE_BIN:-$CUTUNE_ROOT/build/cutune}
