#!/usr/bin/env bash
# Installs what the browser extension's build and tests need (extension/README.md): Node.js
# (Debian's, when missing) and the extension's npm packages exactly as its package-lock.json
# pins them (esbuild, TypeScript, openapi-typescript, Vitest, playwright-core), again only
# when the lockfile changed. Chromium comes from scripts/browser-deps.sh. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../extension"
if ! command -v npm >/dev/null 2>&1; then
  echo "Node.js is not installed; installing Debian's nodejs and npm" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
if ! cmp -s package-lock.json node_modules/.shopmind-lock 2>/dev/null; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.shopmind-lock
fi
echo "extension toolchain ready in extension/ (Node $(node --version))" >&2
