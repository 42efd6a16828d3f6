#!/usr/bin/env bash
# The compile cache cannot be used to run another user's code (issue 15). `cutune optimize` loads host-compiled
# libraries (the emulator) and cubins from its cache folder, so:
#   - a cache folder any user can write (the old default /tmp/kernel_compile_cache, pre-created mode 0777) is
#     refused with a sentence naming it, before anything is built or loaded, and a non-zero exit;
#   - so is one owned by another user (when this test runs as root and can give the folder away), and a symbolic
#     link to a folder;
#   - a library swapped inside our own cache after it was built (a planted .so whose constructor writes a marker
#     file) is never loaded: its content hash no longer matches, it is rebuilt, and the marker never appears;
#   - without COMPILE_CACHE_DIR the cache is the per-user $XDG_CACHE_HOME/cutune, mode 0700.
set -euo pipefail
BIN=$1; DIR=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
SPEC=$HERE/../kernels/reduce_sum.json
run() { # $1: cache folder ("" for the default), rest: extra words of the log name
    local cache=$1 name=$2
    if [ -n "$cache" ]; then
        COMPILE_CACHE_DIR=$cache "$BIN" optimize --input "$SPEC" --outdir "out_$name" --backend emu --no-llm \
            --budget-builds 2 --seed 1 --sizes N=4096 > "$name.log" 2>&1
    else
        XDG_CACHE_HOME=$PWD/xdg "$BIN" optimize --input "$SPEC" --outdir "out_$name" --backend emu --no-llm \
            --budget-builds 2 --seed 1 --sizes N=4096 > "$name.log" 2>&1
    fi
}
# 1. world-writable
mkdir -m 0777 shared_cache && chmod 0777 shared_cache
if run "$PWD/shared_cache" world; then cat world.log; fail "a world-writable cache folder was used"; fi
grep -q "shared_cache' is writable by every user" world.log || { cat world.log; fail "no sentence naming the folder"; }
[ -z "$(ls -A shared_cache)" ] || fail "something was written into the refused folder: $(ls shared_cache)"
echo "world-writable cache refused: $(grep -o "cache folder .*" world.log | head -1)"
# 2. a symbolic link
mkdir real_cache && ln -s real_cache link_cache
if run "$PWD/link_cache" link; then cat link.log; fail "a symbolic link was used as the cache folder"; fi
grep -q "symbolic link" link.log || { cat link.log; fail "no sentence about the link"; }
# 3. another owner (only root can give a folder away)
if [ "$(id -u)" = 0 ] && id nobody > /dev/null 2>&1; then
    mkdir other_cache && chown nobody other_cache
    if run "$PWD/other_cache" other; then cat other.log; fail "another user's cache folder was used"; fi
    grep -q "belongs to uid" other.log || { cat other.log; fail "no sentence about the owner"; }
    echo "another user's cache refused"
else
    echo "another owner: skipped (needs root to chown)"
fi
# 4. a library swapped in our own cache is not loaded
run "$PWD/own_cache" first || { cat first.log; fail "the first run in our own cache"; }
lib=$(ls own_cache/emu/emu_*.so | head -1)
[ -n "$lib" ] || fail "no cached library to swap"
cat > plant.c <<'C'
#include <stdio.h>
__attribute__((constructor)) static void planted(void)
{
    FILE *f = fopen("PLANTED_MARKER", "w");
    if (f)
        fclose(f);
}
C
cc -shared -fPIC -o plant.so plant.c
for so in own_cache/emu/emu_*.so; do cp plant.so "$so"; done
run "$PWD/own_cache" second || { cat second.log; fail "the second run after the swap"; }
[ ! -e PLANTED_MARKER ] && [ ! -e "out_second/PLANTED_MARKER" ] || fail "a swapped library was loaded"
for so in own_cache/emu/emu_*.so; do cmp -s plant.so "$so" && fail "$so is still the planted library"; done
echo "swapped libraries rebuilt, never loaded"
# 5. the default: per user, 0700
run "" default || { cat default.log; fail "the default cache"; }
[ -d xdg/cutune ] || fail "no per-user cache folder xdg/cutune"
[ "$(stat -c %a xdg/cutune)" = 700 ] || fail "xdg/cutune is mode $(stat -c %a xdg/cutune), not 700"
echo "default cache: xdg/cutune, mode 700"
