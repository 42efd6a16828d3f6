#!/usr/bin/env bash
# Nothing lost on a kill (issue 15): SIGKILL `cutune tune` (Conv2D and GEMM, host emulator) at random moments, KILLS
# times each, resuming after every kill, then let it finish. Per kill: trials measured before it (the loop's
# $CUTUNE_MEASURE_TRACE lines) that are not in the record log (lost), corrupt lines, and the seconds the resumed run
# took to its first new record (resume). Then the log must hold exactly the budget's trials, numbered 0..T-1 once.
# Then `optimize` (softmax_row, 60 builds, emulator): KILLS kills, each followed by --resume; it must end with its
# whole budget spent, at the best of an uninterrupted run through the same variants (both over one table of times).
# Writes OUT.json and prints a table. Runs on the CPU (no GPU needed).
# usage: bench/kill_resume.sh CUTUNE OUT.json [KILLS (20)] [SEED (1)]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); OUTJ=$2; KILLS=${3:-20}; SEED=${4:-1}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 - "$BIN" "$WORK" "$KILLS" "$SEED" "$OUTJ" <<'PY'
import json, os, random, signal, subprocess, sys, time
binp, work, kills, seed, outj = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = random.Random(seed)
jobs = {
    "conv": (["tune", "--backend", "emu", "--workloads", "tiny", "--case", "1", "--trials", "160", "--quiet",
              "--no-sample"], "tuningrecords/case1_conv2d_N_1_H_8_W_8_CO_8_CI_4_KH_3_KW_3_strides_1_padding_1.json", 160),
    "gemm": (["tune", "--gemm", "M=64", "N=48", "K=40", "t=120", "--backend", "emu", "--quiet"],
             "tuningrecords/gemm_nn_fp32_M_64_N_48_K_40.json", 120),
}
def lines(path):
    if not os.path.exists(path):
        return [], 0
    good, bad = [], 0
    data = open(path, "rb").read().decode(errors="replace")
    for l in data.split("\n"):
        if not l:
            continue
        try:
            good.append(json.loads(l))
        except ValueError:
            bad += 1
    return good, bad
result = {"command": " ".join(["bench/kill_resume.sh", binp, outj, str(kills), str(seed)]), "jobs": {}}
for name, (args, log, budget) in jobs.items():
    d = os.path.join(work, name); os.makedirs(d)
    trace = os.path.join(d, "trace")
    env = dict(os.environ, CUTUNE_MEASURE_TRACE=trace)
    rows = []
    for k in range(kills + 1):
        open(trace, "w").close()
        before, _ = lines(os.path.join(d, log))
        t0 = time.time()
        p = subprocess.Popen([binp] + args + ["--outdir", d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=env)
        first = None
        wait = rng.uniform(0.3, 2.5) if k < kills else 1e9
        while p.poll() is None and time.time() - t0 < wait:
            if first is None and len(lines(os.path.join(d, log))[0]) > len(before):
                first = time.time() - t0
            time.sleep(0.01)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        p.wait()
        recs, bad = lines(os.path.join(d, log))
        measured = sum(1 for l in open(trace) if l.startswith("measured"))
        new = len(recs) - len(before)
        rows.append({"kill": k < kills, "after_s": round(min(wait, time.time() - t0), 3), "measured": measured,
                     "recorded": new, "lost": max(0, measured - new), "corrupt": bad,
                     "first_record_s": None if first is None else round(first, 3), "total": len(recs)})
    recs, bad = lines(os.path.join(d, log))
    trials = sorted(r["trial"] for r in recs)
    ok = trials == list(range(budget)) and bad == 0
    killed = [r for r in rows if r["kill"]]
    firsts = [r["first_record_s"] for r in killed if r["first_record_s"] is not None]
    result["jobs"][name] = {"budget": budget, "kills": len(killed), "lost": sum(r["lost"] for r in killed),
                            "max_lost_per_kill": max(r["lost"] for r in killed) if killed else 0,
                            "corrupt": sum(r["corrupt"] for r in rows), "complete": ok, "final_records": len(recs),
                            "first_record_s_median": sorted(firsts)[len(firsts) // 2] if firsts else None,
                            "rows": rows}
    j = result["jobs"][name]
    print("%-5s kills %2d  lost %d (at most %d per kill)  corrupt lines %d  first new record after a restart: median "
          "%s s  log complete (0..%d once): %s" % (name, j["kills"], j["lost"], j["max_lost_per_kill"], j["corrupt"],
                                                  j["first_record_s_median"], budget - 1, ok))
# optimize: KILLS kills during a 60-build search, each followed by --resume; then it must have spent its whole budget
# and reached the best of an uninterrupted run with the same seed through the same variants. Both run over one table
# of times (CUTUNE_REPLAY_TIMES, learned by the uninterrupted run first): every variant still runs and is checked,
# the ones the table knows get its times, so that CPU-timer noise cannot make two correct searches differ.
spec = os.path.join(os.getcwd(), "kernels", "softmax_row.json")
OPT_BUDGET = 60
oargs = ["optimize", "--input", spec, "--backend", "emu", "--no-llm", "--budget-builds", str(OPT_BUDGET), "--sizes",
         "ROWS=16,COLS=256", "--seed", "5"]
def opt_state(d):
    try:
        st = json.load(open(os.path.join(d, "kernels", "_softmax_row", "search_state.json")))
        return st.get("builds", 0)
    except (OSError, ValueError):
        return 0
def opt_best(d):
    try:
        return json.load(open(os.path.join(d, "summary.json")))
    except (OSError, ValueError):
        return None
orows = []
od = os.path.join(work, "opt"); os.makedirs(od)
env = dict(os.environ, COMPILE_CACHE_DIR=os.path.join(work, "cc"), CUTUNE_REPLAY_TIMES=os.path.join(work, "times.txt"))
ud = os.path.join(work, "opt_whole")
subprocess.run([binp] + oargs + ["--outdir", ud], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
known = sum(1 for _ in open(os.path.join(work, "times.txt")))
# kill until KILLS kills landed (a run that finishes before its moment is not a kill), then let it finish
k = 0
while True:
    before = opt_state(od)
    landed = sum(1 for r in orows if r["kill"])
    t0 = time.time()
    errf = open(os.path.join(work, "opt_run.err"), "w+")
    p = subprocess.Popen([binp] + oargs + ["--outdir", od] + (["--resume"] if k else []), stdout=subprocess.DEVNULL,
                         stderr=errf, env=env)
    wait = rng.uniform(0.1, 0.45) if landed < kills else 1e9
    while p.poll() is None and time.time() - t0 < wait:
        time.sleep(0.02)
    killed = p.poll() is None
    if killed:
        p.send_signal(signal.SIGKILL)
    p.wait()
    k += 1
    errf.seek(0)
    err = errf.read()[-400:]
    errf.close()
    orows.append({"kill": killed, "after_s": round(min(wait, time.time() - t0), 3), "builds_before": before,
                  "builds_after": opt_state(od), "rc": p.returncode, "stderr": "" if killed else err})
    if not killed: # it ended by itself: the budget is spent, or the search ran out of moves
        break
killed_n = sum(1 for r in orows if r["kill"])
final_builds = opt_state(od)
def variants(d):
    vd = os.path.join(d, "kernels", "_softmax_row", "variants")
    return {v: open(os.path.join(vd, v, "kernel.cu")).read() for v in os.listdir(vd)} if os.path.isdir(vd) else {}
sk, su = opt_best(od), opt_best(ud)
bk = sk["kernels"][0] if sk else {}
bu = su["kernels"][0] if su else {}
same_best = bool(bk) and all(bk.get(f) == bu.get(f) for f in ("best_variant", "speedup", "best_moves"))
same_variants = variants(od) == variants(ud)
new_times = sum(1 for _ in open(os.path.join(work, "times.txt"))) - known
result["jobs"]["optimize"] = {"budget": OPT_BUDGET, "kills": killed_n, "final_builds": final_builds,
                              "uninterrupted_builds": opt_state(ud),
                              # the whole budget, or as far as the uninterrupted search got before it ran out of moves
                              "complete": final_builds == opt_state(ud) and opt_state(ud) > 0,
                              "same_best": same_best, "same_variants": same_variants,
                              "times_the_uninterrupted_run_never_measured": new_times,
                              "summary_killed": sk, "summary_uninterrupted": su, "rows": orows}
print("optimize kills %2d  builds after the kills and resumes %d of %d (uninterrupted run: %d)  best %s %.3fx "
      "(uninterrupted: %s %.3fx)  same best %s  same variants %s" %
      (killed_n, final_builds, OPT_BUDGET, opt_state(ud), bk.get("best_variant"), bk.get("speedup", 0), bu.get("best_variant"),
       bu.get("speedup", 0), same_best, same_variants))
json.dump(result, open(outj, "w"), indent=1)
sys.exit(0 if all(j["complete"] and j.get("corrupt", 0) == 0 and j.get("same_best", True)
                  for j in result["jobs"].values()) else 1)
PY
