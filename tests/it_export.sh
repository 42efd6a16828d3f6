#!/usr/bin/env bash
# cutune export / clean end to end: tune tiny shapes on the emulator -> sample -> export -> check the layout and
# kernel_metadata.csv against the schedules -> seed 001's run scripts and root files (every case/kernel/cap, executable,
# bash -n, calling this binary) -> compile the driver and every kernel with nvcc (compile only: no GPU here) -> clean;
# the tuning data must stay byte-identical throughout. Then the refusals (exit 2, one sentence), among them a root
# CMakeLists.txt / run_all.sh that cutune did not write, left byte-identical.
set -euo pipefail
BIN=$1; DIR=$2
rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
fail() { echo "FAIL: $*"; exit 1; }
sums() { find tuningrecords tuningresults -type f -print0 | sort -z | xargs -0 md5sum; }
refuse() { # refuse NEEDLE CMD...: expects exit 2, one line on stderr, and NEEDLE in it
  local needle=$1; shift
  set +e; "$@" >out.txt 2>err.txt; rc=$?; set -e
  [ "$rc" -eq 2 ] || { cat out.txt err.txt; fail "'$*' exited $rc, want 2"; }
  [ "$(wc -l < err.txt)" -eq 1 ] || { cat err.txt; fail "'$*' did not print one line"; }
  grep -q -- "$needle" err.txt || { cat err.txt; fail "'$*': message lacks '$needle'"; }
}

"$BIN" tune --backend emu --workloads tiny --trials 12 --batch 4 --quiet --outdir . >/dev/null
"$BIN" sample >/dev/null
before=$(sums)

"$BIN" export | tee export.out
grep -q "^exported 36 kernel(s) of 3 case(s)" export.out || fail "export summary"
[ -f kernels/.cutune-generated ] || fail "no marker in kernels/"
for f in kernels/driver.cu kernels/CMakeLists.txt kernels/kernel_metadata.csv; do [ -f "$f" ] || fail "missing $f"; done

# Layout, CSV and launch configuration, checked against the tuningresults lines and an independent derivation of
# each template's grid/block from its knobs (src/ops/conv2d/{direct,igemm,winograd}_space.c geometry).
python3 - <<'PY' || fail "layout / kernel_metadata.csv"
import csv, glob, json, math, os, re
HEADER = ("case,kernel_id,n,h,w,co,ci,kh,kw,stride,pad,template,knobs,grid_x,grid_y,grid_z,block_x,block_y,"
          "block_z,smem_dynamic,tuned_ms,tuned_gflops")
lines = open("kernels/kernel_metadata.csv").read().splitlines()
assert lines[0] == HEADER, lines[0]
rows = list(csv.DictReader(lines))
cd = lambda a, b: -(-a // b)

def launch(tpl, k, shape):
    n, h, w, co, ci, kh, kw, s, p = shape
    oh, ow = (h + 2 * p - kh) // s + 1, (w + 2 * p - kw) // s + 1
    if tpl == "direct":
        grid = (cd(ow, k["tow"] * k["row"]) * cd(oh, k["toh"] * k["roh"]), cd(co, k["tco"] * k["rco"]), n)
        return grid, (k["tco"] * k["toh"] * k["tow"], 1, 1)
    if tpl == "igemm":
        grid = (cd(n * oh * ow, k["bn"]), cd(co, k["bm"]), k["splitk"])
        return grid, ((k["bm"] // k["tm"]) * (k["bn"] // k["tn"]), 1, 1)
    if tpl == "winograd":
        m = k["m"]; a2 = (m + 2) ** 2
        tiles = n * cd(oh, m) * cd(ow, m)
        threads = max(a2 // k["rxi"], 1) * max(k["bco"] // k["rco"], 1) * max(k["bt"] // k["rt"], 1)
        return (cd(tiles, k["bt"]), cd(co, k["bco"]), 1), (threads, 1, 1)
    raise AssertionError(tpl)

seen = 0
for f in sorted(glob.glob("tuningresults/*.json")):
    case = int(re.match(r"case(\d+)_", os.path.basename(f)).group(1))
    for kid, line in enumerate(open(f).read().splitlines(), 1):
        r = json.loads(line)
        row = [x for x in rows if int(x["case"]) == case and int(x["kernel_id"]) == kid]
        assert len(row) == 1, (case, kid)
        row = row[0]
        seen += 1
        sched = dict(r["sched"]); tpl = sched.pop("tpl")
        assert row["template"] == tpl
        assert row["knobs"] == ";".join("%s=%d" % kv for kv in sched.items()), (row["knobs"], sched)
        shape = r["workload"]["shape"]
        assert [int(row[c]) for c in "n h w co ci kh kw stride pad".split()] == shape
        grid, block = launch(tpl, sched, shape)
        assert tuple(int(row[c]) for c in ("grid_x", "grid_y", "grid_z")) == grid, (row, grid)
        assert tuple(int(row[c]) for c in ("block_x", "block_y", "block_z")) == block, (row, block)
        assert math.isclose(float(row["tuned_ms"]), r["median_ms"], rel_tol=1e-8)
        assert math.isclose(float(row["tuned_gflops"]), r["gflops"], rel_tol=1e-8)
        base = "kernels/case%d/kernel%d" % (case, kid)
        cuh, cu = open(base + ".cuh").read(), open(base + ".cu").read()
        entry = "cut_conv2d_case%d_k%d" % (case, kid)
        assert re.search(r"\b%s\(" % entry, cuh) and not re.search(r"\bcut_conv2d\b", cuh), base
        assert "int launch_case%d_k%d(const float *in, const float *w, float *out, cudaStream_t s)" % (case, kid) in cu
        assert "grid(%du, %du, %du), block(%du, %du, %du)" % (grid + block) in cu, base
        assert "smem = %su;" % row["smem_dynamic"] in cu, base
        ns = "cut_case%d_k%d" % (case, kid)
        if tpl == "igemm" and sched["splitk"] > 1:  # the workspace is the launcher's (one per stream)
            assert "%s::%s<<<grid, block, smem, s>>>(in, w, out, ws, " % (ns, entry) in cu, base
            assert "#define CUT_WS_PARAM 1" in cuh, base
        else:
            assert "%s::%s<<<grid, block, smem, s>>>(in, w, out);" % (ns, entry) in cu, base
        # a header that composes: guard, namespace, no macro left defined
        guard = "CUTUNE_CASE%d_K%d_CUH" % (case, kid)
        assert cuh.count("#ifndef %s\n#define %s\n" % (guard, guard)) == 1 and cuh.rstrip().endswith("#endif // " + guard)
        assert "namespace %s {" % ns in cuh
        defined = set(re.findall(r"^\s*#\s*define\s+([A-Za-z_]\w*)", cuh, re.M))
        tail = cuh[cuh.index("} // namespace " + ns):]
        for m in defined:
            if m == guard:
                continue
            assert "#undef %s\n" % m in tail and '#pragma pop_macro("%s")' % m in tail, (base, m)
assert seen == len(rows) == 36, (seen, len(rows))
cm = open("kernels/CMakeLists.txt").read()
assert "LANGUAGES CUDA CXX" in cm and "set(CMAKE_CUDA_ARCHITECTURES 90 " in cm
assert cm.count("/kernel") == 36 and "add_library(cutune_kernels STATIC cutune_runtime.cu\n" in cm, "36 kernels"
assert "add_executable(driver driver.cu)" in cm and "target_link_libraries(driver PRIVATE cutune_kernels)" in cm
hdr = open("kernels/cutune_kernels.h").read()
assert hdr.count("int launch_case") == 2 * 36, "each kernel's launcher and its _ws form"
PY

# Seed 001's files at the root (issue 16): a run script per case, kernel and cap, per case, and for all.
python3 - "$(readlink -f "$BIN")" <<'PY' || fail "run scripts / root files"
import csv, glob, os, re, subprocess, sys
exe = sys.argv[1]
rows = list(csv.DictReader(open("kernels/kernel_metadata.csv")))
assert open("kernel_metadata.csv").read() == open("kernels/kernel_metadata.csv").read(), "root kernel_metadata.csv"
cm = open("CMakeLists.txt").read()
assert cm.startswith("# Generated by cutune export") and "add_subdirectory(kernels)" in cm, cm
assert "set(CMAKE_CUDA_ARCHITECTURES 90 " in cm, cm

def check_script(path, up):
    st = os.stat(path)
    assert st.st_mode & 0o111 == 0o111, (path, oct(st.st_mode))
    subprocess.run(["bash", "-n", path], check=True)
    text = open(path).read()
    lines = text.splitlines()
    assert lines[0] == "#!/usr/bin/env bash" and lines[1].startswith("# Generated by cutune export"), path
    assert "set -euo pipefail" in lines, path
    assert 'cd "$(dirname "${BASH_SOURCE[0]}")%s"' % up in lines, path
    assert "CUTUNE=${CUTUNE:-'%s'}" % exe in lines, (path, exe)
    return text

want = set()
cases = sorted({int(r["case"]) for r in rows})
for r in rows:
    n, k = int(r["case"]), int(r["kernel_id"])
    for p in range(1, 6):
        path = "scripts/case%d/run_kernel%d_powercap%d.sh" % (n, k, p)
        want.add(path)
        text = check_script(path, "/../..")
        assert ('exec "$CUTUNE" energy --outdir . --case %d --kernel %d --power-cap-index %d "$@"\n' % (n, k, p)
                in text), text
got = set(glob.glob("scripts/**/*.sh", recursive=True))
assert got == want and len(got) == 36 * 5, sorted(got ^ want)[:5]
for n in cases:
    text = check_script("run_layer_case%d.sh" % n, "")
    assert "for p in 1 2 3 4 5; do" in text and \
        '"$CUTUNE" energy --outdir . --case %d --power-cap-index "$p" "$@"' % n in text, text
assert sorted(glob.glob("run_layer_*.sh")) == ["run_layer_case%d.sh" % n for n in cases]
text = check_script("run_all.sh", "")
assert [l for l in text.splitlines() if l.startswith("bash ")] == \
    ['bash ./run_layer_case%d.sh "$@"' % n for n in cases], text
assert os.path.isfile("scripts/.cutune-generated")
PY
grep -q "^run scripts: ./run_all.sh" export.out || fail "export does not name the run scripts"

# Compile the driver and every kernel with nvcc alone, into build/ (the seed's folder, which clean then removes).
NVCC=${CUTUNE_NVCC:-/usr/local/cuda/bin/nvcc}
if [ -x "$NVCC" ]; then
  cmake -S kernels -B build -DCMAKE_CUDA_COMPILER="$NVCC" >cmake.log 2>&1 || { cat cmake.log; fail "cmake configure"; }
  cmake --build build -j4 >>cmake.log 2>&1 || { tail -40 cmake.log; fail "nvcc build of the exported kernels"; }
  [ -x build/driver ] || fail "no build/driver"
  grep -q '^CMAKE_CUDA_ARCHITECTURES:STRING=90$' build/CMakeCache.txt || fail "default architecture is not 90"
  nvcc_ran=1
else
  echo "note: $NVCC not found; the nvcc compile of the exported project is skipped"
  nvcc_ran=0
fi

# Re-export replaces what the earlier export wrote in kernels/ (its manifest), and nothing else: a user's file
# there stays (issue 15); the data is untouched.
echo "my notes" > kernels/NOTES.txt && mkdir -p kernels/mine && echo x > kernels/mine/tool.py
"$BIN" export --outdir . --results tuningresults >/dev/null
[ "$(sums)" = "$before" ] || fail "export modified tuningrecords/ or tuningresults/"
[ -f kernels/NOTES.txt ] && [ -f kernels/mine/tool.py ] || fail "re-export removed a user's file in kernels/"
grep -q "^keep NOTES.txt" kernels/.cutune-generated || fail "the manifest does not keep the user's file"
grep -q "^file driver.cu" kernels/.cutune-generated || fail "the manifest does not list driver.cu"

# clean: kernels/, the exported project's build/, the run scripts and the root files go; a user's file in kernels/ or
# scripts/ stays; tuning data byte-identical.
echo keep > scripts/mine.sh
"$BIN" clean | tee clean.out
grep -q "^removed ./kernels" clean.out || fail "clean did not report kernels/"
grep -q "kept 2 not written by cutune" clean.out || fail "clean did not say what it kept in kernels/"
[ -f kernels/NOTES.txt ] && [ -f kernels/mine/tool.py ] || fail "clean removed a user's file in kernels/"
[ "$(find kernels -type f | sort | tr '\n' ' ')" = "kernels/.cutune-generated kernels/NOTES.txt kernels/mine/tool.py " ] ||
  fail "clean left cutune's files: $(find kernels -type f)"
rm -rf kernels # the user's own, now

if [ "$nvcc_ran" = 1 ]; then [ ! -e build ] || fail "the export build/ still exists"; fi
for f in CMakeLists.txt run_all.sh run_layer_case1.sh run_layer_case2.sh run_layer_case3.sh kernel_metadata.csv; do
  [ ! -e "$f" ] || fail "clean left $f"
  grep -q "^removed ./$f" clean.out || fail "clean did not report $f"
done
[ -z "$(ls run_layer_*.sh 2>/dev/null)" ] || fail "clean left run_layer scripts: $(ls run_layer_*.sh)"
grep -q "^removed ./scripts (180 entries; kept 1 not written by cutune)" clean.out || fail "clean: scripts/ line"
[ "$(find scripts -type f | sort | tr '\n' ' ')" = "scripts/.cutune-generated scripts/mine.sh " ] ||
  fail "clean left cutune's scripts: $(find scripts -type f | head)"
rm -rf scripts # the user's own, now

# A foreign root file (a source repository as --outdir): refused in one line naming it, before anything is
# written, and left byte-identical; the same with an unmarked scripts/.
printf 'cmake_minimum_required(VERSION 3.18)\nproject(mine)\n' > CMakeLists.txt
cp CMakeLists.txt cm.orig
set +e; "$BIN" export >out.txt 2>err.txt; rc=$?; set -e
[ "$rc" -eq 2 ] && [ "$(wc -l < err.txt)" -eq 1 ] || { cat err.txt; fail "foreign CMakeLists.txt: exit $rc"; }
grep -q "'./CMakeLists.txt' exists and was not written by cutune export" err.txt || fail "message: $(cat err.txt)"
cmp -s CMakeLists.txt cm.orig || fail "export changed a foreign CMakeLists.txt"
[ ! -e kernels ] && [ ! -e scripts ] && [ ! -e run_all.sh ] && [ ! -e kernel_metadata.csv ] ||
  fail "a refused export wrote something"
"$BIN" clean >clean2.out
cmp -s CMakeLists.txt cm.orig || fail "clean touched a foreign CMakeLists.txt"
grep -q "^kept ./CMakeLists.txt: not written by cutune export" clean2.out || fail "clean did not say why CMakeLists.txt stays"
rm CMakeLists.txt cm.orig
printf '#!/bin/sh\necho mine\n' > run_all.sh
refuse "run_all.sh' exists and was not written by cutune export" "$BIN" export
grep -q "echo mine" run_all.sh && [ ! -e kernels ] || fail "export touched a foreign run_all.sh"
rm run_all.sh

# The root project builds the exported one (seed 001's cmake -S . -B build); clean removes that build/ too.
"$BIN" export >/dev/null
if [ "$nvcc_ran" = 1 ]; then
  cmake -S . -B build -DCMAKE_CUDA_COMPILER="$NVCC" >cmake.log 2>&1 || { cat cmake.log; fail "cmake configure of the root"; }
  grep -q '^CMAKE_CUDA_ARCHITECTURES:STRING=90$' build/CMakeCache.txt || fail "root: default architecture is not 90"
  [ -f build/kernels/Makefile ] || [ -f build/build.ninja ] || fail "root build has no kernels project"
fi
"$BIN" clean >/dev/null
[ ! -e build ] && [ ! -e kernels ] && [ ! -e scripts ] && [ ! -e CMakeLists.txt ] || fail "clean after the root build"

# An unmarked scripts/ (this repository has one): export refuses, clean keeps it.
mkdir -p scripts && echo keep > scripts/mine.sh
refuse "scripts' exists and was not written by cutune export" "$BIN" export
[ ! -e kernels ] && [ ! -e run_all.sh ] || fail "an export refused for scripts/ wrote something"
"$BIN" clean | tee clean.out
[ -f scripts/mine.sh ] || fail "clean removed an unmarked scripts/"
grep -q "^kept ./scripts: not generated by cutune" clean.out || fail "clean did not say why scripts/ stays"
rm -rf scripts
[ "$(sums)" = "$before" ] || fail "clean modified tuningrecords/ or tuningresults/"
"$BIN" clean | grep -q "^nothing to remove in ." || fail "second clean"
"$BIN" clean --help | grep -q "never removed" || fail "clean --help"
"$BIN" export --help | grep -q "usage: cutune export" || fail "export --help"

# Refusals: exit 2 with one sentence, nothing written.
mkdir -p empty
refuse "no tuning results folder" "$BIN" export --outdir empty
[ ! -e empty/kernels ] || fail "a refused export wrote kernels/"
mkdir -p empty/tuningresults
refuse "no measured kernels" "$BIN" export --outdir empty
mkdir -p bad/tuningresults
f=$(ls tuningresults/case1_*.json)
{ head -1 "$f"; echo '{"v":1,"trial":'; } > "bad/$f"
refuse ".json:2" "$BIN" export --outdir bad
[ ! -e bad/kernels ] || fail "a refused export wrote kernels/"
# an invalid schedule (a direct block of 64 x 64 x 64 threads)
python3 - "$f" "bad/$f" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
r["sched"] = {"tpl": "direct", "tco": 64, "toh": 64, "tow": 64, "rco": 1, "roh": 1, "row": 1, "rc": 1, "rkh": 1,
              "smem": 0, "unroll": 0, "vec": 1}
open(sys.argv[2], "w").write(json.dumps(r) + "\n")
PY
refuse "is invalid for" "$BIN" export --outdir bad
# a kernels/ folder that export did not write
mkdir -p mine/kernels && echo '{}' > mine/kernels/spec.json && cp -r tuningresults mine/
refuse "not written by cutune export" "$BIN" export --outdir mine
[ -f mine/kernels/spec.json ] || fail "export touched a foreign kernels/"
refuse "is not a CUDA architecture" "$BIN" export --outdir . --arch 9x9
refuse "unknown option" "$BIN" export --bogus
refuse "is not a folder" "$BIN" clean --outdir does-not-exist
[ "$(sums)" = "$before" ] || fail "tuning data changed"
echo "1 passed, 0 failed"
