#!/usr/bin/env bash
# Builds cutune's libFuzzer targets (clang, ASan+UBSan, -Werror) in build-fuzz/ and runs each of them for
# FUZZ_SECONDS seconds (default 20), starting from a temporary copy of its seed corpus fuzz/corpus/<name>/.
#
#   scripts/fuzz.sh                       # every target
#   FUZZ_SECONDS=10 scripts/fuzz.sh       # the CI setting
#   scripts/fuzz.sh record_parse ptxas    # some targets (names as in fuzz/fuzz_<name>.c)
#
# Exits non-zero if any target crashes, leaks, trips a sanitizer or breaks an invariant (after running all of
# them). Each failing input is kept as build-fuzz/fuzz-artifacts/<name>-crash-<sha1> (replay it with
# build-fuzz/fuzz/fuzz_<name> <file>); each run's log is build-fuzz/fuzz-logs/<name>.log.
# Environment: FUZZ_SECONDS, FUZZ_MAX_LEN (4096), FUZZ_BUILD_DIR (build-fuzz), FUZZ_KEEP_CORPUS=1 keeps the
# grown corpora in build-fuzz/fuzz-corpus/ (fuzz/corpus/ itself is never written).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${FUZZ_SECONDS:-20}
max_len=${FUZZ_MAX_LEN:-4096}
build=${FUZZ_BUILD_DIR:-build-fuzz}
jobs=$(nproc)

if ! command -v clang >/dev/null; then
  echo "fuzz.sh: clang is required (libFuzzer)" >&2
  exit 2
fi
CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUTUNE_FUZZ=ON -DCUTUNE_TESTS=OFF \
  -DCUTUNE_SANITIZE=OFF -DCUTUNE_WERROR=ON >/dev/null
cmake --build "$build" --target fuzz -j"$jobs"

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for src in fuzz/fuzz_*.c; do
    name=${src#fuzz/fuzz_}
    targets+=("${name%.c}")
  done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cutune-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
artifacts="$PWD/$build/fuzz-artifacts"
logs="$PWD/$build/fuzz-logs"
mkdir -p "$artifacts" "$logs"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
for name in "${targets[@]}"; do
  bin="$build/fuzz/fuzz_$name"
  if [ ! -x "$bin" ]; then
    echo "fuzz.sh: no target '$name' (have: $(cd fuzz && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//' | tr '\n' ' '))" >&2
    exit 2
  fi
  corpus="$work/$name"
  mkdir -p "$corpus"
  if [ -d "fuzz/corpus/$name" ]; then
    cp -R "fuzz/corpus/$name/." "$corpus/"
  fi
  log="$logs/$name.log"
  rc=0
  "$bin" "$corpus" -max_len="$max_len" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$name-" >"$log" 2>&1 &
  pid=$!
  wait "$pid" || rc=$?
  # The file-loader targets write /tmp/cutune-fuzz-<pid>-*; a crash skips their own clean-up.
  rm -f /tmp/cutune-fuzz-"$pid"-*
  runs=$(sed -n 's/^stat::number_of_executed_\(runs\|units\): *//p' "$log" | tail -n1)
  secs_run=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
  if [ "$rc" -ne 0 ]; then
    echo "FAIL  $name (exit $rc) — log: $log"
    grep -E "ERROR:|runtime error|invariant failed|SUMMARY|Test unit written" "$log" | head -n 20 || true
    failed+=("$name")
  else
    printf 'ok    %-16s %10s runs  %8s exec/s  corpus %s files\n' "$name" "${runs:-?}" "${secs_run:-?}" \
      "$(find "$corpus" -type f | wc -l)"
  fi
  if [ "${FUZZ_KEEP_CORPUS:-0}" = 1 ]; then
    mkdir -p "$build/fuzz-corpus"
    rm -rf "$build/fuzz-corpus/$name"
    cp -R "$corpus" "$build/fuzz-corpus/$name"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]} (inputs in $artifacts)" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} target(s) ran ${secs} s each without a finding"
