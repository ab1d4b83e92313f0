#!/usr/bin/env bash
# ShopMind in microservices mode on one machine (`make run-cluster`): Debian's etcd (one
# member) and one `shopmind serve` process per target, each on its own ports, finding each
# other through etcd only: two gateways (:8080, :8081), two tenant replicas, one process for
# each other service. Logs and etcd's data go to $SHOPMIND_CLUSTER_DIR (default
# /tmp/shopmind-cluster). Ctrl-C (or SIGTERM) stops every process gracefully.
#
# Usage: scripts/run-cluster.sh [path/to/shopmind]   (default bin/shopmind)
# Environment: SHOPMIND_JWT_SECRET (default: generated once into the cluster folder, shared
# by every process), SHOPMIND_DATABASE_URL (default database shopmind_cluster on the local
# PostgreSQL), SHOPMIND_DEMO_DATA (default true); other SHOPMIND_* variables pass through.
set -euo pipefail
BIN=${1:-bin/shopmind}
DIR=${SHOPMIND_CLUSTER_DIR:-/tmp/shopmind-cluster}
ETCD_CLIENT=${SHOPMIND_CLUSTER_ETCD:-127.0.0.1:23790}
ETCD_PEER=127.0.0.1:23800
mkdir -p "$DIR"

if [ -z "${SHOPMIND_JWT_SECRET:-}" ]; then
  [ -s "$DIR/jwt-secret" ] || (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/jwt-secret")
  SHOPMIND_JWT_SECRET=$(cat "$DIR/jwt-secret")
fi
export SHOPMIND_JWT_SECRET
export SHOPMIND_DATABASE_URL=${SHOPMIND_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/shopmind_cluster?sslmode=disable}
export SHOPMIND_DEMO_DATA=${SHOPMIND_DEMO_DATA:-true}
export SHOPMIND_ETCD_ENDPOINTS=http://$ETCD_CLIENT
# The built-in NL2SQL provider listens here and the bridge (target nl2sql) calls it here.
export SHOPMIND_NL2SQL_PROVIDER_ADDR=${SHOPMIND_NL2SQL_PROVIDER_ADDR:-127.0.0.1:9190}

pids=()
stop() {
  echo "stopping (SIGTERM: each process deregisters, then drains)" >&2
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null || true; done
  wait || true
  exit 0
}
trap stop INT TERM

etcd --name shopmind-cluster --data-dir "$DIR/etcd" \
  --listen-client-urls "http://$ETCD_CLIENT" --advertise-client-urls "http://$ETCD_CLIENT" \
  --listen-peer-urls "http://$ETCD_PEER" --initial-advertise-peer-urls "http://$ETCD_PEER" \
  --initial-cluster "shopmind-cluster=http://$ETCD_PEER" --logger zap --log-level warn >"$DIR/etcd.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do etcdctl --endpoints="$ETCD_CLIENT" endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
etcdctl --endpoints="$ETCD_CLIENT" endpoint health >/dev/null 2>&1 || { echo "etcd did not start; see $DIR/etcd.log" >&2; stop; }
echo "etcd on $ETCD_CLIENT (data $DIR/etcd)" >&2

# start NAME TARGET GRPC_PORT [HTTP_PORT]: one process, waiting until it is registered in
# etcd (a service) or answers /readyz 200 (a gateway).
start() {
  local name=$1 target=$2 grpc=$3 http=${4:-}
  if [ -n "$http" ]; then
    SHOPMIND_HTTP_ADDR=127.0.0.1:$http "$BIN" serve --target="$target" >"$DIR/$name.log" 2>&1 &
  else
    SHOPMIND_GRPC_ADDR=127.0.0.1:$grpc "$BIN" serve --target="$target" >"$DIR/$name.log" 2>&1 &
  fi
  pids+=($!)
  local pid=$!
  for _ in $(seq 1 600); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$name exited; its log ($DIR/$name.log):" >&2; tail -20 "$DIR/$name.log" >&2; stop
    fi
    if [ -n "$http" ]; then
      "$BIN" probe --http="http://127.0.0.1:$http/readyz" >/dev/null 2>&1 && break
    else
      [ -n "$(etcdctl --endpoints="$ETCD_CLIENT" get "shopmind/dev/services/$target/127.0.0.1:$grpc" --print-value-only)" ] && break
    fi
    sleep 0.1
  done
  local where="grpc 127.0.0.1:$grpc"
  [ -z "$http" ] || where="http://127.0.0.1:$http"
  echo "$name (--target=$target) ready on $where, log $DIR/$name.log" >&2
}

# In the order of the service list: the demo data of each needs the one before.
start tenant-1 tenant 9101
start system system 9102
start analysis analysis 9103
start basic basic 9104
start notify notify 9105
start chat chat 9106
start nl2sql nl2sql 9107
start nl2sql-provider nl2sql-provider 9110
start crx crx 9108
start tenant-2 tenant 9109
start gateway-1 gateway "" 8080
start gateway-2 gateway "" 8081

echo "ShopMind cluster up: gateways http://127.0.0.1:8080 and http://127.0.0.1:8081; registrations:" >&2
etcdctl --endpoints="$ETCD_CLIENT" get --prefix shopmind/ --keys-only | grep . >&2
echo "Ctrl-C stops every process." >&2
wait
