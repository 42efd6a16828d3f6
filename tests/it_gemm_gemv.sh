#!/usr/bin/env bash
# Skinny GEMMs (issue 21) end to end on the host-emulation backend: cutune tune --gemm of an fp16 M=1 GEMM searches
# every template the emulator runs (simt, mma, gemv; wgmma needs a GPU) and every trial passes the check; --tpl gemv
# alone on NT and a batched TT bf16 with alpha/beta; the best kernels export (kernels/gemm/ with gemv rows in
# gemm_metadata.csv); gemv past M = 16 refused. (wgmma under emulation: it_gemm_pipeline.sh.)
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }

# every template that applies and that the emulator runs; the first round is random, so gemv is in it (the GEMM's
# words as one argument, as in the issue)
"$BIN" tune --gemm "M=1 N=512 K=512 t=24" --dtype fp16 --backend emu --seed 3 --quiet --outdir . | tee all.out
grep -qE "^gemm_nn_fp16_M_1_N_512_K_512: 24 trials \(24 new, 0 failed\)" all.out || fail "fp16 M=1: final line"
"$BIN" tune --gemm M=1 N=512 K=512 t=12 layout=nt --dtype fp16 --tpl gemv --backend emu --seed 4 --quiet --outdir . |
  tee nt.out
grep -qE "^gemm_nt_fp16_M_1_N_512_K_512: 12 trials \(12 new, 0 failed\) in .* s; best gemv vec=" nt.out ||
  fail "gemv NT: final line"
"$BIN" tune --gemm "M=3 N=200 K=333 batch=3 alpha=0.5 beta=0.25 t=8" --layout tt --dtype bf16 --tpl gemv \
  --backend emu --seed 5 --quiet --outdir . | tee tt.out
grep -qE "^gemm_tt_bf16_M_3_N_200_K_333_batch_3_alpha_0.5_beta_0.25: 8 trials \(8 new, 0 failed\)" tt.out ||
  fail "gemv TT batched: final line"
python3 - <<'PY' || fail "record contents"
import json, collections
def recs(name):
    return [json.loads(l) for l in open(f"tuningrecords/{name}.json")]
allr = recs("gemm_nn_fp16_M_1_N_512_K_512")
tpls = collections.Counter(r["sched"]["tpl"] for r in allr)
assert tpls["gemv"] >= 1 and "wgmma" not in tpls, tpls
for r in allr:
    assert r["status"] == "ok" and r["rel_err"] <= 1e-2 and r["backend"] == "emu", (r["sched"], r.get("error"))
knobs = ["vec", "lanes", "cols", "warps", "kwarps", "unroll", "splitk", "pipe", "stream"]
for name, want in (("gemm_nt_fp16_M_1_N_512_K_512", 12),
                   ("gemm_tt_bf16_M_3_N_200_K_333_batch_3_alpha_0.5_beta_0.25", 8)):
    rs = recs(name)
    assert len(rs) == want, (name, len(rs))
    for r in rs:
        s = r["sched"]
        assert s["tpl"] == "gemv" and all(k in s for k in knobs), s
        assert r["status"] == "ok" and r["rel_err"] <= 1e-2, (s, r.get("error"))
    assert len({json.dumps(r["sched"], sort_keys=True) for r in rs}) == want, "a schedule twice"
PY

# the tuned kernels export: gemv rows in the metadata, its kernel as a header
"$BIN" export --outdir . > export.out || { cat export.out; fail "export"; }
grep -q "GEMM kernel(s) of 3 GEMM(s) to ./kernels/gemm" export.out || { cat export.out; fail "export line"; }
grep -q ",gemv,\"vec=" kernels/gemm/gemm_metadata.csv || fail "no gemv row in gemm_metadata.csv"
grep -l "// schedule: gemv vec=" kernels/gemm/gemm_nt_fp16_M_1_N_512_K_512/kernel*.cuh >/dev/null ||
  fail "no exported gemv kernel"

# the report: gemv is a template kernel; the batched row says its batch, alpha and beta
"$BIN" report --gemm --no-plots --outdir . > report.out 2>&1 || { cat report.out; fail "report --gemm"; }
grep -q "| 3 | 200 | 333 | tt, batch 3, alpha 0.5, beta 0.25 |" report/gemm.md || fail "gemm.md batched row"
python3 - <<'PY' || fail "report/gemm.json"
import json
rows = {(r["m"], r["layout"], r["dtype"]): r for r in json.load(open("report/gemm.json"))["rows"]}
tt = rows[(3, "tt", "bf16")]
assert (tt["batch"], tt["alpha"], tt["beta"]) == (3, 0.5, 0.25), tt
assert tt["template_knobs"].startswith("gemv ") and tt["generic_tflops"] is None, tt
nt = rows[(1, "nt", "fp16")]
assert nt["batch"] == 1 and nt["template_knobs"].startswith("gemv "), nt
PY

# refusals, exit 2 with a sentence and no log
expect2() { # label, wanted message (ERE), args...
  local label=$1 want=$2; shift 2
  set +e
  "$BIN" "$@" > out.txt 2> err.txt; local rc=$?
  set -e
  [ $rc -eq 2 ] || fail "$label: exit $rc, want 2"
  grep -qE "$want" err.txt || fail "$label: message: $(cat err.txt)"
}
expect2 "gemv past M=16" "gemv: the gemv template computes M <= 16 only \(M=17" \
  tune --gemm M=17 N=64 K=64 t=4 --dtype fp16 --tpl gemv --backend emu --outdir .
[ ! -e tuningrecords/gemm_nn_fp16_M_17_N_64_K_64.json ] || fail "M=17 left a log"
echo "ok: skinny GEMMs (gemv) under emulation"
