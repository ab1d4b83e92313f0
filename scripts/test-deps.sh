#!/usr/bin/env bash
# Brings up what the tests need on this machine: PostgreSQL and ClickHouse (Debian's
# packages, installed when missing), Debian's etcd-server for tests/cluster, and the SDK
# toolchain (scripts/sdk-deps.sh: protoc, python3-grpcio, Node.js, the TypeScript SDK's npm
# packages), Debian's chromium and a CJK font (scripts/browser-deps.sh), the web console's and
# the extension's npm packages (scripts/web-deps.sh, scripts/extension-deps.sh). `make run`
# needs PostgreSQL only (scripts/postgres.sh).
set -euo pipefail
"$(dirname "$0")/postgres.sh"
"$(dirname "$0")/clickhouse.sh"
"$(dirname "$0")/etcd.sh"
"$(dirname "$0")/sdk-deps.sh"
"$(dirname "$0")/browser-deps.sh"
"$(dirname "$0")/extension-deps.sh"
"$(dirname "$0")/web-deps.sh"
# The WebSocket client test's npm package (ws, pinned by package-lock.json), installed
# again when the lockfile changed; Debian's Node.js when missing.
if ! command -v npm >/dev/null 2>&1; then
  echo "Node.js is not installed; installing Debian's nodejs and npm" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
ws_client="$(dirname "$0")/../tests/realtime/ws-client"
if ! cmp -s "$ws_client/package-lock.json" "$ws_client/node_modules/.shopmind-lock" 2>/dev/null; then
  (cd "$ws_client" && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.shopmind-lock)
fi
echo "ws client ready in tests/realtime/ws-client" >&2
