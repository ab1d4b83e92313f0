#!/usr/bin/env bash
# Starts PostgreSQL (Debian's cluster, trust auth on 127.0.0.1:5432) when it is not running;
# installs it first on a machine without it. Idempotent.
set -euo pipefail

pg_ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }

if ! pg_ready; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    echo "PostgreSQL is not installed; installing Debian's postgresql" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  version=$(ls /etc/postgresql | sort -V | tail -1)
  echo "starting PostgreSQL $version" >&2
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 60); do pg_ready && break; sleep 0.5; done
fi
pg_ready || { echo "PostgreSQL did not come up on 127.0.0.1:5432" >&2; exit 1; }
echo "PostgreSQL ready on 127.0.0.1:5432" >&2
