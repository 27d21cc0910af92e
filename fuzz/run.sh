#!/usr/bin/env bash
# Runs every fuzz target for FUZZ_SECONDS (default 60) each; one line per target with its
# executions and crashes; exit 1 if any target crashed. Usage: fuzz/run.sh BUILD_DIR
# Each target starts from its seeds (fuzz/corpus/<target>/, read only) and from what earlier runs
# found (BUILD_DIR/fuzz-corpus/<target>/); a crashing input is saved as
# BUILD_DIR/fuzz-artifacts/<target>/crash-* and reproduces with `BUILD_DIR/fuzz/fuzz_<target> FILE`.
set -uo pipefail
build=${1:?usage: fuzz/run.sh BUILD_DIR}
seconds=${FUZZ_SECONDS:-60}
seeds="$(cd "$(dirname "$0")" && pwd)/corpus"
targets=(http_request request_body query_string event_codec checkpoint_stream)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=0
for t in "${targets[@]}"; do
  corpus="$build/fuzz-corpus/$t"
  artifacts="$build/fuzz-artifacts/$t"
  log="$build/fuzz-$t.log"
  mkdir -p "$corpus" "$artifacts"
  tmp=$(mktemp -d)  # the data dirs of the targets that run the service (fuzz/service.h)
  start=$(date +%s)
  TMPDIR="$tmp" "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=60 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "$seeds/$t" >"$log" 2>&1
  rc=$?
  rm -rf "$tmp"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ -z "$execs" ]; then  # a crash ends the run before the final stats
    execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  fi
  crashes=0
  if [ "$rc" -ne 0 ]; then crashes=1; failed=1; fi
  printf 'fuzz %-14s %10s executions in %3ss, %d crashes, corpus %s inputs\n' "$t" "${execs:-0}" \
    "$(($(date +%s) - start))" "$crashes" "$(find "$corpus" -type f | wc -l)"
  if [ "$crashes" -ne 0 ]; then
    echo "  exit $rc; log $log; input: $(ls -t "$artifacts" | head -1 | sed "s|^|$artifacts/|")"
    grep -E 'ERROR|SUMMARY|runtime error|fuzz service|assert|#[0-9]+ 0x.* in (kobo::|LLVMFuzzerTestOneInput)' "$log" | head -20 | sed 's/^/  /'
  fi
done
exit "$failed"
