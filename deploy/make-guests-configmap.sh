#!/bin/sh
# Prints the rekon-guests ConfigMap for the modules in DIR (default: the
# reference guests built by `make guests`), each pinned by its sha256: one
# module per world, for every reference guest with cases (guests/<world>/cases)
# that decides for a built-in controller.
#
#   deploy/make-guests-configmap.sh [DIR] > deploy/guests-configmap.yaml
#   kubectl apply -f deploy/guests-configmap.yaml
set -eu
dir=${1:-${REKON_GUEST_DIR:-target/wasm32-wasip2/guest}}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
digest() { sha256sum "$1" | cut -d' ' -f1; }
: > "$work/guests.yaml"
set --
for cases in "$root"/guests/*/cases; do
  world=$(basename "$(dirname "$cases")")
  module=$dir/rekon_guest_$(echo "$world" | tr - _).wasm
  [ -f "$module" ] || module=$dir/$world.wasm
  [ -f "$module" ] || { echo "no module $module (build the guests with \`make guests\`)" >&2; exit 1; }
  # Controller modules (the generic world) are not built-in worlds: an operator
  # adds each under `controllers:` with the scope it allows (docs/src/guests/controller.md).
  if grep -qa 'rekon:reconcile/controller-decider@' "$module"; then continue; fi
  cat >> "$work/guests.yaml" <<YAML
$world:
  module: $world.wasm
  sha256: "$(digest "$module")"
  deadlineMs: 100
  memoryMiB: 64
YAML
  set -- "$@" --from-file="$world.wasm=$module"
done
kubectl create configmap rekon-guests --namespace rekon-system \
  --from-file=guests.yaml="$work/guests.yaml" "$@" \
  --dry-run=client -o yaml
