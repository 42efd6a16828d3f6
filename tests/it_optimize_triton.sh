#!/usr/bin/env bash
# cutune optimize on Triton specs under Triton's interpreter (the CPU; no GPU, no torch), end to end:
# 1. the suite (kernels/triton/, small sizes): a baseline and measured variants per kernel, kernel.py in every
#    variant folder, a best link, a summary naming the language, and a resume that continues the search;
# 2. planted variants: one spec whose MODE tunable makes the kernel hang, fault, compute a wrong result, write its
#    input or keep state between launches. The rules propose every MODE from the baseline (beside their Triton
#    rewrites); each is caught with its own status, a hang and a fault cost only their variant (a fresh worker runs
#    the next one), the best is a correct kernel (MODE 0), and the run ends normally.
# 3. the seed's worker (optimize --worker) on a Triton variant, and a Triton spec whose worker cannot start.
set -euo pipefail
BIN=$1; DIR=$2
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=${CUTUNE_PYTHON:-python3}
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
"$PY" -c 'import triton, numpy' 2>/dev/null || { echo "skip: $PY cannot import triton and numpy (scripts/setup-deps.sh makes .venv-triton)"; exit 77; }
export CUTUNE_PYTHON=$PY CUTUNE_TRITON_WORKER=$SRC/tools/triton_worker.py COMPILE_CACHE_DIR=$DIR/cache

# ---- 1. the suite ----
"$BIN" optimize --input "$SRC/kernels/triton" --outdir suite --backend emu --budget-builds 3 --no-llm \
  --sizes ROWS=6,COLS=100,N=300,M=40,K=24 > suite.log 2>&1 || { cat suite.log; fail "the suite run exited $?"; }
tail -3 suite.log
python3 - "$SRC/kernels/triton" <<'PY' || fail "suite results"
import glob, json, os, sys
specs = sorted(glob.glob(sys.argv[1] + "/*.json"))
s = json.load(open("suite/summary.json"))
names = {k["name"]: k for k in s["kernels"]}
assert len(names) == len(specs) >= 5, names.keys()
for k in names.values():
    assert k["language"] == "triton" and k["backend"] == "triton-interp", k
    assert k["baseline_ms"] > 0 and k["best_ms"] > 0 and k["builds"] == 3, k
for name in names:
    kd = "suite/kernels/_" + name
    assert os.path.exists(kd + "/baseline/kernel.py") and not os.path.exists(kd + "/baseline/kernel.cu")
    base = json.load(open(kd + "/baseline/result.json"))
    assert base["status"] == "ok" and base["references"] == "baseline", base
    assert len(glob.glob(kd + "/baseline/ref_*_[01].bin")) >= 2
    assert os.path.exists(os.path.join(kd, os.readlink(kd + "/best"), "kernel.py"))
    vs = sorted(glob.glob(kd + "/variants/v*"))
    built = [v for v in vs if json.load(open(v + "/result.json")).get("compiled")]
    assert built, name
    for v in built:
        r = json.load(open(v + "/result.json"))
        src = open(v + "/kernel.py").read()
        # the state header is Python: the tunables the control file names, as assignments
        c = json.load(open(v + "/control.json"))
        for t, val in c["tunables"].items():
            assert "%s = %d" % (t, val) in src, (v, t, val)
        assert "compiles the variant in the worker" in open(v + "/stdout.log").read() or r["status"] != "ok", v
        # rules only on these naive kernels: every built variant is correct or honestly fails
        assert r["status"] in ("ok", "wrong_result", "wrong_later", "launch_error", "compile_error"), (v, r)
ok = sum(json.load(open(v + "/result.json"))["status"] == "ok"
         for v in glob.glob("suite/kernels/_*/variants/v*"))
print("suite: %d kernels, %d variants ok, geomean %.2fx" % (len(names), ok, s["geomean_speedup"]))
assert ok >= len(names), ok
PY
"$BIN" optimize --input "$SRC/kernels/triton/softmax_row.json" --outdir suite --backend emu --budget-builds 5 \
  --no-llm --sizes ROWS=6,COLS=100 --resume > resume.log 2>&1 || { cat resume.log; fail "the resume exited $?"; }
grep -q "resumed: 3 builds done" resume.log || { cat resume.log; fail "the resume did not continue the search"; }
python3 -c "import json; k=json.load(open('suite/summary.json'))['kernels']; assert k[0]['builds']==5, k" ||
  fail "the resumed search did not build to its new budget"

# ---- 2. planted variants ----
cat > plant.py <<'PYK'
# A row softmax whose MODE plants one defect per value (0: correct).
import triton
import triton.language as tl

_KEPT = {}


def _row(pid):
    """The program id as a Python int (called inline: the interpreter makes every assigned value a tensor)."""
    return pid.handle.data.item()


@triton.jit
def plant(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr, MODE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    if MODE == 1:  # hangs
        i = 0
        while i < n_cols:
            i = i * 1
    if MODE == 2:  # reads far past its input: a fault
        x = tl.load(x_ptr + (1 << 42) + offs, mask=mask, other=0.0)
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    y = num / tl.sum(num, axis=0)
    if MODE == 3:  # wrong
        y = y * 1.01
    if MODE == 5:  # the first launch's rows kept in module state and replayed (stale on new inputs)
        if _row(row) not in _KEPT:
            _KEPT[_row(row)] = y
        y = _KEPT[_row(row)]
    tl.store(y_ptr + row * n_cols + offs, y, mask=mask)
    if MODE == 4:  # writes its input
        tl.store(x_ptr + row * n_cols + offs, y, mask=mask)
PYK
cat > plant.json <<'JS'
{"name": "plant", "language": "triton", "source_path": "plant.py", "entry": "plant",
 "sizes": {"ROWS": 4, "COLS": 50}, "tunables": {"MODE": [0, 1, 2, 3, 4, 5], "BLOCK": [64]},
 "launch": {"grid": ["ROWS"]},
 "inputs": [{"name": "x", "dtype": "f32", "shape": ["ROWS", "COLS"], "init": "randn", "seed": 1}],
 "outputs": [{"name": "y", "dtype": "f32", "shape": ["ROWS", "COLS"]}],
 "scalars": [{"name": "cols", "dtype": "i32", "value": "COLS"}], "args": ["x", "y", "cols"],
 "tolerance": {"atol": 1e-6, "rtol": 1e-4}}
JS
start=$(date +%s)
"$BIN" optimize --input plant.json --outdir plants --backend emu --budget-builds 14 --timeout 3 --no-llm \
  > plant.log 2>&1 || { cat plant.log; fail "optimize exited $?"; }
wall=$(( $(date +%s) - start ))
cat plant.log
python3 - plants/kernels/_plant <<'PY' || fail "planted variants"
import json, os, sys
kd = sys.argv[1]
res, others = {}, []
for v in sorted(os.listdir(kd + "/variants")):
    c = json.load(open("%s/variants/%s/control.json" % (kd, v)))
    r = json.load(open("%s/variants/%s/result.json" % (kd, v)))
    if r["status"] == "transposition":
        continue
    if c["tunables"]["MODE"]:
        res.setdefault(c["tunables"]["MODE"], []).append(r)
    else:  # the Triton rules' rewrites of the correct kernel
        others.append(r)
assert set(res) == {1, 2, 3, 4, 5}, sorted(res)
want = {1: ("timeout", "timeout after"), 2: ("fault", "out-of-bounds"), 3: ("wrong_result", "outputs wrong"),
        4: ("input_modified", "wrote its input 'x'"), 5: (("wrong_other_data", "wrong_later"), "")}
for mode, (status, words) in want.items():
    for r in res[mode]:
        st = status if isinstance(status, tuple) else (status,)
        assert r["status"] in st and words in r["error"], (mode, r)
        assert r["compiled"] and "median_ms" not in r, (mode, r)
# after a hang and a fault the search went on with a fresh worker: the rewrites measured fine
assert others and all(r["status"] == "ok" for r in others), others
res = {m: rs[0] for m, rs in res.items()}
best = os.readlink(kd + "/best")
assert best == "baseline" or json.load(open("%s/%s/control.json" % (kd, best)))["tunables"]["MODE"] == 0, best
trace = open(kd + "/trace.md").read()
for w in ("timeout", "fault", "wrong_result", "input_modified"):
    assert w in trace, w
print("planted: every defect caught:", {m: r["status"] for m, r in sorted(res.items())})
PY
[ "$wall" -lt 150 ] || fail "took ${wall} s: the hang was not cut at --timeout"

# ---- 3. the seed's worker on a Triton variant; a worker that cannot start ----
v=$(ls -d suite/kernels/_triton_gelu/variants/v* | head -1)
"$BIN" optimize --worker "$v/control.json" --backend emu > worker.log 2>&1 || { cat worker.log; fail "--worker"; }
python3 -c "import json,sys; r=json.load(open('$v/runner_result.json')); assert r['status']=='ok' and r['median_ms']>0, r" ||
  fail "runner_result.json"
set +e
CUTUNE_PYTHON=$DIR/no-such-python "$BIN" optimize --input plant.json --outdir nopy --backend emu --budget-builds 1 \
  --no-llm > nopy.log 2>&1
rc=$?
set -e
[ $rc -ne 0 ] || fail "a Triton spec without a Python that runs the worker succeeded"
grep -q "plant: the Triton worker" nopy.log || { cat nopy.log; fail "no sentence naming the Triton worker"; }
echo "1 passed, 0 failed"
