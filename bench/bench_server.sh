# Sourced by http_bench.sh and cores_bench.sh: `kobo serve` on a fresh data dir with a business
# and 100 funded wallets, and the helpers that read wrk's report (transfer.lua's and
# get_wallet.lua's WRK line, wrk_report.lua).
#
# Before sourcing, the script sets: build (the build dir holding kobo), here (bench/), data (a
# fresh dir), serve_flags (an array of flags for kobo serve) and, optionally, in_front (an array
# the server's command line starts with: `taskset -c 0-1`, say) and load_front (the same for
# the load generator's). Sourcing picks a free port and
# an admin key (url, port, admin_key; KOBO_ADMIN_KEY exported: businesses are the admin API's
# to make).
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
admin_key=bench-admin-key-$$-0123456789abcdef-bench
export KOBO_ADMIN_KEY=$admin_key
export KOBO_BENCH_DIR=$here
[ -n "${in_front+x}" ] || in_front=()
[ -n "${load_front+x}" ] || load_front=()

serve() {  # starts kobo serve on the data dir and waits until it is ready (its pid in `pid`)
  "${in_front[@]}" "$build/kobo" serve --listen 127.0.0.1:$port --data-dir "$data" --log-level warn \
    "${serve_flags[@]}" >/dev/null 2>>"$data/stderr" &
  pid=$!
  for _ in $(seq 600); do curl -sf "$url/readyz" >/dev/null && break; sleep 0.05; done
}

# BUSINESSES PARTITIONS [COMMAND...]: a business made with the admin API (its test key in
# KOBO_KEY) and 100 funded wallets (KOBO_WALLETS, as transfer.lua reads them): of that business,
# or spread over BUSINESSES businesses in as many partitions (setup_wallets.py), set up under
# COMMAND when one is given.
funded_wallets() {
  local businesses=$1 partitions=$2
  shift 2
  KOBO_KEY=$(curl -sf -XPOST "$url/v1/admin/businesses" -H "x-admin-key: $admin_key" -d '{"name":"bench"}' |
    python3 -c "import json,sys;print(json.load(sys.stdin)['data']['credentials']['testSecretKey'])")
  export KOBO_KEY
  if [ "$businesses" -gt 1 ]; then
    KOBO_WALLETS=$("$@" python3 "$here/setup_wallets.py" "$url" "$KOBO_KEY" 100 "$businesses" "$partitions" "$admin_key")
  else
    KOBO_WALLETS=$("$@" python3 "$here/setup_wallets.py" "$url" "$KOBO_KEY" 100)
  fi
  export KOBO_WALLETS
}

# wrk's own summary goes to stderr; the WRK line it prints last is returned.
run_wrk() {  # SCRIPT SECONDS [THREADS, default 2] [CONNECTIONS, default $connections]
  local out
  out=$(KOBO_WRK_THREADS=${3:-2} "${load_front[@]}" wrk -t"${3:-2}" -c"${4:-$connections}" -d"$2"s --timeout 10s -s "$here/$1" "$url")
  echo "$out" | grep -v '^WRK ' >&2
  echo "$out" | grep '^WRK '
}
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }  # LINE KEY: KEY's value in a RESULT/WRK line
ms() { python3 -c "print(f'{$1/1000:.1f}')"; }            # microseconds as milliseconds
