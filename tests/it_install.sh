#!/usr/bin/env bash
# cutune as an installed library: `cmake --install` of this build into a temporary prefix, then a tiny C program
# compiled and linked with nothing but `pkg-config --cflags --libs cutune` (PKG_CONFIG_PATH to the prefix) runs:
# pure functions of the library, the log callback, and cut_worker_path finding the installed cutune-worker (through
# $CUTUNE_WORKER, and relative to the installed libcutune.so). The installed files are checked too.
set -euo pipefail
BUILD=$(cd "$(dirname "$1")" && pwd)
BIN=$BUILD/$(basename "$1"); DIR=$2
SRC_INCLUDE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../include/cutune" && pwd)
CMAKE=${CUTUNE_CMAKE:-cmake}
CC=${CUTUNE_CC:-cc}
rm -rf "$DIR"; mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd); cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
command -v pkg-config >/dev/null || { echo "skip: no pkg-config"; exit 77; }

PREFIX=$DIR/prefix
"$CMAKE" --install "$BUILD" --prefix "$PREFIX" >install.log 2>&1 || { cat install.log; fail "cmake --install"; }
pcdir=$(dirname "$(find "$PREFIX" -path '*/pkgconfig/cutune.pc' -print -quit)")
[ -f "$pcdir/cutune.pc" ] || fail "no cutune.pc under $PREFIX"
libdir=$(dirname "$pcdir")
worker=$PREFIX/libexec/cutune/cutune-worker
for f in "$PREFIX/bin/cutune" "$worker"; do [ -x "$f" ] || fail "missing executable $f"; done
[ -f "$libdir/libcutune.a" ] || fail "missing $libdir/libcutune.a"
[ -e "$libdir/libcutune.so" ] || fail "missing $libdir/libcutune.so"
so=$(readlink -f "$libdir/libcutune.so")
soname=$(objdump -p "$so" | awk '$1 == "SONAME" {print $2}')
case "$soname" in libcutune.so.[0-9]*) ;; *) fail "SONAME of $so is '$soname'" ;; esac
[ -e "$libdir/$soname" ] || fail "no $libdir/$soname link"
for h in "$SRC_INCLUDE"/*.h; do
  cmp -s "$h" "$PREFIX/include/cutune/$(basename "$h")" || fail "header include/cutune/$(basename "$h") not installed"
done
echo "ok: installed bin/cutune, libexec/cutune/cutune-worker, libcutune.a, libcutune.so ($soname), headers, cutune.pc"

export PKG_CONFIG_PATH=$pcdir
flags=$(pkg-config --cflags --libs cutune) || fail "pkg-config --cflags --libs cutune"
echo "ok: pkg-config: $flags"
[ "$(pkg-config --modversion cutune)" = "$("$BIN" --version | awk '{print $2}')" ] || fail "pkg-config version"
[ "$(pkg-config --variable=worker cutune)" -ef "$worker" ] || fail "pkg-config --variable=worker"

cat >app.c <<'C'
#include <cutune/cutune.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void capture(cut_log_level level, const char *msg, void *ctx)
{
    snprintf((char *)ctx, 256, "%s:%s", cut_log_level_name(level), msg);
}

int main(int argc, char **argv)
{
    cut_err e = {{0}};
    cut_dtype d;
    if (cut_dtype_parse("bf16", &d, &e) != 0 || d != CUT_DT_BF16 || cut_dtype_parse("fp64", &d, &e) == 0)
        return printf("cut_dtype_parse\n"), 1;
    const char *words[] = {"M=64", "N=32", "K=16", "t=5"};
    cut_gemm g = {.layout = CUT_GEMM_NT, .dtype = CUT_DT_FP16}; /* designated: the struct grows (issue 21) */
    int trials = 0;
    if (cut_gemm_parse_args(4, words, &g, &trials, NULL, &e) != 0 || g.m != 64 || g.n != 32 || g.k != 16 ||
        trials != 5)
        return printf("cut_gemm_parse_args: %s\n", e.msg), 1;
    char name[128];
    cut_gemm_name(&g, name, sizeof name);
    char got[256] = "";
    cut_log_handler prev = cut_log_set_handler(capture, got);
    cut_log(CUT_LOG_WARN, "hello %d\n", 42);
    cut_log_set_handler(prev.fn, prev.ctx);
    if (strcmp(got, "warn:hello 42\n") != 0)
        return printf("log callback got '%s'\n", got), 1;
    char worker[4096];
    if (cut_worker_path(worker, sizeof worker, &e) != 0)
        return printf("cut_worker_path: %s\n", e.msg), 1;
    printf("%s\n%s\n", name, worker);
    (void)argc, (void)argv;
    return 0;
}
C
# shellcheck disable=SC2086 # the flags are words
"$CC" -std=c11 -Wall -Wextra -Werror ${CUTUNE_TEST_SAN_FLAGS:-} -o app app.c $flags || fail "compile and link app.c"
# the shared library is found through the prefix (as a user's LD_LIBRARY_PATH or ldconfig would)
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
deps=$(ldd ./app)
grep -qF "$libdir/libcutune.so" <<<"$deps" || { echo "$deps"; fail "app is not linked to the installed libcutune.so"; }

# the worker: relative to the installed library (no environment) ...
out=$(env -u CUTUNE_WORKER ./app) || { echo "$out"; fail "app (no CUTUNE_WORKER)"; }
[ "$(sed -n 1p <<<"$out")" = "gemm_nt_fp16_M_64_N_32_K_16" ] || fail "gemm name: $out"
[ "$(sed -n 2p <<<"$out")" -ef "$worker" ] || fail "worker found without CUTUNE_WORKER: $(sed -n 2p <<<"$out")"
echo "ok: app ran; worker found next to the installed library: $(sed -n 2p <<<"$out")"
# ... $CUTUNE_WORKER wins ...
cp "$worker" "$DIR/my-worker"
out=$(CUTUNE_WORKER=$DIR/my-worker ./app) || fail "app (CUTUNE_WORKER set)"
[ "$(sed -n 2p <<<"$out")" = "$DIR/my-worker" ] || fail "CUTUNE_WORKER not taken: $out"
# ... and one that does not exist is an error naming it
if out=$(CUTUNE_WORKER=$DIR/nothing ./app); then fail "a missing CUTUNE_WORKER was accepted: $out"; fi
grep -q "CUTUNE_WORKER=$DIR/nothing" <<<"$out" || fail "the error does not name CUTUNE_WORKER: $out"
echo "ok: CUTUNE_WORKER wins; a missing one is an error: $out"

# the installed worker is the worker: a usage error as `cutune __worker` gives
rc=0; "$worker" __worker >/dev/null 2>err.txt || rc=$?
[ $rc -eq 2 ] && grep -q "usage: cutune __worker" err.txt || { cat err.txt; fail "cutune-worker usage (exit $rc)"; }
echo "ok: cutune-worker answers as cutune __worker"
echo "PASS"
