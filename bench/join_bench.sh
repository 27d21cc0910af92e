#!/usr/bin/env bash
# A new cluster node's readiness on a large topic (docs/architecture.md, "A new node"): writes
# EVENTS events (default 1,000,000) through the Ledger into a topic of a fresh test broker
# (kobo_make_log --kafka-brokers), then times, from the process's start to its first /readyz 200:
#   replay      node n1, the cluster's first, with an empty data dir and --join-from replay: its
#               views and writer state rebuilt from the topic's offset 0 (what a new node did
#               before checkpoints, and still does with no peer)
#   checkpoint  node n2 with an empty data dir (--join-from auto): a checkpoint of n1's views,
#               history index and newest snapshot, checked against the topic, then the topic's tail
# Prints `RESULT join_replay_ready_s=… join_checkpoint_ready_s=… join_checkpoint_bytes=…
# join_events=…` for run.sh.
#
#   bench/join_bench.sh [BUILD_DIR] [EVENTS]      e.g. bench/join_bench.sh build-bench 1000000
#
# Needs kobo and bench/kobo_make_log of BUILD_DIR (configured with -DKOBO_BENCH=ON) and the
# test broker's jars (make kafka). KEEP=1 keeps the scratch dir (the nodes' logs).
set -euo pipefail
build=$(cd "${1:-build-bench}" && pwd)
events=${2:-1000000}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/kobo-join-bench.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  "$root/tools/kafka/broker.sh" stop "$dir/kafka" >/dev/null 2>&1 || true
  [ "${KEEP:-0}" = 1 ] && echo "kept $dir" >&2 || rm -rf "$dir"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.2f}')"; }

bootstrap=$("$root/tools/kafka/broker.sh" start "$dir/kafka")
topic=bench.join.$$
(umask 077; python3 -c 'import secrets; print(secrets.token_hex(24))' >"$dir/cluster-secret"
 python3 -c 'import secrets; print(secrets.token_hex(32))' >"$dir/master-key")

echo "== writing $events events into topic $topic" >&2
"$build/bench/kobo_make_log" --data-dir "$dir/make-log" --events "$events" --kafka-brokers "$bootstrap" \
  --kafka-topic "$topic" >&2

# start NAME JOIN_FROM: a node of cluster `bench` with an empty data dir; sets `ready_s`, the
# seconds from its start to its first /readyz 200. (Not in a $(...): the node would hold its pipe.)
ready_s=
start() {
  local name=$1 from=$2 port t0
  port=$(free_port)
  mkdir -p "$dir/$name"
  echo "$port" >"$dir/$name/port"
  t0=$(now)
  "$build/kobo" serve --listen "127.0.0.1:$port" --data-dir "$dir/$name" --kafka-brokers "$bootstrap" \
    --kafka-topic "$topic" --cluster bench --node-id "$name" --cluster-secret-file "$dir/cluster-secret" \
    --master-key-file "$dir/master-key" --kafka-config session.timeout.ms=6000 --join-from "$from" \
    >"$dir/$name/kobo.stdout" 2>"$dir/$name/kobo.log" &
  pids+=($!)
  until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "join_bench: $name exited:" >&2; tail -5 "$dir/$name/kobo.log" >&2; exit 1; }
    sleep 0.05
  done
  ready_s=$(secs "$t0" "$(now)")
}

echo "== n1: a new node that replays the topic (--join-from replay)" >&2
start n1 replay
replay_s=$ready_s
echo "n1 ready in $replay_s s" >&2
# n1's writer writes a snapshot of the state it replayed at its first look, when that is at least
# a snapshot's worth (--snapshot-every-events, 100,000); a new node takes the newest one there is.
port1=$(cat "$dir/n1/port")
for _ in $(seq 1 $(( events >= 100000 ? 300 : 0 ))); do
  curl -sf "http://127.0.0.1:$port1/metrics" | grep -q '^kobo_snapshots_written_total [1-9]' && break
  sleep 0.1
done

echo "== n2: a new node that takes n1's checkpoint (--join-from auto)" >&2
start n2 auto
checkpoint_s=$ready_s
echo "n2 ready in $checkpoint_s s" >&2
joined=$(grep '"cluster: joined through a peer' "$dir/n2/kobo.log" || true)
[ -n "$joined" ] || { echo "join_bench: n2 did not join through a checkpoint:" >&2; grep -i checkpoint "$dir/n2/kobo.log" >&2; exit 1; }
echo "$joined" >&2
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])['$1'])" "$joined"; }
echo "RESULT join_replay_ready_s=$replay_s join_checkpoint_ready_s=$checkpoint_s" \
  "join_checkpoint_bytes=$(field bytes) join_checkpoint_s=$(field seconds) join_events=$(field events)"
