#!/usr/bin/env python3
"""A stand-in for Nsight Compute's ncu, for machines without a GPU (CI): it takes the options cutune passes, refuses
any it does not know and a clock control other than none (cutune must leave the clocks alone), runs the program
after the options as ncu does (the optimizer's worker, --profile-run), and prints a CSV recorded by the real ncu
(tests/fixtures/ncu/, $FAKE_NCU_FIXTURE) with its kernel name made the -k filter's, on stdout as ncu does.

$FAKE_NCU_LOG: a file each call appends its arguments to (one JSON list per line).
$FAKE_NCU_MODE: ok (default); refuse (the counters refused, as ncu says it, exit 0, no CSV); fail (exit 1 with an
error); hang (sleeps an hour: the caller's timeout must kill it)."""
import json
import os
import re
import subprocess
import sys
import time

VALUED = {"--page", "--clock-control", "--target-processes", "--metrics", "-k", "--kernel-name", "--launch-count",
          "--launch-skip"}
FLAGS = {"--csv"}


def main():
    args = sys.argv[1:]
    if os.environ.get("FAKE_NCU_LOG"):
        with open(os.environ["FAKE_NCU_LOG"], "a") as f:
            f.write(json.dumps(args) + "\n")
    opts, i = {}, 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] in VALUED and i + 1 < len(args):
            opts[args[i]] = args[i + 1]
            i += 2
        elif args[i] in FLAGS:
            opts[args[i]] = True
            i += 1
        else:
            print(f"==ERROR== unrecognised option '{args[i]}'")
            return 1
    prog = args[i:]
    if opts.get("--clock-control") != "none":
        print("==ERROR== fake ncu: cutune must pass --clock-control none")
        return 1
    if not prog:
        print("==ERROR== no application to profile")
        return 1
    mode = os.environ.get("FAKE_NCU_MODE", "ok")
    if mode == "hang":
        time.sleep(3600)
    if mode == "fail":
        print("==ERROR== fake ncu: failed on purpose", file=sys.stderr)
        return 1
    run = subprocess.run(prog)
    if mode == "refuse":
        print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
              "Counters on the target device 0.")
        return 0
    if run.returncode != 0:
        print(f"==ERROR== The application returned an error code ({run.returncode}).")
        return 1
    name = re.sub(r"^regex:\^?|\$$", "", opts.get("-k", opts.get("--kernel-name", "kernel")))
    lines = open(os.environ["FAKE_NCU_FIXTURE"]).read().splitlines()
    header = next(k for k, line in enumerate(lines) if line.startswith('"ID"'))
    col = lines[header].split('","').index("Kernel Name")
    for k, line in enumerate(lines):
        if k > header + 1 and line.startswith('"'):  # a kernel row: its name becomes the filter's
            fields = line.split('","')
            fields[col] = name
            line = '","'.join(fields)
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
