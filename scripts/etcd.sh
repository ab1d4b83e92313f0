#!/usr/bin/env bash
# Installs Debian's etcd-server (etcd 3.4, /usr/bin/etcd) and etcd-client (etcdctl) when
# missing. It starts nothing: tests/cluster and scripts/run-cluster.sh run their own etcd
# member in a scratch folder on free ports, and an operator runs it as deploy/README.md says.
set -euo pipefail
if command -v etcd >/dev/null 2>&1 && command -v etcdctl >/dev/null 2>&1; then
  echo "etcd $(etcd --version | head -1 | awk '{print $3}') installed" >&2
  exit 0
fi
echo "etcd is not installed; installing Debian's etcd-server and etcd-client" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server etcd-client >/dev/null
# The package enables a systemd unit; where systemd runs it would start a member on 2379.
# Nothing here relies on it.
echo "etcd $(etcd --version | head -1 | awk '{print $3}') installed" >&2
