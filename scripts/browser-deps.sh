#!/usr/bin/env bash
# Installs what the browser tests (web/e2e, extension/test) need, when missing: Debian's
# chromium. Browsers are never downloaded by a test tool (no outside network here); the
# tests drive this binary with playwright-core and `executablePath` (`which chromium`).
# Idempotent.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
echo "browser ready: $(chromium --version 2>/dev/null)" >&2
