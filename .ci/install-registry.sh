#!/usr/bin/env bash
# The OCI tests (host/oci, host/cli) start a real CNCF distribution registry on
# loopback: Debian's docker-registry. openssl makes their test certificates.
set -euo pipefail
if [ -x /usr/bin/docker-registry ] && command -v openssl >/dev/null; then
    exit 0
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-registry openssl
# The tests start their own registries; the packaged service is not needed.
systemctl disable --now docker-registry >/dev/null 2>&1 || true
