#!/usr/bin/env bash
# Caches live in the per-user cache folder, not the working folder, and `cutune clean --cache` removes them (issue
# 16): after an emulated tune there is no .cutune_emu/ (or .cutune_cache/) in the working folder and the cache
# ($XDG_CACHE_HOME/cutune, emu/ inside) has the host-compiled kernels; `clean --cache` removes that folder (and an
# earlier version's .cutune_emu/ left in the working folder), keeps a symbolic link and its target, and never touches
# tuningrecords/; plain `clean` still leaves the cache and the records alone.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
export XDG_CACHE_HOME=$PWD/xdg
unset COMPILE_CACHE_DIR
mkdir work && cd work
"$BIN" tune --backend emu --workloads tiny --case 1 --trials 4 --batch 4 --quiet --outdir . > tune.out 2>&1 \
    || { cat tune.out; fail "tune"; }
[ ! -e .cutune_emu ] || fail ".cutune_emu/ is in the working folder"
[ ! -e .cutune_cache ] || fail ".cutune_cache/ is in the working folder"
n=$(ls "$XDG_CACHE_HOME/cutune/emu" | grep -c '\.so$' || true)
[ "$n" -ge 1 ] || fail "no compiled kernel in $XDG_CACHE_HOME/cutune/emu"
[ "$(stat -c %a "$XDG_CACHE_HOME/cutune")" = 700 ] || fail "the cache folder is not private"
# plain clean: the cache and the records stay
"$BIN" clean > clean.out
[ -d "$XDG_CACHE_HOME/cutune/emu" ] || fail "plain clean removed the cache"
grep -q "nothing to remove in ." clean.out || { cat clean.out; fail "plain clean output changed"; }
# an earlier version's per-folder cache, and a symbolic link where a cache folder would be
mkdir .cutune_emu && touch .cutune_emu/emu_0123456789abcdef.so
mkdir ../precious && touch ../precious/keep && ln -s ../precious .cutune_cache
sum=$(cat tuningrecords/*.json | md5sum)
"$BIN" clean --cache > cc.out || { cat cc.out; fail "clean --cache"; }
cat cc.out
[ ! -e "$XDG_CACHE_HOME/cutune" ] || fail "clean --cache left $XDG_CACHE_HOME/cutune"
grep -q "^removed $XDG_CACHE_HOME/cutune (cutune's cache, [0-9]* entries)" cc.out || fail "no line for the cache"
[ ! -e .cutune_emu ] || fail "clean --cache left .cutune_emu/"
[ -L .cutune_cache ] && [ -f ../precious/keep ] || fail "clean --cache followed or removed a symbolic link"
grep -q "^kept ./.cutune_cache: a symbolic link" cc.out || fail "no line about the link"
[ "$(cat tuningrecords/*.json | md5sum)" = "$sum" ] || fail "clean --cache touched tuningrecords/"
# a cache folder that is itself a link is kept
mkdir -p ../elsewhere && touch ../elsewhere/x && ln -s "$PWD/../elsewhere" "$XDG_CACHE_HOME/cutune"
"$BIN" clean --cache > cc2.out || fail "clean --cache with a link"
[ -f ../elsewhere/x ] || fail "the link's target was emptied"
grep -q "^kept $XDG_CACHE_HOME/cutune: a symbolic link" cc2.out || { cat cc2.out; fail "no line about the linked cache"; }
# nothing left: said so
rm "$XDG_CACHE_HOME/cutune" .cutune_cache
"$BIN" clean --cache | grep -q "no cache of cutune to remove" || fail "no 'nothing' line"
echo "1 passed, 0 failed"
