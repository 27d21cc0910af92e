#!/usr/bin/env bash
# Replay speed on a large log: writes EVENTS events (default 1,000,000) through the Ledger into a
# fresh data dir, then times the writer's start-up replay (its state rebuilt) and `kobo replay`
# (every view rebuilt, as sorted files the views ingest; the median of REPLAYS runs, 3 by
# default), and the writer's restart from a snapshot; with AUDIT=1 also `kobo audit` (every
# check, and the views compared with a second rebuild). Prints
# `RESULT writer_replay_eps=… views_replay_eps=… restart_snapshot_s=…` for run.sh.
#
#   bench/replay_speed.sh [BUILD_DIR] [EVENTS]      e.g. bench/replay_speed.sh build 1000000
#
# KEEP=1 keeps the data dir. Needs the targets kobo and bench/kobo_make_log of BUILD_DIR
# (configured with -DKOBO_BENCH=ON).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
events=${2:-1000000}
replays=${REPLAYS:-3}
dir=$(mktemp -d "${TMPDIR:-/tmp}/kobo-replay-speed-XXXXXX")
trap '[ "${KEEP:-0}" = 1 ] && echo "kept $dir" >&2 || rm -rf "$dir"' EXIT

echo "== writing $events events through the Ledger (fsync off)" >&2
"$build/bench/kobo_make_log" --data-dir "$dir" --events "$events" | tee "$dir/make_log.out" >&2

echo "== kobo replay (rebuild every view from the log), $replays times" >&2
# The log is written with fsync off: its 700 MB would still be on their way to the disk, the
# kernel's writeback competing with the replay timed (6-7 % of it in two alternated pairs, as a
# replay of a log at rest, a server's, never is).
sync
# One run moves by 15 % with the minute on a shared machine: the figure is the median of
# REPLAYS runs (3 by default; each rebuilds the views afresh and swaps them in).
for _ in $(seq "$replays"); do
  "$build/kobo" replay --data-dir "$dir" | tee -a "$dir/replay.out" >&2
done
replay_runs=$(sed -n 's/.*(\([0-9]*\) events\/s)$/\1/p' "$dir/replay.out" | paste -sd, -)
replay_median=$(python3 -c "import statistics, sys; print(round(statistics.median(int(x) for x in sys.argv[1].split(','))))" "$replay_runs")

# The writer's restart on this log, from the whole of it and then from a snapshot (RESULT lines).
# (Lists have a log of their own, one business's million records: bench/list_bench.sh.)
echo "== the writer's restart" >&2
"$build/bench/kobo_restart_bench" restart --data-dir "$dir"

# What a transfer costs: the bytes of events `kobo events` prints per settled wallet transfer
# (every event of the log, its few wallet openings included, over the transfers: one
# WalletTransferSettled each on contract v2, a Debited, a Credited and a TransactionStatusChanged
# on v1), and the disk of the log and the views (compressed RocksDB, WAL included) per transfer.
"$build/kobo" events --data-dir "$dir" >"$dir/events.jsonl"
read -r transfers event_bytes < <(awk '{b += length($0) + 1} /"type":"(WalletTransferSettled|TransactionStatusChanged)"/ {n++}
  END {printf "%d %.0f\n", n, n ? b / n : 0}' "$dir/events.jsonl")
rm -f "$dir/events.jsonl"
log_bytes=$(du -sb "$dir/log" | cut -f1)
views_bytes=$(du -sb "$dir/views" | cut -f1)
# The views as a long-running server keeps them: compacted to rest (replay leaves recent
# records in LZ4 files in the upper levels).
# (Copied to stderr through a pipe: `tee /dev/stderr` would reopen a redirected stderr's file and
# truncate what the script wrote there before.)
views_rest_bytes=$("$build/bench/kobo_restart_bench" compact --data-dir "$dir" | tee >(cat >&2) |
  sed -n 's/^RESULT .*views_bytes_at_rest=\([0-9]*\).*/\1/p')
per() { python3 -c "print(round($1 / max($2, 1)))"; }
echo "transfers in the log: $transfers; event $event_bytes B; log $(per "$log_bytes" "$transfers") B and views $(per "$views_bytes" "$transfers") B per transfer on disk ($(per "$views_rest_bytes" "$transfers") B at rest)" >&2
echo "RESULT writer_replay_eps=$(sed -n 's/^writer start-up replay: .*(\([0-9]*\) events\/s)/\1/p' "$dir/make_log.out")" \
     "views_replay_eps=$replay_median views_replay_runs_eps=$replay_runs" \
     "log_write_eps=$(sed -n 's/^wrote .*(\([0-9]*\) events\/s).*/\1/p' "$dir/make_log.out")" \
     "transfer_event_bytes=$event_bytes log_bytes_per_transfer=$(per "$log_bytes" "$transfers")" \
     "views_bytes_per_transfer=$(per "$views_bytes" "$transfers")" \
     "views_rest_bytes_per_transfer=$(per "$views_rest_bytes" "$transfers")"
[ "${AUDIT:-0}" = 1 ] || exit 0

echo "== kobo audit (all checks; views compared with a second rebuild)" >&2
start=$(date +%s.%N)
"$build/kobo" audit --data-dir "$dir" --json "$dir/audit.json" | sed -n '1,4p;/^views/p;/^violations/p'
end=$(date +%s.%N)
python3 - "$dir/audit.json" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
total = float(sys.argv[3]) - float(sys.argv[2])
print(f"audit: log pass {r['records']:,} events in {r['seconds']:.1f} s ({r['eventsPerSecond']:,.0f} events/s); "
      f"with the views check {total:.1f} s ({r['records'] / total:,.0f} events/s); clean: {r['clean']}")
sys.exit(0 if r["clean"] and r["records"] >= 1 else 1)
PY
