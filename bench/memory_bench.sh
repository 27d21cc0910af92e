#!/usr/bin/env bash
# The writer against its history (guarantee 9): for each size, a log of that many wallet
# transfers over 10,000 wallets (kobo_make_log: 10 businesses of 1,000 wallets), the writer's
# start from the whole log (kobo_restart_bench restart, which leaves a snapshot), then a writer
# that decides 20,000 transfers past the snapshot and is killed with SIGKILL, and a fresh start
# (kobo_restart_bench ready): how long until it is ready, its resident memory, the snapshot's size.
# Prints `RESULT size=N ready_s=… rss_mib=… snapshot_mib=… history_mib=…` per size; run.sh runs
# one size per call and makes the rows.
#
#   bench/memory_bench.sh [BUILD_DIR] [SIZES]      e.g. bench/memory_bench.sh build 1000000,10000000
#
# KEEP=1 keeps the data dirs. Needs bench/kobo_make_log and bench/kobo_restart_bench of BUILD_DIR.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
sizes=${2:-1000000,10000000}
root=$(mktemp -d "${TMPDIR:-/tmp}/kobo-memory-XXXXXX")
trap '[ "${KEEP:-0}" = 1 ] && echo "kept $root" >&2 || rm -rf "$root"' EXIT

for n in ${sizes//,/ }; do
  dir="$root/$n"
  echo "== $n transfers over 10,000 wallets (fsync off)" >&2
  "$build/bench/kobo_make_log" --data-dir "$dir" --events "$n" --businesses 10 --wallets 1000 >&2
  "$build/bench/kobo_restart_bench" restart --data-dir "$dir" >&2
  line=$("$build/bench/kobo_restart_bench" ready --data-dir "$dir" --crash-after 20000 | tee >(cat >&2) |
    sed -n 's/^RESULT //p')
  echo "RESULT size=$n $line"
  [ "${KEEP:-0}" = 1 ] || rm -rf "$dir"
done
