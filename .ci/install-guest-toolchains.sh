#!/usr/bin/env bash
# Node (for the TypeScript guests) and Python with venv (for the Python guests),
# then the pinned packages: npm ci (guests/sdk/ts/package-lock.json) and
# pip install --require-hashes (guests/sdk/python/requirements.txt), via make.
set -euo pipefail
cd "$(dirname "$0")/.."

node_major() { node --version 2>/dev/null | sed 's/^v\([0-9]*\).*/\1/'; }
missing=()
if [ "$(node_major || echo 0)" -lt 20 ] 2>/dev/null || ! command -v npm >/dev/null; then
    missing+=(nodejs npm)
fi
command -v python3 >/dev/null || missing+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}"
fi
[ "$(node_major)" -ge 20 ] || { echo "Node >= 20 needed for componentize-js, found $(node --version)"; exit 1; }
make guest-toolchains
