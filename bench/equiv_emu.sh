#!/usr/bin/env bash
# Two cutune binaries make the same rules-only search: both run `optimize` on the host emulator over reduce_sum,
# softmax_row and transpose (small sizes, 12 builds, seed 4) with one table of replayed times (CUTUNE_REPLAY_TIMES:
# the first run's times are the second's), and their events (every variant's parent, move, label, status and time,
# every transposition) must be identical. For a change to the optimizer that must not change what the rules do.
# usage: bench/equiv_emu.sh OLD_CUTUNE NEW_CUTUNE OUTDIR   Exit 0 when identical.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
OLD=$(realpath "$1"); NEW=$(realpath "$2"); OUT=$3
rm -rf "$OUT"; mkdir -p "$OUT/specs"; OUT=$(cd "$OUT" && pwd)
cp "$SRC"/kernels/reduce_sum* "$SRC"/kernels/softmax_row.* "$SRC"/kernels/transpose.* "$OUT/specs/"
export COMPILE_CACHE_DIR=$OUT/cache
mkdir -m 700 "$COMPILE_CACHE_DIR"
for who in old new; do
  bin=$OLD; [ $who = new ] && bin=$NEW
  (cd "$OUT" && CUTUNE_REPLAY_TIMES=$OUT/times.txt "$bin" optimize --input specs --outdir out_$who --backend emu \
     --no-llm --budget-builds 12 --seed 4 --sizes N=8192,ROWS=64,COLS=256 > $who.log 2>&1)
done
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
same = True
for k in sorted(os.listdir(f"{out}/out_old/kernels")):
    seq = {}
    for who in ("old", "new"):
        ev = [json.loads(l) for l in open(f"{out}/out_{who}/kernels/{k}/events.jsonl")]
        seq[who] = [(e["event"], e.get("id"), e.get("parent"), e.get("move"), e.get("label"), e.get("status"),
                     e.get("ms")) for e in ev if e["event"] in ("variant", "transposition")]
    best = [json.load(open(f"{out}/out_{w}/kernels/{k}/search_state.json"))["best"] for w in ("old", "new")]
    eq = seq["old"] == seq["new"] and best[0] == best[1]
    same &= eq
    print(f"{k}: {len(seq['old'])} events each, {'identical' if eq else 'DIFFERENT'}, best {best[0]} / {best[1]}")
print("identical" if same else "different")
sys.exit(0 if same else 1)
PY
