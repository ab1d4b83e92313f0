#!/usr/bin/env bash
# Brings up ClickHouse on this machine for the analytical store's tests and for
# SHOPMIND_ANALYTICS_URL=clickhouse://127.0.0.1:9000/default: installs Debian's
# clickhouse-server and clickhouse-client when missing, starts the server in the background
# without systemd (as the clickhouse user the package creates) when it is not answering, and
# waits until `clickhouse-client --query 'SELECT 1'` answers. Idempotent: a running server is
# left alone. Native protocol on 127.0.0.1:9000 (the HTTP port 8123 is not used by ShopMind).
set -euo pipefail

CONFIG=/etc/clickhouse-server/config.xml
LOG_DIR=/var/log/clickhouse-server

ch_ready() { clickhouse-client --host 127.0.0.1 --port 9000 --query 'SELECT 1' >/dev/null 2>&1; }

if command -v clickhouse-client >/dev/null 2>&1 && ch_ready; then
  echo "ClickHouse ready on 127.0.0.1:9000" >&2
  exit 0
fi

if ! command -v clickhouse-server >/dev/null 2>&1 || ! command -v clickhouse-client >/dev/null 2>&1; then
  echo "ClickHouse is not installed; installing Debian's clickhouse-server and clickhouse-client" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clickhouse-server clickhouse-client >/dev/null
fi

if ! pgrep -x clickhouse-server >/dev/null 2>&1; then
  echo "starting ClickHouse" >&2
  # The packaged config listens on ::1 and 127.0.0.1 and exits when either is missing
  # (containers without IPv6): listen_try keeps whichever works.
  override=/etc/clickhouse-server/config.d/shopmind.xml
  if [ ! -e "$override" ]; then
    mkdir -p "$(dirname "$override")"
    printf '<?xml version="1.0"?>\n<yandex>\n    <listen_try>1</listen_try>\n</yandex>\n' >"$override"
  fi
  mkdir -p "$LOG_DIR" /var/lib/clickhouse
  if id clickhouse >/dev/null 2>&1; then
    chown -R clickhouse:clickhouse "$LOG_DIR" /var/lib/clickhouse
    # start-stop-daemon is what the package's init script uses; it needs no systemd.
    start-stop-daemon --start --quiet --chuid clickhouse:clickhouse --background \
      --chdir /var/lib/clickhouse --exec /usr/sbin/clickhouse-server -- --config-file="$CONFIG"
  else
    (cd /var/lib/clickhouse && nohup clickhouse-server --config-file="$CONFIG" >>"$LOG_DIR/stdout.log" 2>&1 &)
  fi
fi

for _ in $(seq 1 120); do ch_ready && break; sleep 0.5; done
if ! ch_ready; then
  echo "ClickHouse did not come up on 127.0.0.1:9000; see $LOG_DIR/clickhouse-server.err.log:" >&2
  tail -20 "$LOG_DIR/clickhouse-server.err.log" >&2 2>/dev/null || true
  exit 1
fi
echo "ClickHouse ready on 127.0.0.1:9000 ($(clickhouse-client --query 'SELECT version()'))" >&2
