#!/usr/bin/env bash
# `make bench`: runs every benchmark on the release build and prints one table (bench/README.md).
# Each benchmark prints `RESULT key=value ...` lines on stdout and its details on stderr;
# `measure NAME command...` keeps the values as R[NAME.key], and `row` puts one line in the table.
# A new row (another log backend, say) is one `measure` and one `row`.
#
#   bench/run.sh [BUILD_DIR] [SECONDS]     SECONDS per HTTP run (default 10)
#   WALLETS=N (default 1000000) sets the wallets of the memory row; EVENTS=N (default 1000000)
#   the size of the replayed log. ONLY=peers,http,... runs only those benchmarks (the names given
#   to `measure` below; `memory` also makes its wallets, `kafka`/`kafka6` start the broker): the
#   table then has every row, the others empty.
set -euo pipefail
build=${1:-build-bench}
seconds=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/kobo-bench-run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

declare -A R
wanted() { [ -z "${ONLY:-}" ] || [[ ,$ONLY, == *,$1,* ]]; }
measure() {  # NAME COMMAND...
  local name=$1 line kv
  shift
  wanted "$name" || return 0
  echo "== $name: $*" >&2
  while read -r line; do
    echo "$line" >&2
    [[ $line == RESULT\ * ]] || continue
    for kv in ${line#RESULT }; do R[$name.${kv%%=*}]=${kv#*=}; done
  done < <("$@")
}
rows=()
row() { rows+=("$1|$2|$3|$4|$5"); }  # METRIC MEASURED AGAINST-THE-MACHINE TARGET MET
# meets VALUE OP LIMIT -> yes / no
meets() { python3 -c "import sys; print('yes' if float('$1') $2 float('$3') else 'no')" 2>/dev/null || echo "-"; }
n() { python3 -c "print(f'{float(\"$1\"):,.0f}')" 2>/dev/null || echo "$1"; }
# ratio A B -> "1.23x" (A / B)
ratio() { python3 -c "print(f'{float(\"$1\") / float(\"$2\"):.2f}x')" 2>/dev/null || echo "-"; }

started=$(date -u +%Y-%m-%d)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
fsync=$(python3 "$here/fsync_probe.py" "${TMPDIR:-/tmp}" 200)

measure peers "$here/peers.sh" "$seconds"
measure http "$here/http_bench.sh" "$build" "$seconds" transfers,get,lag,memory
# The same transfers between wallets of KYC tier 1 (docs/architecture.md, KYC tiers) under limits that never
# refuse: every transfer counts its debit and checks the daily allowance and the balance cap.
KOBO_KYC_TIER=1 measure tiers "$here/http_bench.sh" "$build" "$seconds" transfers -- --limits "$here/limits_bench.json"
# A bulk of 1,000 wallet transfers on one connection (extensions section 5).
measure bulk python3 "$here/bulk_bench.py" "$build" "${BULK_RUNS:-30}"
measure engine "$build/bench/kobo_engine_bench" transfers --data-dir "$scratch/engine" --seconds "$seconds"
measure render "$build/bench/kobo_engine_bench" render
measure replay "$here/replay_speed.sh" "$build" "${EVENTS:-1000000}"
# A new cluster node on a topic of EVENTS events: through a peer's checkpoint, and by replaying it
# (a broker of its own).
measure join "$here/join_bench.sh" "$build" "${EVENTS:-1000000}"
# Lists at a million transaction records in one business: every combination of the filters.
measure lists "$here/list_bench.sh" "$build" "${LIST_RECORDS:-1000000}"
# Statements on a wallet with a million movements.
measure statement "$here/statement_bench.sh" "$build" "${EVENTS:-1000000}"
# The HTTP transfer figure again on the Kafka backend, against the test broker (a fresh one).
kafka_broker="$here/../tools/kafka/broker.sh"
if wanted kafka || wanted kafka6; then bootstrap=$("$kafka_broker" start "$scratch/kafka"); fi
measure kafka "$here/http_bench.sh" "$build" "$seconds" transfers -- --kafka-brokers "${bootstrap:-}" --kafka-topic "bench.$$"
# And with six businesses, one in each of the topic's six partitions: their transactions commit
# side by side (events/kafka_log.cc).
BUSINESSES=6 PARTITIONS=6 measure kafka6 "$here/http_bench.sh" "$build" "$seconds" transfers -- \
  --kafka-brokers "${bootstrap:-}" --kafka-topic "bench.six.$$"
if wanted kafka || wanted kafka6; then "$kafka_broker" stop "$scratch/kafka"; fi
wanted memory && "$build/bench/kobo_engine_bench" make-wallets --data-dir "$scratch/memory" --wallets "${WALLETS:-1000000}" >&2
measure memory "$build/bench/kobo_engine_bench" writer-memory --data-dir "$scratch/memory"
# The writer against its history: kill -9 and restart on 1M and 10M transfers.
measure history1m "$here/memory_bench.sh" "$build" 1000000
measure history10m "$here/memory_bench.sh" "$build" 10000000
# kobo audit against history: peak memory and time on 1M and 5M transfers among 5,000 wallets.
measure audit1m "$here/audit_bench.sh" "$build" 1000000
measure audit5m "$here/audit_bench.sh" "$build" 5000000

set +u  # a row of a benchmark that ONLY left out is printed empty
pg=${R[peers.pgbench_tps]:-0}
ngx=${R[peers.nginx_rps]:-0}
row "HTTP wallet transfers (embedded log, fsync per group commit, 64 connections)" \
    "$(n "${R[http.http_tps]}")/s; p50 ${R[http.http_p50_ms]} ms, p99 ${R[http.http_p99_ms]} ms, max ${R[http.http_max_ms]} ms" \
    "$(ratio "${R[http.http_tps]}" "$pg") pgbench" \
    ">= 4x pgbench, p99 <= 20 ms" \
    "$( [ "$(meets "${R[http.http_tps]}" '>=' "$(python3 -c "print(4 * float('$pg'))")")" = yes ] && [ "$(meets "${R[http.http_p99_ms]}" '<=' 20)" = yes ] && echo yes || echo no)"
row "HTTP wallet transfers between KYC tier-1 wallets (limits checked on every transfer)" \
    "$(n "${R[tiers.http_tps]}")/s; p50 ${R[tiers.http_p50_ms]} ms, p99 ${R[tiers.http_p99_ms]} ms" \
    "$(ratio "${R[tiers.http_tps]}" "${R[http.http_tps]}") without tiers" ">= 0.9x without tiers" \
    "$(meets "${R[tiers.http_tps]}" '>=' "$(python3 -c "print(0.9 * float('${R[http.http_tps]:-0}'))")")"
row "HTTP wallet transfers on Kafka (test broker on the same cores, 64 connections)" \
    "$(n "${R[kafka.http_tps]}")/s; p50 ${R[kafka.http_p50_ms]} ms, p99 ${R[kafka.http_p99_ms]} ms, max ${R[kafka.http_max_ms]} ms" \
    "$(ratio "${R[kafka.http_tps]}" "$pg") pgbench" ">= 10,000/s" "$(meets "${R[kafka.http_tps]}" '>=' 10000)"
row "HTTP wallet transfers on Kafka, six businesses in six partitions (same broker, 64 connections)" \
    "$(n "${R[kafka6.http_tps]}")/s; p50 ${R[kafka6.http_p50_ms]} ms, p99 ${R[kafka6.http_p99_ms]} ms, max ${R[kafka6.http_max_ms]} ms" \
    "$(ratio "${R[kafka6.http_tps]}" "${R[kafka.http_tps]}") one business" ">= 3x one business" \
    "$(meets "${R[kafka6.http_tps]}" '>=' "$(python3 -c "print(3 * float('${R[kafka.http_tps]:-0}'))")")"
row "Bulk of 1,000 wallet transfers, one connection (fsync per group commit): best / median / p90" \
    "${R[bulk.bulk_best_ms]} / ${R[bulk.bulk_p50_ms]} / ${R[bulk.bulk_p90_ms]} ms ($(n "${R[bulk.bulk_items_per_s]}") items/s at the median)" "-" \
    "<= 50 ms (>= 20,000 items/s)" "$(meets "${R[bulk.bulk_p50_ms]}" '<=' 50)"
row "A wallet transfer's record rendered (answers, GETs, lists, webhooks; one thread)" \
    "${R[render.render_us]} us" "-" "-" "-"
row "GET /v1/virtual-accounts/{id} (64 connections)" \
    "$(n "${R[http.get_rps]}")/s; p50 ${R[http.get_p50_ms]} ms, p99 ${R[http.get_p99_ms]} ms" \
    "$(ratio "${R[http.get_rps]}" "$ngx") nginx" ">= 0.5x nginx (return 200, wrk -t1)" \
    "$(meets "${R[http.get_rps]}" '>=' "$((ngx / 2))")"
row "Command engine alone (in process, decide with the history index on disk + encode + durable append)" \
    "$(n "${R[engine.engine_tps]}") transfers/s" "$(ratio "${R[engine.engine_tps]}" "$pg") pgbench" \
    ">= 68,955/s (76,617 before the index, less 10%)" "$(meets "${R[engine.engine_tps]}" '>=' 68955)"
row "Replay of $(n "${EVENTS:-1000000}") events: writer state" \
    "$(n "${R[replay.writer_replay_eps]}") events/s" "-" ">= 1,000,000/s" "$(meets "${R[replay.writer_replay_eps]}" '>=' 1000000)"
row "Replay of $(n "${EVENTS:-1000000}") events: every view (kobo replay, sorted files ingested)" \
    "$(n "${R[replay.views_replay_eps]}") events/s" "-" ">= 100,000 events/s" "$(meets "${R[replay.views_replay_eps]}" '>=' 100000)"
row "Writer ready after a restart on $(n "${EVENTS:-1000000}") events: from the whole log / from a snapshot" \
    "${R[replay.restart_whole_s]} s / ${R[replay.restart_snapshot_s]} s (snapshot ${R[replay.snapshot_mib]} MiB)" "-" \
    "<= 2 s, flat from 100k to 1M" "$(meets "${R[replay.restart_snapshot_s]}" '<=' 2)"
row "A new cluster node ready (start to /readyz 200) on a topic of $(n "${EVENTS:-1000000}") events: through a peer's checkpoint / replaying the topic" \
    "${R[join.join_checkpoint_ready_s]} s / ${R[join.join_replay_ready_s]} s (checkpoint $(n "${R[join.join_checkpoint_bytes]}") bytes)" "-" \
    "<= 15 s through a checkpoint" "$(meets "${R[join.join_checkpoint_ready_s]}" '<=' 15)"
row "GET /v1/transactions, $(n "${R[lists.list_records]}") records in one business: ${R[lists.list_combinations]} combinations of the filters, page 1 and page 10,000: p50 / worst" \
    "${R[lists.list_p50_ms]} / ${R[lists.list_worst_ms]} ms" "-" "p50 <= 5 ms, worst <= 20 ms" \
    "$( [ "$(meets "${R[lists.list_p50_ms]}" '<=' 5)" = yes ] && [ "$(meets "${R[lists.list_worst_ms]}" '<=' 20)" = yes ] && echo yes || echo no)"
row "Keys and bytes of the views per wallet transfer, at rest after the memory row's run (restarted)" \
    "${R[http.views_keys_per_transfer]} keys, ${R[http.views_bytes_per_transfer]} B" "-" "<= 8 keys, <= 300 B" \
    "$( [ "$(meets "${R[http.views_keys_per_transfer]}" '<=' 8)" = yes ] && [ "$(meets "${R[http.views_bytes_per_transfer]}" '<=' 300)" = yes ] && echo yes || echo no)"
row "Server CPU per HTTP wallet transfer at the peak: projector / writer / HTTP threads / the rest" \
    "${R[http.cpu_us_projector]} / ${R[http.cpu_us_writer]} / ${R[http.cpu_us_http]} / ${R[http.cpu_us_other]} us" "-" \
    "projector <= 20 us and <= the writer's" \
    "$( [ "$(meets "${R[http.cpu_us_projector]}" '<=' 20)" = yes ] && [ "$(meets "${R[http.cpu_us_projector]}" '<=' "${R[http.cpu_us_writer]:-0}")" = yes ] && echo yes || echo no)"
row "Statement page (perPage 100) of a wallet with $(n "${R[statement.statement_movements]}") movements, random window / last page" \
    "${R[statement.statement_page_ms]} / ${R[statement.statement_last_page_ms]} ms" "-" "<= 10 ms" \
    "$(meets "${R[statement.statement_page_ms]}" '<=' 10)"
row "CSV statement of $(n "${R[statement.csv_lines]}") lines over HTTP (first run fills the views' 64 MiB block cache)" \
    "$(n "${R[statement.csv_lines_per_s]}") lines/s, resident memory +${R[statement.csv_rss_growth_mib]} MiB (first run $(n "${R[statement.csv_cold_lines_per_s]}") lines/s, +${R[statement.csv_cold_rss_growth_mib]} MiB)" "-" \
    ">= 200,000 lines/s, <= 16 MiB" \
    "$( [ "$(meets "${R[statement.csv_lines_per_s]}" '>=' 200000)" = yes ] && [ "$(meets "${R[statement.csv_rss_growth_mib]}" '<=' 16)" = yes ] && echo yes || echo no)"
row "Balance at a time, wallet with $(n "${R[statement.statement_movements]}") movements" \
    "${R[statement.balance_at_ms]} ms" "-" "<= 2 ms" "$(meets "${R[statement.balance_at_ms]}" '<=' 2)"
row "Events per settled wallet transfer, as kobo events prints them" \
    "${R[replay.transfer_event_bytes]} bytes" "-" "<= 800 bytes" "$(meets "${R[replay.transfer_event_bytes]}" '<=' 800)"
row "Disk per wallet transfer: log / views (compressed, WAL included; views as replayed, and at rest)" \
    "${R[replay.log_bytes_per_transfer]} B / ${R[replay.views_bytes_per_transfer]} B, ${R[replay.views_rest_bytes_per_transfer]} B at rest" "-" "<= 400 B / <= 600 B at rest" \
    "$( [ "$(meets "${R[replay.log_bytes_per_transfer]}" '<=' 400)" = yes ] && [ "$(meets "${R[replay.views_rest_bytes_per_transfer]}" '<=' 600)" = yes ] && echo yes || echo no)"
row "Projection lag p99 at ${R[http.lag_pct]}% of peak ($(n "${R[http.lag_tps]}") transfers/s)" \
    "${R[http.lag_p99_ms]} ms" "-" "<= 20 ms" "$(meets "${R[http.lag_p99_ms]}" '<=' 20)"
row "Writer after a kill -9 on 1M / 10M transfers over 10,000 wallets: resident memory" \
    "${R[history1m.rss_mib]} / ${R[history10m.rss_mib]} MiB ($(ratio "${R[history10m.rss_mib]}" "${R[history1m.rss_mib]}"))" "-" \
    "<= 512 MiB at 10M, <= 1.2x the 1M figure" \
    "$( [ "$(meets "${R[history10m.rss_mib]}" '<=' 512)" = yes ] && [ "$(meets "${R[history10m.rss_mib]}" '<=' "$(python3 -c "print(1.2 * ${R[history1m.rss_mib]:-0})")")" = yes ] && echo yes || echo no)"
row "Writer ready after a kill -9 on 1M / 10M transfers (snapshot + log after it + history index)" \
    "${R[history1m.ready_s]} / ${R[history10m.ready_s]} s" "-" "<= 2 s, <= 1.2x the 1M figure" \
    "$( [ "$(meets "${R[history10m.ready_s]}" '<=' 2)" = yes ] && [ "$(meets "${R[history10m.ready_s]}" '<=' "$(python3 -c "print(1.2 * ${R[history1m.ready_s]:-0})")")" = yes ] && echo yes || echo no)"
row "Snapshot of the writer's state on 1M / 10M transfers (history index on disk beside it)" \
    "${R[history1m.snapshot_mib]} / ${R[history10m.snapshot_mib]} MiB (index ${R[history1m.history_mib]} / ${R[history10m.history_mib]} MiB)" "-" \
    "<= 1.2x the 1M figure" \
    "$(meets "${R[history10m.snapshot_mib]}" '<=' "$(python3 -c "print(1.2 * ${R[history1m.snapshot_mib]:-0})")")"
row "kobo audit of 1M / 5M wallet transfers among 5,000 wallets: peak resident memory" \
    "${R[audit1m.audit_rss_mib]} / ${R[audit5m.audit_rss_mib]} MiB ($(ratio "${R[audit5m.audit_rss_mib]}" "${R[audit1m.audit_rss_mib]}"))" "-" \
    "<= 1.2x the 1M figure" \
    "$(meets "${R[audit5m.audit_rss_mib]}" '<=' "$(python3 -c "print(1.2 * ${R[audit1m.audit_rss_mib]:-0})")")"
row "kobo audit of 1M / 5M wallet transfers among 5,000 wallets: wall time (CPU time, every thread)" \
    "${R[audit1m.audit_s]} s (${R[audit1m.audit_cpu_s]} s) / ${R[audit5m.audit_s]} s (${R[audit5m.audit_cpu_s]} s)" "-" "-" "-"
row "kobo serve resident memory after kill -9 and restart, following $(n "${R[http.mem_transfers]}") HTTP transfers" \
    "${R[http.mem_rss_after_mib]} MiB (${R[http.mem_rss_before_mib]} MiB before the kill); ready in ${R[http.mem_ready_s]} s" "-" \
    "<= 300 MiB" "$(meets "${R[http.mem_rss_after_mib]}" '<=' 300)"
row "Writer resident memory per wallet ($(n "${WALLETS:-1000000}") wallets)" \
    "${R[memory.bytes_per_wallet]} bytes ($(python3 -c "print(round(${R[memory.bytes_per_wallet]} * 1e6 / 2**20))" 2>/dev/null || echo -) MiB per million)" \
    "-" "<= 300 bytes" "$(meets "${R[memory.bytes_per_wallet]}" '<=' 300)"

echo
echo "Kobo Ledger benchmarks, $started, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "Machine: $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/Mem:/{print $2}') GiB RAM," \
     "Linux $(uname -r); disk $fsync; load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after"
echo "Load generator (wrk, 2 threads) on the same cores."
echo "The machine, same run: nginx (1 worker, return 200 of 60 bytes, wrk -t1 -c64) $(n "$ngx") req/s (p99 ${R[peers.nginx_p99_ms]} ms);" \
     "pgbench TPC-B (scale 20, 32 clients, synchronous commit) $(n "$pg") tps (mean ${R[peers.pgbench_latency_ms]} ms)"
echo
printf '| %s | %s | %s | %s | %s |\n' Metric Measured "Against the machine" Target Met
printf '|---|---|---|---|---|\n'
for r in "${rows[@]}"; do IFS='|' read -r a b c d e <<<"$r"; printf '| %s | %s | %s | %s | %s |\n' "$a" "$b" "$c" "$d" "$e"; done
