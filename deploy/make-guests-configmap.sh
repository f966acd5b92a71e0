#!/bin/sh
# Prints the rekon-guests ConfigMap for the modules in DIR (default: the
# reference guests built by `make guests`), each pinned by its sha256.
#
#   deploy/make-guests-configmap.sh [DIR] > deploy/guests-configmap.yaml
#   kubectl apply -f deploy/guests-configmap.yaml
set -eu
dir=${1:-${REKON_GUEST_DIR:-target/wasm32-wasip2/guest}}
pvc=$dir/rekon_guest_pvc_protection.wasm
claim=$dir/rekon_guest_resource_claim.wasm
eph=$dir/rekon_guest_ephemeral_volume.wasm
[ -f "$pvc" ] || pvc=$dir/pvc-protection.wasm
[ -f "$claim" ] || claim=$dir/resource-claim.wasm
[ -f "$eph" ] || eph=$dir/ephemeral-volume.wasm
for f in "$pvc" "$claim" "$eph"; do
  [ -f "$f" ] || { echo "no module $f (build the guests with \`make guests\`)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
digest() { sha256sum "$1" | cut -d' ' -f1; }
cat > "$work/guests.yaml" <<YAML
pvc-protection:
  module: pvc-protection.wasm
  sha256: "$(digest "$pvc")"
  deadlineMs: 100
  memoryMiB: 64
resource-claim:
  module: resource-claim.wasm
  sha256: "$(digest "$claim")"
  deadlineMs: 100
  memoryMiB: 64
ephemeral-volume:
  module: ephemeral-volume.wasm
  sha256: "$(digest "$eph")"
  deadlineMs: 100
  memoryMiB: 64
YAML
kubectl create configmap rekon-guests --namespace rekon-system \
  --from-file=guests.yaml="$work/guests.yaml" \
  --from-file=pvc-protection.wasm="$pvc" \
  --from-file=resource-claim.wasm="$claim" \
  --from-file=ephemeral-volume.wasm="$eph" \
  --dry-run=client -o yaml
