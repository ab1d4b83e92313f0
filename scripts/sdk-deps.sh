#!/usr/bin/env bash
# Installs what `make sdk` and the SDK tests (tests/sdk) need, when missing: Debian's
# protoc and grpc_python_plugin, python3-grpcio and python3-protobuf (for /usr/bin/python3),
# Node.js with npm (20 or later is what the TypeScript SDK supports), then the TypeScript
# SDK's packages exactly as package-lock.json pins them (npm ci, from npm's cache when
# warm). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
command -v grpc_python_plugin >/dev/null 2>&1 || missing+=(protobuf-compiler-grpc)
/usr/bin/python3 -c 'import grpc' >/dev/null 2>&1 || missing+=(python3-grpcio)
/usr/bin/python3 -c 'import google.protobuf' >/dev/null 2>&1 || missing+=(python3-protobuf)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian's ${missing[*]}" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || echo "warning: Node.js $(node --version); the TypeScript SDK is tested on Node 20 and later" >&2

# npm ci only when the installed tree is not the lockfile's (a copy of the lockfile kept in
# node_modules marks what npm ci installed).
ts=sdk/typescript
if ! cmp -s "$ts/package-lock.json" "$ts/node_modules/.package-lock.json.ci" 2>/dev/null; then
  (cd "$ts" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$ts/package-lock.json" "$ts/node_modules/.package-lock.json.ci"
fi
echo "SDK toolchain ready: $(protoc --version), Node $(node --version)" >&2
