#!/usr/bin/env bash
# The machine's own yardsticks for `make bench`: every kobo figure is printed beside what this
# machine does, in the same run, for two well-known servers:
#   nginx    one worker answering a 60-byte JSON body with `return 200` (no file read), wrk with
#            one thread, 64 keep-alive connections and no script
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

# ---- nginx: one worker answering a 60-byte body from its configuration ----
# As a strict peer sets it up: `return 200` (no file to read), one worker, and wrk with one thread
# and no script (a Lua script costs wrk, not the server, and would flatter the ratio).
port=$(free_port)
mkdir -p "$scratch/nginx/logs"
body='{"status":true,"message":"ok","data":{"balance":100,"id":1}}'
[ ${#body} -eq 60 ] || { echo "peers.sh: the body is ${#body} bytes, not 60" >&2; exit 1; }
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
    location / { return 200 '$body'; }
  }
}
CONF
nginx -p "$scratch/nginx" -c "$scratch/nginx/nginx.conf" &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.05; done
[ "$(curl -sf "http://127.0.0.1:$port/")" = "$body" ] || { echo "peers.sh: nginx does not answer the body" >&2; exit 1; }
out=$(wrk -t1 -c64 -d"${seconds}"s --latency "http://127.0.0.1:$port/")
echo "$out" >&2
nginx_rps=$(printf '%.0f' "$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")")
# wrk --latency prints "99%  1.23ms" (us, ms or s).
nginx_p99_ms=$(python3 -c "
import re, sys
m = re.search(r'^\s*99%\s+([0-9.]+)(us|ms|s)\s*$', sys.argv[1], re.M)
v, u = float(m.group(1)), m.group(2)
print(f'{v / 1000 if u == \"us\" else v * 1000 if u == \"s\" else v:.1f}')" "$out")
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
