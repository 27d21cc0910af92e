#!/usr/bin/env bash
# Statements on a wallet with a long history: kobo_make_log writes EVENTS wallet
# transfers between the two wallets of one business (each wallet gets about EVENTS movements),
# `kobo replay` builds the views, `kobo_restart_bench statements` times a statement page of 100
# of a random window, the last page of the whole history and the balance at a random time (in
# process, from the views), then `kobo serve` on that data dir answers the whole statement as CSV
# over HTTP: lines per second, and the server's resident memory before and after (VmRSS, and
# VmHWM's growth, the peak).
#
#   bench/statement_bench.sh [BUILD_DIR] [EVENTS]     e.g. bench/statement_bench.sh build-bench 1000000
#
# Prints `RESULT statement_page_ms=… balance_at_ms=… csv_lines_per_s=… csv_rss_growth_mib=…`.
# KEEP=1 keeps the data dir; DIR=<a kept one> measures it again without writing a new log.
set -euo pipefail
build=${1:-build-bench}
events=${2:-1000000}
reuse=${DIR:-}
dir=${DIR:-$(mktemp -d "${TMPDIR:-/tmp}/kobo-statement-bench-XXXXXX")}
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  [ "${KEEP:-0}" = 1 ] || [ -n "$reuse" ] || rm -rf "$dir"
}
trap cleanup EXIT

if [ -z "$reuse" ]; then
  "$build/bench/kobo_make_log" --data-dir "$dir" --events "$events" --partitions 1 --businesses 1 --wallets 2 >&2
  "$build/kobo" replay --data-dir "$dir" >&2
fi
out=$("$build/bench/kobo_restart_bench" statements --data-dir "$dir")
echo "$out" >&2
result=$(echo "$out" | sed -n 's/^RESULT //p')
business=$(echo "$result" | tr ' ' '\n' | sed -n 's/^statement_business=//p')
wallet=$(echo "$result" | tr ' ' '\n' | sed -n 's/^statement_wallet=//p')

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$build/kobo" serve --listen "127.0.0.1:$port" --data-dir "$dir" --partitions 1 2>"$dir/serve.log" &
server=$!
for _ in $(seq 1800); do  # the writer replays the whole log first
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
  sleep 0.1
done
rss() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$server/status"; }
# bench_setup.h's businesses: the test key is "t" + the business id (its digest is in the log).
key="t$business"
curl -sf -H "x-service-key: $key" "http://127.0.0.1:$port/v1/virtual-accounts/$wallet/statement?perPage=1" >/dev/null
# Twice: the first CSV also fills the views' block cache (64 MiB, a cache of named size), the
# second shows what streaming itself holds.
csv_run() {  # PREFIX -> PREFIX_lines_per_s=… PREFIX_rss_growth_mib=…
  local rss_before rss_after start end lines
  rss_before=$(rss VmRSS)
  start=$(date +%s.%N)
  lines=$(curl -sf -H "x-service-key: $key" \
    "http://127.0.0.1:$port/v1/virtual-accounts/$wallet/statement?from=2000-01-01&format=csv" | wc -l)
  end=$(date +%s.%N)
  rss_after=$(rss VmRSS)
  python3 -c "
lines, s = $lines - 1, $end - $start
print(f'$1_lines={lines} $1_lines_per_s={lines / s:.0f} $1_rss_growth_mib={($rss_after - $rss_before) / 1024:.1f}')"
}
first=$(csv_run csv_cold)
second=$(csv_run csv)
echo "CSV statement: $first; again: $second; VmHWM $(rss VmHWM) kB" >&2
echo "RESULT $result $first $second"
