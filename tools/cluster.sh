#!/usr/bin/env bash
# A Kobo cluster on loopback: one Kafka broker (tools/kafka/broker.sh) and three `kobo serve`
# nodes of one cluster on its topic (docs/architecture.md, "Cluster").
#
#   tools/cluster.sh start DIR        starts the broker in DIR/kafka and nodes n1, n2, n3 (data dirs
#                                     DIR/n1 …, logs DIR/n1/kobo.log) on free loopback ports, waits
#                                     until each answers /readyz and the group has given out every
#                                     partition, and prints each node's URL (also in DIR/nodes) and
#                                     the admin key (DIR/admin-key) that creates businesses (any
#                                     node answers any request; the cluster's secret, for GET
#                                     /v1/cluster, is in DIR/cluster-secret; the nodes' shared
#                                     master key is DIR/master-key):
#                                       curl -XPOST URL/v1/admin/businesses -H "x-admin-key: $(cat DIR/admin-key)" -d '{"name":"Ada"}'
#   tools/cluster.sh stop DIR         stops the nodes (SIGTERM: each hands its partitions over), then the broker
#   tools/cluster.sh kill DIR [NODE]  kill -9: node NODE (n1, n2 or n3) alone, or every node and the broker
#   tools/cluster.sh restart DIR NODE starts node NODE again on its port and data dir
#   tools/cluster.sh add DIR NODE     starts a new node NODE (n4, …) with an empty data dir on a free
#                                     port: it joins through a checkpoint of a peer's views and
#                                     writer state (docs/architecture.md, "A new node"), and is
#                                     listed in DIR/nodes once ready
#
# KOBO (default build/kobo) is the binary; KOBO_CLUSTER_NODES (default 3) how many nodes;
# KOBO_CLUSTER_ARGS more `kobo serve` flags for every node. Each node runs with
# session.timeout.ms=6000, so a node killed -9 has its partitions taken over within about 7 s.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cmd="${1:-}"; dir="${2:-}"; node="${3:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|kill|restart|add DIR [NODE]" >&2; exit 2; }
kobo="${KOBO:-$root/build/kobo}"
nodes="${KOBO_CLUSTER_NODES:-3}"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Every node started in DIR (n1, n2, … and those added), by name.
node_names() { awk '{print $1}' "$dir/nodes" 2>/dev/null; }

start_node() {  # start_node NAME: its port is in DIR/NAME/port
  local name="$1" d="$dir/$1" port
  port="$(cat "$d/port")"
  # shellcheck disable=SC2086
  setsid "$kobo" serve --listen "127.0.0.1:$port" --data-dir "$d" \
    --kafka-brokers "$(cat "$dir/kafka/bootstrap")" --cluster kobo --node-id "$name" \
    --advertise "http://127.0.0.1:$port" --admin-key-file "$dir/admin-key" --master-key-file "$dir/master-key" \
    --cluster-secret-file "$dir/cluster-secret" \
    --kafka-config session.timeout.ms=6000 ${KOBO_CLUSTER_ARGS:-} >>"$d/kobo.stdout" 2>>"$d/kobo.log" &
  echo $! >"$d/pid"
}

wait_ready() {  # wait_ready NAME
  local port i
  port="$(cat "$dir/$1/port")"
  for i in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$(cat "$dir/$1/pid")" 2>/dev/null; then
      echo "cluster.sh: node $1 exited; its log:" >&2; tail -20 "$dir/$1/kobo.log" >&2; return 1
    fi
    sleep 0.1
  done
  echo "cluster.sh: node $1 is not ready after 60 s" >&2; return 1
}

# Every partition owned by some node, as the nodes' /metrics say (kobo_partition_owned).
wait_assigned() {
  local i owned
  for i in $(seq 1 300); do
    owned=0
    for n in $(seq 1 "$nodes"); do
      owned=$((owned + $(curl -sf "http://127.0.0.1:$(cat "$dir/n$n/port")/metrics" 2>/dev/null |
        grep -c '^kobo_partition_owned{.*} 1' || true)))
    done
    [ "$owned" -ge "$(cat "$dir/partitions")" ] && return 0
    sleep 0.1
  done
  echo "cluster.sh: the partitions were not all assigned within 30 s" >&2; return 1
}

stop_pid() {  # stop_pid FILE SIGNAL
  [ -f "$1" ] || return 0
  local pid; pid="$(cat "$1")"
  kill "-$2" "$pid" 2>/dev/null || return 0
  [ "$2" = KILL ] && return 0
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

case "$cmd" in
  start)
    [ -x "$kobo" ] || { echo "cluster.sh: no $kobo (make build first)" >&2; exit 1; }
    mkdir -p "$dir"
    "$here/kafka/broker.sh" start "$dir/kafka" >/dev/null
    python3 -c 'import secrets; print(secrets.token_hex(24))' >"$dir/admin-key"
    chmod 600 "$dir/admin-key"
    # The secret the nodes forward commands with (and GET /v1/cluster takes): 0600.
    (umask 077; python3 -c 'import secrets; print(secrets.token_hex(24))' >"$dir/cluster-secret")
    # The deployment's master key, one for every node (docs/security.md, "Keys at rest").
    python3 -c 'import secrets; print(secrets.token_hex(32))' >"$dir/master-key"
    chmod 600 "$dir/master-key"
    echo "${KOBO_PARTITIONS:-6}" >"$dir/partitions"
    : >"$dir/nodes"
    for n in $(seq 1 "$nodes"); do
      mkdir -p "$dir/n$n"
      free_port >"$dir/n$n/port"
      echo "n$n http://127.0.0.1:$(cat "$dir/n$n/port")" >>"$dir/nodes"
    done
    start_node n1  # the first creates the topic, so the others find it
    wait_ready n1
    for n in $(seq 2 "$nodes"); do start_node "n$n"; done
    for n in $(seq 2 "$nodes"); do wait_ready "n$n"; done
    wait_assigned
    echo "kafka $(cat "$dir/kafka/bootstrap")"
    cat "$dir/nodes"
    echo "admin key in $dir/admin-key"
    ;;
  stop)
    for n in $(node_names); do stop_pid "$dir/$n/pid" TERM; done
    "$here/kafka/broker.sh" stop "$dir/kafka" >/dev/null || true
    ;;
  kill)
    if [ -n "$node" ]; then
      stop_pid "$dir/$node/pid" KILL
    else
      for n in $(node_names); do stop_pid "$dir/$n/pid" KILL; done
      "$here/kafka/broker.sh" kill "$dir/kafka" >/dev/null || true
    fi
    ;;
  restart)
    [ -n "$node" ] || { echo "usage: $0 restart DIR NODE" >&2; exit 2; }
    start_node "$node"
    wait_ready "$node"
    ;;
  add)
    [ -n "$node" ] || { echo "usage: $0 add DIR NODE" >&2; exit 2; }
    [ ! -e "$dir/$node" ] || { echo "cluster.sh: $dir/$node exists; add a node of a new name" >&2; exit 1; }
    mkdir -p "$dir/$node"
    free_port >"$dir/$node/port"
    start_node "$node"
    wait_ready "$node"
    echo "$node http://127.0.0.1:$(cat "$dir/$node/port")" | tee -a "$dir/nodes"
    ;;
  *)
    echo "usage: $0 start|stop|kill|restart|add DIR [NODE]" >&2; exit 2 ;;
esac
