#!/usr/bin/env bash
# The HTTP rows of `make bench`: starts `kobo serve` on a fresh data dir (fsync on every group
# commit), creates and funds 100 wallets, then runs wrk (CONNECTIONS keep-alive connections,
# default 64; 2 threads, 1 for the GETs as for nginx's row of bench/peers.sh) for each phase
# asked for, on the same server:
#   transfers  POST /v1/transactions/transfer at full speed (the peak)
#   get        GET /v1/virtual-accounts/{id} over the 100 wallets
#   lag        transfers paced to 80% of the peak; the projection lag (event appended to visible
#              in the views, kobo_projection_lag_seconds on /metrics) over that run
#   memory     transfers at full speed for MEMORY_SECONDS (default 60), then kill -9 and a restart
#              on the same data dir: the server's resident memory after it (and before the kill),
#              how long it took to be ready, and the views' keys and bytes per transfer then
# The transfers phase also prints the server's CPU per transfer by thread (bench/thread_cpu.py):
# the projector's, the writer's, the HTTP threads'.
# Each phase prints a `RESULT key=value ...` line for run.sh. Flags after `--` go to `kobo serve`
# (another backend, say). BUSINESSES=B (default 1) spreads the 100 wallets over B businesses in B
# different partitions (of PARTITIONS, default 6; created with the admin API), and each transfer
# is between two wallets of one business: writes that Kafka may commit side by side.
#
#   bench/http_bench.sh BUILD_DIR [SECONDS] [PHASES] [-- SERVE_FLAGS...]
#   e.g. bench/http_bench.sh build-bench 10 transfers,get,lag
set -euo pipefail
build=${1:-build-bench}
seconds=${2:-10}
phases=${3:-transfers,get,lag}
shift $(( $# < 3 ? $# : 3 ))
[ "${1:-}" = "--" ] && shift
here=$(cd "$(dirname "$0")" && pwd)
data=$(mktemp -d "${TMPDIR:-/tmp}/kobo-bench.XXXXXX")
serve_flags=("$@")
connections=${CONNECTIONS:-64}
businesses=${BUSINESSES:-1}
partitions=${PARTITIONS:-6}
if [ "$businesses" -gt 1 ]; then serve_flags+=(--partitions "$partitions"); fi
source "$here/bench_server.sh"
serve
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
funded_wallets "$businesses" "$partitions"

scrape() { curl -sf "$url/metrics" >"$1"; }

peak=0
if [[ ,$phases, == *,transfers,* || ,$phases, == *,lag,* ]]; then
  scrape "$data/m0"
  python3 "$here/thread_cpu.py" "$pid" >"$data/cpu0"
  r=$(run_wrk transfer.lua "$seconds")
  sleep 0.5  # the last acknowledged writes reach the views, whose CPU is counted
  cpu=$(python3 "$here/thread_cpu.py" "$pid" "$data/cpu0" "$(python3 -c "print(round($(field "$r" rps) * $seconds))")")
  scrape "$data/m1"
  peak=$(field "$r" rps)
  read -r batch_p50 batch_mean _ < <(python3 "$here/metrics_delta.py" "$data/m0" "$data/m1" kobo_writer_batch_commands 0.5)
  read -r _ append_mean _ < <(python3 "$here/metrics_delta.py" "$data/m0" "$data/m1" kobo_log_append_duration_seconds 0.5)
  echo "transfers: $(field "$r" rps)/s, p50 $(ms "$(field "$r" p50_us)") ms, p99 $(ms "$(field "$r" p99_us)") ms," \
       "max $(ms "$(field "$r" max_us)") ms; non-2xx $(field "$r" non2xx), socket errors $(field "$r" errors);" \
       "$(printf '%.0f' "$batch_mean") commands per group commit, $(python3 -c "print(f'{$append_mean*1000:.1f}')") ms per synced append;" \
       "$businesses business(es)" >&2
  if [[ ,$phases, == *,transfers,* ]]; then
    echo "CPU per transfer, by thread (us): $cpu" >&2
    echo "RESULT http_tps=$(printf '%.0f' "$peak") http_p50_ms=$(ms "$(field "$r" p50_us)")" \
         "http_p99_ms=$(ms "$(field "$r" p99_us)") http_max_ms=$(ms "$(field "$r" max_us)") http_non2xx=$(field "$r" non2xx)" \
         "$cpu"
  fi
fi

if [[ ,$phases, == *,get,* ]]; then
  # One wrk thread, as nginx's row measures its peer: the ratio compares two servers under the
  # same load generator (this one also runs a script, which nginx's row does not).
  r=$(run_wrk get_wallet.lua "$seconds" 1)
  echo "RESULT get_rps=$(printf '%.0f' "$(field "$r" rps)") get_p50_ms=$(ms "$(field "$r" p50_us)")" \
       "get_p99_ms=$(ms "$(field "$r" p99_us)") get_non2xx=$(field "$r" non2xx)"
fi

if [[ ,$phases, == *,lag,* ]]; then
  # Transfers paced to 80% of the peak on a schedule (transfer.lua's KOBO_RATE). wrk shares the
  # two cores with the server and keeps about 95% of a schedule at this load (slots it is late
  # for are caught up only as fast as 64 connections answer), so a short run measures what share
  # it keeps, and the schedule of the run measured is raised by that share.
  target=$(python3 -c "print(round($peak * 0.8))")
  r=$(KOBO_RATE=$target run_wrk transfer.lua 3 2>/dev/null)
  target=$(python3 -c "print(round($target * min(1.25, $target / $(field "$r" rps))))")
  scrape "$data/m2"
  r=$(KOBO_RATE=$target run_wrk transfer.lua "$seconds")
  sleep 0.5  # the last acknowledged writes reach the views
  scrape "$data/m3"
  read -r lag_p99 lag_mean lag_n < <(python3 "$here/metrics_delta.py" "$data/m2" "$data/m3" kobo_projection_lag_seconds 0.99)
  rate=$(field "$r" rps)
  echo "lag: $(printf '%.0f' "$rate") transfers/s ($(python3 -c "print(f'{100*$rate/$peak:.0f}')")% of the peak, paced to $target/s)," \
       "$lag_n events applied, lag mean $(python3 -c "print(f'{$lag_mean*1000:.1f}')") ms" >&2
  echo "RESULT lag_p99_ms=$(python3 -c "print(f'{$lag_p99*1000:.1f}')") lag_tps=$(printf '%.0f' "$rate")" \
       "lag_pct=$(python3 -c "print(f'{100*$rate/$peak:.0f}')")"
fi

if [[ ,$phases, == *,memory,* ]]; then
  mem_seconds=${MEMORY_SECONDS:-60}
  r=$(run_wrk transfer.lua "$mem_seconds")
  transfers=$(python3 -c "print(round($(field "$r" rps) * $mem_seconds))")
  rss_before=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  started=$(date +%s.%N)
  serve
  ready_s=$(python3 -c "print(f'{$(date +%s.%N) - $started:.2f}')")
  sleep 2  # the snapshotter's copy of the hot state is in place
  rss_after=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
  echo "memory: $transfers transfers in $mem_seconds s; resident $((rss_before / 1024)) MiB before the kill -9," \
       "$((rss_after / 1024)) MiB after the restart, ready in $ready_s s" >&2
  # The views at rest after the run: their keys by tag and their bytes on disk (the restart wrote
  # what the write-ahead log held into files), over the wallet transfers they hold (every phase's).
  # At rest means no compaction under way: one counts its input files and its output so far
  # (195 or 350 B per transfer from the same run, by when it was looked at), so the size is
  # taken once it held still for two seconds (a minute at most).
  last=-1 still=0
  for _ in $(seq 60); do
    size=$(du -sb "$data/views" | cut -f1)
    if [ "$size" = "$last" ]; then still=$((still + 1)); else still=0; fi
    [ "$still" -ge 2 ] && break
    last=$size
    sleep 1
  done
  views=$("$build/bench/kobo_restart_bench" keys --data-dir "$data" | tee >(cat >&2) | grep '^RESULT ')
  echo "RESULT mem_transfers=$transfers mem_rss_before_mib=$((rss_before / 1024)) mem_rss_after_mib=$((rss_after / 1024))" \
       "mem_ready_s=$ready_s ${views#RESULT }"
fi
