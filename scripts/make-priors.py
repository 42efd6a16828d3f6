#!/usr/bin/env python3
"""Builds the shipped prior logs workloads/priors/<gpu-slug>/ from tuning records (python3 stdlib only).

usage: scripts/make-priors.py [--out DIR] [--per-log N] [--seed S] SOURCE...

Each SOURCE is a tarball (.tgz/.tar.gz/.tar) or a folder holding caseN_conv2d_*.json logs (JSON lines, one trial
each). For every log a seeded random subset of at most N complete lines (valid and failed trials alike) is kept
byte for byte, in file order, and written to DIR/<gpu-slug>/<workload>.json, named by the workload (the log's name
without its caseN_ prefix), so two lists that both have a case 3 cannot collide. A workload met again in a later
log (another list, the same GPU) is skipped: the first one wins. gpu-slug is the records' GPU name with every
non-alphanumeric character replaced by '_' (NVIDIA H200 -> NVIDIA_H200). Lines of another GPU than the log's first
record are dropped. The .json files already in each written DIR/<gpu-slug>/ are replaced.
"""
import argparse
import json
import os
import random
import re
import sys
import tarfile

CASE_PREFIX = re.compile(r"^case[0-9]+_")


def slug(gpu):
    return re.sub(r"[^A-Za-z0-9]", "_", gpu)


def logs_of(source):
    """Yields (name, bytes) for each *.json log of a tarball or folder, in name order."""
    if os.path.isdir(source):
        for root, _, files in sorted(os.walk(source)):
            for f in sorted(files):
                if f.endswith(".json"):
                    with open(os.path.join(root, f), "rb") as fh:
                        yield f, fh.read()
        return
    with tarfile.open(source) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile() and m.name.endswith(".json")),
                         key=lambda m: m.name)
        for m in members:
            yield os.path.basename(m.name), tar.extractfile(m).read()


def trial_lines(data):
    """The complete (newline-terminated), parseable lines with their GPU names; a partial last line is dropped."""
    out = []
    for raw in data.split(b"\n")[:-1]:
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
            gpu = rec["gpu"]["name"]
        except (ValueError, KeyError, TypeError):
            print(f"make-priors: skipped a malformed line: {raw[:60]!r}", file=sys.stderr)
            continue
        out.append((raw, gpu))
    return out


def subset(lines, cap, seed, name):
    """A deterministic random subset of at most cap lines, kept in file order."""
    if len(lines) <= cap:
        return lines
    keep = sorted(random.Random(f"{seed}:{name}").sample(range(len(lines)), cap))
    return [lines[i] for i in keep]


def main():
    ap = argparse.ArgumentParser(description="Build shipped prior logs from tuning records.")
    ap.add_argument("sources", nargs="+", help="record tarballs or folders")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "workloads", "priors"))
    ap.add_argument("--per-log", type=int, default=180, help="at most this many lines per log (default 180: the H200 set stays under 4 MB)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    chosen = {}  # (slug, workload file name) -> lines; first log of a workload wins
    for source in args.sources:
        for name, data in logs_of(source):
            lines = trial_lines(data)
            if not lines:
                print(f"make-priors: {source}: {name}: no complete records, skipped", file=sys.stderr)
                continue
            gpu = lines[0][1]
            workload = CASE_PREFIX.sub("", name)
            key = (slug(gpu), workload)
            if key in chosen:
                print(f"make-priors: {source}: {name}: workload already taken, skipped", file=sys.stderr)
                continue
            chosen[key] = subset([l for l, g in lines if g == gpu], args.per_log, args.seed, workload)

    for gslug in sorted({k[0] for k in chosen}):
        d = os.path.join(args.out, gslug)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if f.endswith(".json"):
                os.remove(os.path.join(d, f))
    total = 0
    for (gslug, workload), lines in sorted(chosen.items()):
        path = os.path.join(args.out, gslug, workload)
        body = b"".join(l + b"\n" for l in lines)
        with open(path, "wb") as fh:
            fh.write(body)
        total += len(body)
    print(f"make-priors: wrote {len(chosen)} log(s), {total} bytes, under {args.out}")


if __name__ == "__main__":
    main()
