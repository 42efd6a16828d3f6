#!/usr/bin/env python3
"""Layout check (CI): no include cycle between the folders of src/, no .c file over the line limit, and every public
header in the umbrella header include/cutune/cutune.h.

A folder is src/<name>, or src/ops/<op> for the ops. A file depends on the folder of every header it includes:
an internal header by its path under src/, a public header cutune/<h> by the folder that implements it (OWNER
below; a public header missing from OWNER is an error, so a new one must be placed). Headers count as files of
their folder, so a header that includes another header is an edge too. Exit 1 on a cycle (printed with the
include lines that make it), an unplaced header or an oversized file."""
import os
import re
import sys

OWNER = {
    "common.h": "core", "util.h": "core", "half.h": "core", "devlimits.h": "core", "log.h": "core",
    "gpu.h": "gpu",
    "compile.h": "compile",
    "codegen.h": "codegen",
    "workload.h": "ops/conv2d", "space.h": "ops/conv2d",
    "gemm.h": "ops/gemm", "gemm_space.h": "ops/gemm",
    "kspec.h": "ops/kernel", "work.h": "work", "kstate.h": "ops/kernel", "llm_gen.h": "ops/kernel",
    "op.h": "ops",
    "measure.h": "measure", "emu.h": "measure",
    "energy.h": "energy", "powercap.h": "energy", "idle.h": "energy",
    "search.h": "strategy", "costmodel.h": "strategy", "mcgs.h": "strategy", "strategy.h": "strategy",
    "ncu.h": "strategy", "llm.h": "strategy",
    "tune.h": "pipeline", "gemm_tune.h": "pipeline", "optimize.h": "pipeline", "task.h": "pipeline",
    "tasksched.h": "pipeline",
    "record.h": "record", "gemm_record.h": "record",
    "export.h": "post", "report.h": "post", "lookup.h": "post",
    "dist.h": "dist",
    "cutune.h": None,  # the umbrella header: includes everything, owned by no folder
}
MAX_LINES = int(os.environ.get("CUTUNE_MAX_C_LINES", "1000"))
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):  # path relative to src/
    parts = path.split("/")
    if parts[0] == "ops" and len(parts) > 2:
        return "ops/" + parts[1]
    return parts[0] if len(parts) > 1 else "."


def main(root):
    src = os.path.join(root, "src")
    inc = os.path.join(root, "include", "cutune")
    problems = []
    edges = {}  # (a, b) -> [where]

    def target(header, cur):
        if header.startswith("cutune/"):
            h = header[len("cutune/"):]
            if h not in OWNER:
                problems.append(f"public header cutune/{h} has no owning folder in scripts/check-layout.py")
                return None
            return OWNER[h]
        if "/" in header:
            return folder_of(header)
        return cur  # same-folder include

    files = []
    for d, _, fs in os.walk(src):
        for f in fs:
            if f.endswith((".c", ".h")):
                p = os.path.join(d, f)
                files.append((p, folder_of(os.path.relpath(p, src))))
    for h in os.listdir(inc):
        if h.endswith(".h"):
            if h not in OWNER:
                problems.append(f"public header cutune/{h} has no owning folder in scripts/check-layout.py")
                continue
            if OWNER[h]:
                files.append((os.path.join(inc, h), OWNER[h]))
    umbrella = open(os.path.join(inc, "cutune.h"), encoding="utf-8").read() if os.path.exists(
        os.path.join(inc, "cutune.h")) else ""
    for h in sorted(os.listdir(inc)):
        if h.endswith(".h") and h != "cutune.h" and f'#include "cutune/{h}"' not in umbrella:
            problems.append(f"include/cutune/cutune.h does not include the public header cutune/{h}")
    for p, cur in files:
        text = open(p, encoding="utf-8").read()
        if p.endswith(".c"):
            n = text.count("\n")
            if n > MAX_LINES:
                problems.append(f"{os.path.relpath(p, root)} has {n} lines (limit {MAX_LINES}): split it")
        for m in INC.finditer(text):
            t = target(m.group(1), cur)
            if t and t != cur:
                edges.setdefault((cur, t), []).append(f"{os.path.relpath(p, root)}: #include \"{m.group(1)}\"")
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    # Tarjan's strongly connected components: every component of more than one folder is a cycle.
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    for comp in sccs:
        lines = [f"include cycle between src/ folders: {' <-> '.join(comp)}"]
        for (a, b), where in sorted(edges.items()):
            if a in comp and b in comp:
                lines.append(f"  {a} -> {b}: " + "; ".join(where[:3]) + (" ..." if len(where) > 3 else ""))
        problems.append("\n".join(lines))
    if "--graph" in sys.argv:
        for a in sorted(graph):
            print(f"{a} -> {', '.join(sorted(graph[a]))}")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "--root" in sys.argv:  # another tree (tests/it_layout.sh checks that the check fails on a planted cycle)
        root = sys.argv[sys.argv.index("--root") + 1]
    sys.exit(main(root))
