#!/usr/bin/env bash
# Runs every fuzz target for FUZZ_SECONDS (default 60) each; one line per target with its
# executions and crashes; exit 1 if any target crashed. Usage: fuzz/run.sh BUILD_DIR
# Each target starts from its seeds (fuzz/corpus/<target>/, read only) and from what earlier runs
# found (BUILD_DIR/fuzz-corpus/<target>/); a crashing input is saved as
# BUILD_DIR/fuzz-artifacts/<target>/crash-* and reproduces with `BUILD_DIR/fuzz/fuzz_<target> FILE`.
# A libFuzzer process runs on one core: FUZZ_JOBS targets (default: as many as there are cores) run
# at once, each for its whole FUZZ_SECONDS on a core of its own; the lines come in the targets' order.
set -uo pipefail
build=${1:?usage: fuzz/run.sh BUILD_DIR}
seconds=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-$(nproc)}
seeds="$(cd "$(dirname "$0")" && pwd)/corpus"
targets=(http_request request_body query_string event_codec checkpoint_stream)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
results=$(mktemp -d)  # each target's line(s), and a file `crashed` when it did
trap 'rm -rf "$results"' EXIT

# fuzz TARGET: runs it and writes its report to $results/TARGET.
fuzz() {
  local t=$1
  local corpus="$build/fuzz-corpus/$t" artifacts="$build/fuzz-artifacts/$t" log="$build/fuzz-$t.log"
  mkdir -p "$corpus" "$artifacts"
  local tmp
  tmp=$(mktemp -d)  # the data dirs of the targets that run the service (fuzz/service.h)
  local start
  start=$(date +%s)
  TMPDIR="$tmp" "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=60 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "$seeds/$t" >"$log" 2>&1
  local rc=$?
  rm -rf "$tmp"
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ -z "$execs" ]; then  # a crash ends the run before the final stats
    execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  fi
  local crashes=0
  if [ "$rc" -ne 0 ]; then crashes=1; touch "$results/crashed"; fi
  {
    printf 'fuzz %-14s %10s executions in %3ss, %d crashes, corpus %s inputs\n' "$t" "${execs:-0}" \
      "$(($(date +%s) - start))" "$crashes" "$(find "$corpus" -type f | wc -l)"
    if [ "$crashes" -ne 0 ]; then
      echo "  exit $rc; log $log; input: $(ls -t "$artifacts" | head -1 | sed "s|^|$artifacts/|")"
      grep -E 'ERROR|SUMMARY|runtime error|fuzz service|assert|#[0-9]+ 0x.* in (kobo::|LLVMFuzzerTestOneInput)' "$log" | head -20 | sed 's/^/  /'
    fi
  } >"$results/$t"
}

running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
  fuzz "$t" &
  running=$((running + 1))
done
wait
for t in "${targets[@]}"; do cat "$results/$t"; done
[ ! -e "$results/crashed" ]
