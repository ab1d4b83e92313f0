#!/usr/bin/env bash
# A local ClickHouse cluster for the analytical store's cluster mode (`make run-ch-cluster`,
# `make test-ch-cluster`): Debian's zookeeper (one node) and four Debian clickhouse-server
# 18.16 processes, 2 shards x 2 replicas, on loopback ports with their own configs and data
# directories under $SHOPMIND_CH_CLUSTER_DIR (default /tmp/shopmind-ch-cluster). It does not
# touch the single server of scripts/clickhouse.sh (port 9000).
#
#   scripts/clickhouse-cluster.sh [start]   install what is missing, start what is not running,
#                                           wait until every server answers (idempotent)
#   scripts/clickhouse-cluster.sh stop      stop the servers and ZooKeeper this script started
#   scripts/clickhouse-cluster.sh stop-node s1r1 | start-node s1r1    one server (fault tests)
#   scripts/clickhouse-cluster.sh stop-zk | start-zk                   ZooKeeper (fault tests)
#   scripts/clickhouse-cluster.sh status    which processes run
#
# Nodes (native protocol, the only one ShopMind uses):
#   s1r1 127.0.0.1:9301   s1r2 127.0.0.1:9302   (shard 1)
#   s2r1 127.0.0.1:9303   s2r2 127.0.0.1:9304   (shard 2)
#   ZooKeeper 127.0.0.1:2191
# Clusters defined in every node's remote_servers:
#   shopmind      2 shards x 2 replicas (internal_replication: the Distributed table writes
#                 one replica, ReplicatedMergeTree copies to the other)
#   shopmind_1x2  1 shard x 2 replicas (s1r1, s1r2), for the 1-vs-2-shards figures
#
# The store then runs with
#   SHOPMIND_ANALYTICS_URL=clickhouse://127.0.0.1:9301,127.0.0.1:9302,127.0.0.1:9303,127.0.0.1:9304/shopmind
#   SHOPMIND_CLICKHOUSE_CLUSTER=shopmind
set -euo pipefail

DIR=${SHOPMIND_CH_CLUSTER_DIR:-/tmp/shopmind-ch-cluster}
ZK_PORT=${SHOPMIND_CH_CLUSTER_ZK_PORT:-2191}
NODES=(s1r1 s1r2 s2r1 s2r2)
declare -A TCP=([s1r1]=9301 [s1r2]=9302 [s2r1]=9303 [s2r2]=9304)
declare -A INTERSERVER=([s1r1]=9311 [s1r2]=9312 [s2r1]=9313 [s2r2]=9314)
declare -A SHARD=([s1r1]=01 [s1r2]=01 [s2r1]=02 [s2r2]=02)

log() { echo "clickhouse-cluster: $*" >&2; }

install_missing() {
  local pkgs=()
  command -v clickhouse-server >/dev/null 2>&1 || pkgs+=(clickhouse-server)
  command -v clickhouse-client >/dev/null 2>&1 || pkgs+=(clickhouse-client)
  [ -e /usr/share/java/zookeeper.jar ] || pkgs+=(zookeeper)
  if [ ${#pkgs[@]} -gt 0 ]; then
    log "installing Debian's ${pkgs[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
  fi
}

pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

zk_ready() { [ "$(printf ruok | timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$ZK_PORT; cat >&3; cat <&3" 2>/dev/null)" = imok ]; }

start_zk() {
  mkdir -p "$DIR/zk/data"
  if pid_alive "$DIR/zk/pid"; then return; fi
  cat >"$DIR/zk/zoo.cfg" <<EOF
tickTime=2000
dataDir=$DIR/zk/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
maxClientCnxns=200
admin.enableServer=false
4lw.commands.whitelist=ruok,stat,mntr
autopurge.purgeInterval=1
EOF
  cat >"$DIR/zk/log4j.properties" <<EOF
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$DIR/zk/zookeeper.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}: %m%n
EOF
  log "starting ZooKeeper on 127.0.0.1:$ZK_PORT"
  # QuorumPeerMain with a config without server.N lines runs one standalone node.
  nohup java -Xmx256m -Dlog4j.configuration="file:$DIR/zk/log4j.properties" \
    -cp "$DIR/zk:/usr/share/java/zookeeper.jar" org.apache.zookeeper.server.quorum.QuorumPeerMain \
    "$DIR/zk/zoo.cfg" >>"$DIR/zk/stdout.log" 2>&1 </dev/null &
  echo $! >"$DIR/zk/pid"
  for _ in $(seq 1 60); do zk_ready && return; sleep 0.5; done
  log "ZooKeeper did not answer on 127.0.0.1:$ZK_PORT; see $DIR/zk/zookeeper.log"
  tail -20 "$DIR/zk/zookeeper.log" >&2 || true
  exit 1
}

remote_servers() {
  cat <<'EOF'
        <shopmind>
            <shard><internal_replication>true</internal_replication>
                <replica><host>127.0.0.1</host><port>9301</port></replica>
                <replica><host>127.0.0.1</host><port>9302</port></replica>
            </shard>
            <shard><internal_replication>true</internal_replication>
                <replica><host>127.0.0.1</host><port>9303</port></replica>
                <replica><host>127.0.0.1</host><port>9304</port></replica>
            </shard>
        </shopmind>
        <shopmind_1x2>
            <shard><internal_replication>true</internal_replication>
                <replica><host>127.0.0.1</host><port>9301</port></replica>
                <replica><host>127.0.0.1</host><port>9302</port></replica>
            </shard>
        </shopmind_1x2>
EOF
}

write_config() {
  local n=$1 d="$DIR/$n"
  mkdir -p "$d/data" "$d/tmp" "$d/user_files" "$d/log"
  cat >"$d/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
    <logger>
        <level>information</level>
        <log>$d/log/server.log</log>
        <errorlog>$d/log/server.err.log</errorlog>
        <size>100M</size>
        <count>2</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>${TCP[$n]}</tcp_port>
    <interserver_http_port>${INTERSERVER[$n]}</interserver_http_port>
    <interserver_http_host>127.0.0.1</interserver_http_host>
    <max_connections>1024</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <mark_cache_size>268435456</mark_cache_size>
    <path>$d/data/</path>
    <tmp_path>$d/tmp/</tmp_path>
    <user_files_path>$d/user_files/</user_files_path>
    <users_config>$d/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <remote_servers>
$(remote_servers)
    </remote_servers>
    <zookeeper>
        <node><host>127.0.0.1</host><port>$ZK_PORT</port></node>
        <session_timeout_ms>10000</session_timeout_ms>
    </zookeeper>
    <macros>
        <shard>${SHARD[$n]}</shard>
        <replica>$n</replica>
    </macros>
    <distributed_ddl>
        <path>/clickhouse/task_queue/ddl</path>
    </distributed_ddl>
    <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
    <max_session_timeout>3600</max_session_timeout>
    <default_session_timeout>60</default_session_timeout>
</yandex>
EOF
  # The profile carries the cluster's string-valued settings (the driver cannot send string
  # settings to 18.16): joins and INs between Distributed tables read the shard-local tables,
  # correct because every table is sharded by tenant (see WAREHOUSE.md); reads and writes
  # prefer the first live replica of a shard in the order of remote_servers, so a read after
  # a write meets the replica that took it while that replica is up.
  cat >"$d/users.xml" <<EOF
<?xml version="1.0"?>
<yandex>
    <profiles>
        <default>
            <max_memory_usage>10000000000</max_memory_usage>
            <use_uncompressed_cache>0</use_uncompressed_cache>
            <load_balancing>in_order</load_balancing>
            <distributed_product_mode>local</distributed_product_mode>
            <insert_distributed_sync>1</insert_distributed_sync>
            <insert_distributed_timeout>60</insert_distributed_timeout>
            <skip_unavailable_shards>0</skip_unavailable_shards>
            <connect_timeout_with_failover_ms>500</connect_timeout_with_failover_ms>
            <distributed_ddl_task_timeout>60</distributed_ddl_task_timeout>
        </default>
        <readonly><readonly>1</readonly></readonly>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas>
        <default>
            <interval><duration>3600</duration><queries>0</queries><errors>0</errors>
                <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval>
        </default>
    </quotas>
</yandex>
EOF
}

node_ready() { clickhouse-client --host 127.0.0.1 --port "${TCP[$1]}" --query 'SELECT 1' >/dev/null 2>&1; }

start_node() {
  local n=$1 d="$DIR/$1"
  write_config "$n"
  if pid_alive "$d/pid"; then return; fi
  log "starting $n on 127.0.0.1:${TCP[$n]}"
  # exec: the background job is the server itself, so $! is its pid; every descriptor goes
  # to the log or /dev/null, so a caller reading this script's output is not held open.
  (cd "$d" && exec nohup clickhouse-server --config-file="$d/config.xml") >>"$d/log/stdout.log" 2>&1 </dev/null &
  echo $! >"$d/pid"
}

wait_node() {
  local n=$1 restarts=0
  for _ in $(seq 1 120); do
    node_ready "$n" && return
    # A server whose tables are replicated exits when ZooKeeper does not complete its
    # handshake at start (a ZooKeeper itself just started): start it again, a few times.
    if ! pid_alive "$DIR/$n/pid" && [ $restarts -lt 5 ]; then
      restarts=$((restarts + 1)); sleep 1; start_node "$n"
    fi
    sleep 0.5
  done
  log "$n did not come up on 127.0.0.1:${TCP[$n]}; see $DIR/$n/log/server.err.log:"
  tail -20 "$DIR/$n/log/server.err.log" >&2 || true
  exit 1
}

stop_pid() {
  local f=$1 what=$2
  if pid_alive "$f"; then
    local p
    p=$(cat "$f")
    log "stopping $what (pid $p)"
    kill "$p" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$p" 2>/dev/null || true
  fi
  rm -f "$f"
}

cmd=${1:-start}
case "$cmd" in
  start)
    install_missing
    mkdir -p "$DIR"
    start_zk
    for n in "${NODES[@]}"; do start_node "$n"; done
    for n in "${NODES[@]}"; do wait_node "$n"; done
    log "ready: 2 shards x 2 replicas on 127.0.0.1:9301-9304 (cluster shopmind), ZooKeeper 127.0.0.1:$ZK_PORT"
    ;;
  stop)
    for n in "${NODES[@]}"; do stop_pid "$DIR/$n/pid" "$n"; done
    stop_pid "$DIR/zk/pid" ZooKeeper
    ;;
  stop-node) stop_pid "$DIR/$2/pid" "$2" ;;
  start-node) start_node "$2"; wait_node "$2" ;;
  stop-zk) stop_pid "$DIR/zk/pid" ZooKeeper ;;
  start-zk) start_zk ;;
  status)
    for n in "${NODES[@]}"; do
      if pid_alive "$DIR/$n/pid"; then echo "$n up (pid $(cat "$DIR/$n/pid"), port ${TCP[$n]})"; else echo "$n down"; fi
    done
    if pid_alive "$DIR/zk/pid"; then echo "zookeeper up (port $ZK_PORT)"; else echo "zookeeper down"; fi
    ;;
  *) echo "usage: $0 [start|stop|status|stop-node N|start-node N|stop-zk|start-zk]" >&2; exit 2 ;;
esac
