#!/usr/bin/env bash
# The layout check (scripts/check-layout.py, issue 14): the repository passes it, and it fails, naming the problem, on
# a tree with an include cycle between src/ folders, an oversized .c file, a public header no folder owns, and a
# public header missing from the umbrella header.
set -euo pipefail
BIN=$1; DIR=$2
CHECK=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/check-layout.py
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
python3 "$CHECK" || fail "the repository fails its own layout check"

tree() { rm -rf t; mkdir -p t/src/core t/src/gpu t/include/cutune t/scripts
  printf '#include "cutune/util.h"\n#include "cutune/common.h"\n' > t/include/cutune/cutune.h
  printf '#include "cutune/common.h"\n' > t/include/cutune/util.h; : > t/include/cutune/common.h
  printf '#include "cutune/util.h"\nint a;\n' > t/src/core/a.c; printf '#include "cutune/util.h"\n' > t/src/gpu/g.c; }
tree; python3 "$CHECK" --root t || fail "a clean tree is refused"
tree; printf '#include "gpu/g.h"\n' > t/src/core/b.c; printf '#include "cutune/util.h"\n' > t/src/gpu/g.h
rc=0; python3 "$CHECK" --root t 2> err || rc=$?
[ $rc -eq 1 ] && grep -q "include cycle between src/ folders: core <-> gpu" err || { cat err; fail "cycle not found"; }
grep -q "core -> gpu: src/core/b.c" err || fail "the cycle's include lines not named"
tree; python3 -c 'print("int x;\n" * 1001, end="")' > t/src/core/big.c
rc=0; python3 "$CHECK" --root t 2> err || rc=$?
[ $rc -eq 1 ] && grep -q "src/core/big.c has 1001 lines (limit 1000)" err || { cat err; fail "oversized file"; }
tree; printf '#include "cutune/mystery.h"\n' >> t/include/cutune/cutune.h; : > t/include/cutune/mystery.h
rc=0; python3 "$CHECK" --root t 2> err || rc=$?
[ $rc -eq 1 ] && grep -q "cutune/mystery.h has no owning folder" err || { cat err; fail "unowned header"; }
tree; : > t/include/cutune/log.h
rc=0; python3 "$CHECK" --root t 2> err || rc=$?
[ $rc -eq 1 ] && grep -q "cutune.h does not include the public header cutune/log.h" err || { cat err; fail "umbrella"; }
echo OK
