#!/usr/bin/env bash
# Wallet transfers per second over HTTP: starts `kobo serve` on a fresh data dir (embedded log,
# fsync on every group commit), creates and funds 100 wallets, then runs wrk with 64
# keep-alive connections. Usage: bench/http_transfers.sh BUILD_DIR [SECONDS]
set -euo pipefail
build=${1:-build-bench}
seconds=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
data=$(mktemp -d /tmp/kobo-bench.XXXXXX)
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$build/kobo" serve --listen 127.0.0.1:$port --data-dir "$data" --log-level warn >/dev/null 2>"$data/stderr" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf localhost:$port/healthz >/dev/null && break; sleep 0.1; done
key=$(python3 -c "import json;print(json.load(open('$data/credentials.json'))['testSecretKey'])")
wallets=$(python3 "$here/setup_wallets.py" "http://127.0.0.1:$port" "$key" 100)
KOBO_KEY=$key KOBO_WALLETS=$wallets wrk -t2 -c64 -d${seconds}s --latency -s "$here/transfer.lua" "http://127.0.0.1:$port"
