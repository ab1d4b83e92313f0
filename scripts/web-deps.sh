#!/usr/bin/env bash
# Installs what the web console (web/) needs to build and test: Node.js with npm (Debian's,
# when missing) and web/'s packages exactly as package-lock.json pins them (npm ci, run again
# only when the lockfile changed), then Debian's chromium and a CJK font for its browser tests
# (scripts/browser-deps.sh). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
  echo "installing Debian's nodejs and npm" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
if ! cmp -s web/package-lock.json web/node_modules/.shopmind-lock 2>/dev/null; then
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
  cp web/package-lock.json web/node_modules/.shopmind-lock
fi
./scripts/browser-deps.sh
echo "web console toolchain ready: Node $(node --version)" >&2
