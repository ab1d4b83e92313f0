#!/usr/bin/env bash
# Brings up what the tests need on this machine: PostgreSQL and ClickHouse (Debian's
# packages, installed when missing). `make run` needs PostgreSQL only (scripts/postgres.sh).
set -euo pipefail
"$(dirname "$0")/postgres.sh"
"$(dirname "$0")/clickhouse.sh"
