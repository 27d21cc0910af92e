#!/usr/bin/env bash
# A single-node Apache Kafka 3.9 broker (KRaft, broker+controller in one process) on loopback,
# for the tests and for local runs on the Kafka backend (docs/architecture.md section 8).
#
#   tools/kafka/broker.sh start DIR   formats a fresh KRaft log under DIR, starts the broker on
#                                     free loopback ports, waits until it answers and prints its
#                                     bootstrap address (also written to DIR/bootstrap)
#   tools/kafka/broker.sh stop DIR    stops it (SIGTERM, then SIGKILL after 20 s)
#   tools/kafka/broker.sh kill DIR    kill -9, for fault tests
#   tools/kafka/broker.sh restart DIR starts the stopped/killed broker again on the same ports and log
#   tools/kafka/broker.sh start DIR --secured
#                                     the same broker as production secures it: clients on SASL_SSL
#                                     (TLS with a CA made by openssl in DIR/tls, SCRAM-SHA-256/512 and
#                                     PLAIN for the user `kobo`), a KRaft StandardAuthorizer whose
#                                     ACLs allow `kobo` only the topics of $KOBO_KAFKA_TOPIC_PREFIXES
#                                     (prefixed; Read, Write, Describe, DescribeConfigs), the
#                                     transactional ids and the (never joined) consumer group `kobo.*`,
#                                     and deny it CreateTopics. An
#                                     operator's PLAINTEXT listener (a super user) is written to
#                                     DIR/admin-bootstrap; the client's librdkafka properties to
#                                     DIR/client.properties (the password is in DIR/sasl-password).
#   tools/kafka/broker.sh start DIR --cluster
#                                     three brokers (KRaft, each broker+controller, three voters) in
#                                     DIR/n1, DIR/n2, DIR/n3, as production runs them: replication
#                                     factor 3 for every topic (the service's, the transaction
#                                     state's), min.insync.replicas 2. DIR/bootstrap lists all three;
#                                     stop, kill and restart on DIR act on every node, on DIR/nK on
#                                     node K alone (its node.id is K: the broker id metadata names).
#
# The jars come from Maven Central through tools/kafka/pom.xml (`mvn package` copies them to
# tools/kafka/target/lib); Java is Debian's OpenJDK. Broker output goes to DIR/broker.log.
set -euo pipefail
trap 'echo "broker.sh: ${cmd:-?} failed at line $LINENO (exit $?)" >&2' ERR

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="$here/target/lib"
cmd="${1:-}"; dir="${2:-}"; mode="${3:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|kill|restart DIR [--secured]" >&2; exit 2; }
[ -z "$mode" ] || [ "$mode" = "--secured" ] || [ "$mode" = "--cluster" ] ||
  { echo "usage: $0 start DIR [--secured|--cluster]" >&2; exit 2; }
# The secured broker's client and the topics it may use (prefixes: the tests' topics have their own).
sasl_user=kobo
topic_prefixes="${KOBO_KAFKA_TOPIC_PREFIXES:-kobo.ledger.events it. contract. kafka-log-test. bench.}"

fetch_jars() {
  [ -f "$lib/kafka_2.13-3.9.0.jar" ] && return 0
  echo "broker.sh: fetching the Kafka jars from Maven Central" >&2
  (cd "$here" && mvn -q -B package) >&2
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

java_run() {  # java_run MAINCLASS ARGS...: the broker's classpath and a heap that suits a test box
  exec java -Xms256m -Xmx768m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$dir/log4j.properties" -cp "$lib/*" "$@"
}

# A CA and the broker's certificate for 127.0.0.1 and localhost, made fresh for each start.
make_certs() {
  local tls="$dir/tls"
  mkdir -p "$tls"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=kobo test CA" \
    -keyout "$tls/ca.key" -out "$tls/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$tls/broker.key" \
    -out "$tls/broker.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$tls/san.ext"
  openssl x509 -req -in "$tls/broker.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
    -days 2 -extfile "$tls/san.ext" -out "$tls/broker.pem" 2>/dev/null
  # Kafka's PEM key store: the private key (PKCS#8, encrypted with a scheme Java reads) and the chain.
  openssl pkcs8 -topk8 -v1 PBE-SHA1-3DES -in "$tls/broker.key" -passout "pass:$(cat "$dir/key-password")" \
    -out "$tls/broker.p8" 2>/dev/null
  cat "$tls/broker.p8" "$tls/broker.pem" "$tls/ca.pem" >"$tls/broker-keystore.pem"
}

# The ACLs of the service's user, through the operator's listener.
add_acls() {
  local admin; admin="$(cat "$dir/admin-bootstrap")"
  local topic_args=()
  for p in $topic_prefixes; do topic_args+=(--topic "$p"); done
  (java_run kafka.admin.AclCommand --bootstrap-server "$admin" --add --allow-principal "User:$sasl_user" \
     --operation Read --operation Write --operation Describe --operation DescribeConfigs \
     "${topic_args[@]}" --resource-pattern-type prefixed) >>"$dir/broker.log" 2>&1
  (java_run kafka.admin.AclCommand --bootstrap-server "$admin" --add --allow-principal "User:$sasl_user" \
     --operation Write --operation Describe --transactional-id kobo. --resource-pattern-type prefixed) \
     >>"$dir/broker.log" 2>&1
  # Readers name a consumer group (librdkafka's assign() wants one) that is never joined.
  (java_run kafka.admin.AclCommand --bootstrap-server "$admin" --add --allow-principal "User:$sasl_user" \
     --operation Read --operation Describe --group kobo. --resource-pattern-type prefixed) >>"$dir/broker.log" 2>&1
  (java_run kafka.admin.AclCommand --bootstrap-server "$admin" --add --deny-principal "User:$sasl_user" \
     --operation Create --cluster) >>"$dir/broker.log" 2>&1
}

spawn() {  # starts the broker of $dir in the background; its log's size before is in $dir/from
  echo $(( $(stat -c %s "$dir/broker.log" 2>/dev/null || echo 0) + 1 )) >"$dir/from"  # only this start's lines
  java_run kafka.Kafka "$dir/server.properties" >>"$dir/broker.log" 2>&1 &
  echo $! >"$dir/pid"
}

wait_started() {  # waits until the broker of $dir answers; prints its address (also in $dir/bootstrap)
  local port from; port="$(cat "$dir/port")"; from="$(cat "$dir/from")"
  for _ in $(seq 1 240); do
    if tail -c "+$from" "$dir/broker.log" | grep -q 'Kafka Server started' &&
       python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; then
      echo "127.0.0.1:$port" >"$dir/bootstrap"
      echo "127.0.0.1:$port"
      return 0
    fi
    kill -0 "$(cat "$dir/pid")" 2>/dev/null || { echo "broker.sh: the broker exited; see $dir/broker.log" >&2; tail -20 "$dir/broker.log" >&2; return 1; }
    sleep 0.5
  done
  echo "broker.sh: the broker did not start within 120 s; see $dir/broker.log" >&2
  return 1
}

launch() { spawn && wait_started; }

stop() {
  local sig="$1" pid
  [ -f "$dir/pid" ] || return 0
  pid="$(cat "$dir/pid")"
  kill "-$sig" "$pid" 2>/dev/null || { rm -f "$dir/pid"; return 0; }
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || { rm -f "$dir/pid"; return 0; }; sleep 0.5; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$dir/pid"
}

# The properties every node has: node.id, the controller voters, the replication factor and
# min.insync.replicas of every topic (the service's, the transaction state's, the offsets').
write_node_files() {  # NODE_ID VOTERS RF MIN_ISR, into $dir (after its listeners)
  local node_id="$1" voters="$2" rf="$3" min_isr="$4"
  cat >>"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=$node_id
controller.quorum.voters=$voters
controller.listener.names=CONTROLLER
log.dirs=$dir/log
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$min_isr
transaction.state.log.num.partitions=1
default.replication.factor=$rf
min.insync.replicas=$min_isr
group.initial.rebalance.delay.ms=0
# Aborted transactions of a killed writer are cleaned up within a second, not a minute.
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
transaction.remove.expired.transaction.cleanup.interval.ms=3600000
num.network.threads=2
num.io.threads=2
background.threads=2
log.cleaner.enable=false
PROPS
  cat >"$dir/log4j.properties" <<PROPS
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$dir/broker.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
PROPS
}

new_cluster_id() {
  # A cluster id as Kafka's Uuid.randomUuid() makes one: 16 random bytes in base64url, never
  # starting with '-', which the storage tool's argument parser would take for an option.
  python3 -c '
import base64, uuid
while True:
  s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
  if not s.startswith("-"):
      print(s)
      break'
}

format_log() {  # formats $dir's KRaft log with $cluster_id (and the SCRAM users of ${scram[@]})
  if ! (java_run kafka.tools.StorageTool format -t "$cluster_id" -c "$dir/server.properties" \
        --ignore-formatted "${scram[@]}") >>"$dir/broker.log" 2>&1; then
    echo "broker.sh: formatting the KRaft log failed; see $dir/broker.log" >&2
    tail -20 "$dir/broker.log" >&2
    exit 1
  fi
}

nodes=(n1 n2 n3)

start_cluster() {  # three nodes under $dir, each broker+controller; all three are voters
  local top="$dir" voters="" i ports=() cports=()
  for i in 1 2 3; do ports+=("$(free_port)"); cports+=("$(free_port)"); done
  for i in 1 2 3; do voters+="${voters:+,}$i@127.0.0.1:${cports[$((i - 1))]}"; done
  cluster_id="$(new_cluster_id)"
  scram=()
  for i in 1 2 3; do
    dir="$top/n$i"
    mkdir -p "$dir/log"
    echo "${ports[$((i - 1))]}" >"$dir/port"
    cat >"$dir/server.properties" <<PROPS
listeners=PLAINTEXT://127.0.0.1:${ports[$((i - 1))]},CONTROLLER://127.0.0.1:${cports[$((i - 1))]}
advertised.listeners=PLAINTEXT://127.0.0.1:${ports[$((i - 1))]}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
PROPS
    write_node_files "$i" "$voters" 3 2
    format_log
  done
  # A node finishes starting only once a quorum of controllers is up: start all, then wait.
  for i in 1 2 3; do dir="$top/n$i"; spawn; done
  for i in 1 2 3; do dir="$top/n$i"; wait_started >/dev/null; done
  dir="$top"
  for i in 1 2 3; do cat "$top/n$i/bootstrap"; done | paste -sd, >"$top/bootstrap"
  cat "$top/bootstrap"
}

# On a cluster's directory, stop/kill/restart act on each node.
each_node() {  # COMMAND
  local top="$dir" n
  case "$1" in
    stop)  # together: a node stopped alone waits for a quorum that its fellows have left
      for n in "${nodes[@]}"; do (dir="$top/$n"; stop TERM) & done
      wait
      ;;
    kill) for n in "${nodes[@]}"; do dir="$top/$n"; stop KILL; done ;;
    restart)
      for n in "${nodes[@]}"; do (dir="$top/$n"; stop TERM) & done
      wait
      for n in "${nodes[@]}"; do dir="$top/$n"; spawn; done
      for n in "${nodes[@]}"; do dir="$top/$n"; wait_started >/dev/null; done
      cat "$top/bootstrap"
      ;;
  esac
}

if [ "$cmd" != start ] && [ -d "$dir/n1" ]; then
  dir="$(cd "$dir" && pwd)"
  each_node "$cmd"
  exit 0
fi

case "$cmd" in
  start)
    fetch_jars
    # A broker (or a cluster's) still running in DIR is stopped first, not orphaned with its pid
    # file: `ctest --repeat` runs the fixture's start again before its stop.
    if [ -d "$dir/n1" ]; then (each_node stop); elif [ -d "$dir" ]; then stop TERM; fi
    rm -rf "$dir" && mkdir -p "$dir/log"
    dir="$(cd "$dir" && pwd)"
    if [ "$mode" = "--cluster" ]; then
      start_cluster
      exit 0
    fi
    port="$(free_port)"; cport="$(free_port)"
    echo "$port" >"$dir/port"
    if [ "$mode" = "--secured" ]; then
      aport="$(free_port)"
      echo "127.0.0.1:$aport" >"$dir/admin-bootstrap"
      python3 -c 'import secrets; print(secrets.token_hex(12))' >"$dir/sasl-password"
      python3 -c 'import secrets; print(secrets.token_hex(12))' >"$dir/key-password"
      password="$(cat "$dir/sasl-password")"
      make_certs
      cat >"$dir/client.properties" <<PROPS
security.protocol=SASL_SSL
ssl.ca.location=$dir/tls/ca.pem
sasl.mechanisms=SCRAM-SHA-512
sasl.username=$sasl_user
sasl.password=$password
PROPS
      listeners="CLIENT://127.0.0.1:$port,ADMIN://127.0.0.1:$aport,CONTROLLER://127.0.0.1:$cport"
      cat >"$dir/server.properties" <<PROPS
listeners=$listeners
advertised.listeners=CLIENT://127.0.0.1:$port,ADMIN://127.0.0.1:$aport
listener.security.protocol.map=CLIENT:SASL_SSL,ADMIN:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=ADMIN
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN
listener.name.client.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.client.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.client.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$sasl_user="$password";
ssl.keystore.type=PEM
ssl.keystore.location=$dir/tls/broker-keystore.pem
ssl.key.password=$(cat "$dir/key-password")
ssl.client.auth=none
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
# The operator's and the controller's PLAINTEXT listeners (loopback only) act as ANONYMOUS.
super.users=User:ANONYMOUS
allow.everyone.if.no.acl.found=false
PROPS
      scram=(--add-scram "SCRAM-SHA-256=[name=$sasl_user,password=$password]"
             --add-scram "SCRAM-SHA-512=[name=$sasl_user,password=$password]")
    else
      scram=()
      cat >"$dir/server.properties" <<PROPS
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
PROPS
    fi
    write_node_files 1 "1@127.0.0.1:$cport" 1 1
    cluster_id="$(new_cluster_id)"
    format_log
    launch
    if [ "$mode" = "--secured" ] && ! add_acls; then
      echo "broker.sh: adding the ACLs failed; see $dir/broker.log" >&2
      exit 1
    fi
    ;;
  restart)
    dir="$(cd "$dir" && pwd)"
    stop TERM
    launch
    ;;
  stop) stop TERM ;;
  kill) stop KILL ;;
  *) echo "usage: $0 start|stop|kill|restart DIR" >&2; exit 2 ;;
esac
