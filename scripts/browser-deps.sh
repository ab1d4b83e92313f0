#!/usr/bin/env bash
# Installs what the browser tests (web/e2e, extension/test) need, when missing: Debian's
# chromium and a CJK font (fonts-wqy-microhei), so the Chinese pages' screenshots show
# characters, not boxes. Browsers are never downloaded by a test tool (no outside network here); the
# tests drive this binary with playwright-core and `executablePath` (`which chromium`).
# Idempotent.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if ! fc-list 2>/dev/null | grep -qi 'wqy\|noto sans cjk'; then
  echo "installing Debian's fonts-wqy-microhei" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei >/dev/null
fi
echo "browser ready: $(chromium --version 2>/dev/null)" >&2
