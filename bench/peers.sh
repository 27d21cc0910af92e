#!/usr/bin/env bash
# The machine's own yardsticks for `make bench` (issue 13): every kobo figure is printed beside
# what this machine does, in the same run, for two well-known servers:
#   nginx    one worker serving a static 61-byte JSON body, wrk with the settings kobo's GET
#            row uses (2 threads, 64 keep-alive connections)
#   pgbench  PostgreSQL's TPC-B (scale 20, 32 clients, 2 threads, synchronous commit, fsync on):
#            a durable write transaction per request, as a transfer is
# Both run on loopback from a scratch dir and are stopped at the end. Prints
# `RESULT nginx_rps=… nginx_p99_ms=… pgbench_tps=… pgbench_latency_ms=…` for run.sh.
#
#   bench/peers.sh [SECONDS]
set -euo pipefail
seconds=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/kobo-peers.XXXXXX")
chmod 755 "$scratch"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$scratch/pg/postmaster.pid" ] && runuser -u postgres -- "$pgbin/pg_ctl" -D "$scratch/pg" -m immediate stop >/dev/null 2>&1
  rm -rf "$scratch"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# ---- nginx: one worker, a static JSON body ----
port=$(free_port)
mkdir -p "$scratch/nginx/logs"
printf '{"status":true,"message":"ok","data":{"balance":100000,"id":1}}' >"$scratch/nginx/wallet.json"
cat >"$scratch/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $scratch/nginx/nginx.pid;
error_log $scratch/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  default_type application/json;
  server {
    listen 127.0.0.1:$port;
    root $scratch/nginx;
    location / { try_files /wallet.json =404; }
  }
}
CONF
nginx -p "$scratch/nginx" -c "$scratch/nginx/nginx.conf" &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.05; done
out=$(wrk -t2 -c64 -d"${seconds}"s --timeout 10s -s "$here/wrk_report.lua" "http://127.0.0.1:$port/")
echo "$out" | grep -v '^WRK ' >&2
wrk_line=$(echo "$out" | grep '^WRK ')
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }
nginx_rps=$(printf '%.0f' "$(field "$wrk_line" rps)")
nginx_p99_ms=$(python3 -c "print(f'{$(field "$wrk_line" p99_us)/1000:.1f}')")
kill "${pids[0]}" 2>/dev/null || true

# ---- pgbench: TPC-B, synchronous commit ----
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
chown postgres "$scratch"
runuser -u postgres -- "$pgbin/initdb" -D "$scratch/pg" -A trust -U postgres >/dev/null
pgport=$(free_port)
runuser -u postgres -- "$pgbin/pg_ctl" -D "$scratch/pg" -l "$scratch/pg.log" -w \
  -o "-p $pgport -k $scratch -c listen_addresses='' -c fsync=on -c synchronous_commit=on -c max_connections=64" start >/dev/null
pg() { runuser -u postgres -- "$pgbin/pgbench" -h "$scratch" -p "$pgport" "$@"; }
pg -i -s 20 -q postgres >/dev/null 2>&1
pgout=$(pg -c 32 -j 2 -T "$seconds" -M prepared postgres 2>&1)
echo "$pgout" | grep -E 'tps|latency' >&2
pgbench_tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$pgout" | head -1)
pgbench_latency_ms=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$pgout")
echo "RESULT nginx_rps=$nginx_rps nginx_p99_ms=$nginx_p99_ms pgbench_tps=$(printf '%.0f' "$pgbench_tps")" \
     "pgbench_latency_ms=$pgbench_latency_ms"
