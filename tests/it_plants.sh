#!/usr/bin/env bash
# The planted kernels (issue 15, tests/plants/): one kernel spec per cheat, each checked against an honest reference
# kernel by `tune --kernel` (one trial: the spec's one configuration), and the status its record gets compared with
# tests/plants/EXPECT. Every plant must be rejected with the status that names its cheat, and the honest control
# must pass (no false rejection). Runs the plants marked "emu" and "emu-only" on the host emulator; with
# BACKEND=cuda (the GPU: bench/plants_gpu.sh) those marked "emu" and "gpu". usage: it_plants.sh CUTUNE WORKDIR [BACKEND]
set -euo pipefail
BIN=$1; DIR=$2; BACKEND=${3:-emu}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fails=0; n=0
while read -r name want where; do
    case "$name" in ''|'#'*) continue ;; esac
    [ "$BACKEND" = emu ] && [ "$where" = gpu ] && { echo "$name: skipped (needs a GPU)"; continue; }
    [ "$BACKEND" != emu ] && [ "$where" = emu-only ] && { echo "$name: skipped (the emulator's check)"; continue; }
    n=$((n + 1))
    "$BIN" tune --kernel "$HERE/plants/$name.json" --backend "$BACKEND" --trials 1 --quiet --outdir "$name" \
        > "$name.out" 2> "$name.err" || { cat "$name.out" "$name.err"; echo "FAIL: $name: tune exited $?"; fails=$((fails + 1)); continue; }
    got=$(python3 - "$name/tuningrecords/kernel_plant_$name.json" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 1, len(recs)
r = recs[0]
print(r["status"], "|", r.get("error", ""))
PY
    )
    status=${got%% |*}
    if [ "$status" = "$want" ]; then
        echo "$name: $status (as it must)${got#*|}"
    else
        echo "FAIL: $name: got '$got', want $want"; fails=$((fails + 1))
    fi
done < "$HERE/plants/EXPECT"
echo "plants: $n checked on $BACKEND, $fails wrong"
[ "$fails" = 0 ]
