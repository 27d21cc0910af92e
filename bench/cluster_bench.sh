#!/usr/bin/env bash
# The cluster's figures of docs/capacity.md: a broker and three nodes on loopback
# (tools/cluster.sh), one business (so one partition) with 100 funded wallets, then wrk (2
# threads, CONNECTIONS keep-alive connections) posting transfers for SECONDS:
#   local      to the node that writes the business's partition (decided there)
#   forwarded  to another node (forwarded to the owner, its answer returned as it is)
# at 64 and at 384 connections (CONNECTION_COUNTS). Each run prints a `RESULT` line: the
# partition's acknowledged rate and the p50/p99 latency. Flags after `--` go to every node.
#
#   bench/cluster_bench.sh [SECONDS] [-- SERVE_FLAGS...]     (KOBO: the binary, default build/kobo)
set -euo pipefail
seconds=${1:-10}
shift $(( $# < 1 ? $# : 1 ))
[ "${1:-}" = "--" ] && shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/kobo-cluster-bench.XXXXXX")
export KOBO_CLUSTER_ARGS="--log-level warn $*"
trap '"$root/tools/cluster.sh" stop "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
"$root/tools/cluster.sh" start "$dir" >/dev/null
admin=$(cat "$dir/admin-key")
mapfile -t urls < <(awk '{print $2}' "$dir/nodes")
# The admin API is not forwarded: a node that does not write the new business's partition answers
# 503; the next one is asked.
key=
for _ in 1 2 3 4 5 6 7 8 9 10; do
  for u in "${urls[@]}"; do
    key=$(curl -sf -XPOST "$u/v1/admin/businesses" -H "x-admin-key: $admin" -H 'content-type: application/json' \
      -d '{"name":"bench"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["credentials"]["testSecretKey"])' \
      2>/dev/null) && break 2
  done
  sleep 0.5
done
export KOBO_BENCH_DIR=$here KOBO_KEY=$key
export KOBO_WALLETS=$(python3 "$here/setup_wallets.py" "${urls[0]}" "$key" 100)
# The business's partition, from a command's Kobo-Position token (k1.<partition>-<seq>), and its
# owner, from GET /v1/cluster.
IFS=, read -r w1 w2 _ <<<"$KOBO_WALLETS"
partition=$(curl -sf -D - -o /dev/null -XPOST "${urls[0]}/v1/transactions/transfer" -H "x-service-key: $key" \
  -H 'content-type: application/json' -d "{\"source\":\"$w1\",\"sourceType\":\"VirtualAccount\",
  \"destination\":\"$w2\",\"destinationType\":\"VirtualAccount\",\"amount\":10000,\"currency\":\"NGN\",
  \"narration\":\"probe\",\"reference\":\"probe-$$\"}" | tr -d '\r' |
  sed -n 's/^[Kk]obo-[Pp]osition: k1\.\([0-9]*\)-.*/\1/p')
owner=$(curl -sf "${urls[0]}/v1/cluster" -H "x-cluster-secret: $(cat "$dir/cluster-secret")" |
  python3 -c "import json,sys; print(json.load(sys.stdin)['data']['assignment'][$partition]['url'])")
other=${urls[0]}
[ "$other" = "$owner" ] && other=${urls[1]}
echo "partition $partition: owner $owner, forwarding through $other" >&2
for c in ${CONNECTION_COUNTS:-64 384}; do
  for where in local forwarded; do
    url=$owner
    [ "$where" = forwarded ] && url=$other
    out=$(wrk -t2 -c"$c" -d"$seconds"s --timeout 10s -s "$here/transfer.lua" "$url")
    line=$(grep '^WRK ' <<<"$out")
    echo "RESULT cluster_$where connections=$c ${line#WRK }"
  done
done
