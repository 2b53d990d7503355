#!/usr/bin/env bash
# OLM's images built here (docs/olm.md): the olm image (olm-operator and catalog-operator) and the opm
# image (what `run bundle`'s registry pod serves the catalog with), from the binaries hack/tools.sh
# builds from source (components olm and olm-validate) on the Debian stand-in base (hack/image.sh),
# pushed to the loopback registry (hack/registry.sh) under upstream's names, which the real node's
# containerd resolves there (quay.io is mirrored to it):
#
#   hack/olm-images.sh push    build what changed, push both; prints the references a cluster uses:
#                              export OLM_IMAGE=quay.io/operator-framework/olm:<OLM_VERSION>
#                              export OPM_IMAGE=quay.io/operator-framework/opm:<OPERATOR_REGISTRY_VERSION>
#
# Idempotent and cached: an image is rebuilt only when its binaries or Dockerfile change (the label
# io.helm-operator.olm-image holds their digest); a push of what the registry has sends no layer.
# REGISTRY_PORT: the registry's port (default 5000).
set -euo pipefail

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
. "${TOOLS_VERSIONS_FILE:-$HACK_DIR/versions.env}"
REGISTRY_PORT=${REGISTRY_PORT:-5000}
LABEL=io.helm-operator.olm-image

log() { printf '[olm-images %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Builds image $1 from hack/olm-images/$2.Dockerfile with binaries $3... unless it exists with their digest.
build_image() {
  local img=$1 name=$2 key work b
  shift 2
  key=$(cat "$HACK_DIR/olm-images/$name.Dockerfile" "$@" | sha256sum | cut -c1-16)
  if [ "$(podman image inspect --format "{{index .Labels \"$LABEL\"}}" "$img" 2>/dev/null || true)" = "$key" ]; then
    log "$img is up to date"
    return 0
  fi
  work=$(mktemp -d)
  for b in "$@"; do cp "$b" "$work/"; done
  { cat "$HACK_DIR/olm-images/$name.Dockerfile"; printf 'LABEL %s=%s\n' "$LABEL" "$key"; } >"$work/Dockerfile"
  bash "$HACK_DIR/image.sh" build "$img" "$work/Dockerfile" "$work"
  rm -rf "$work"
}

cmd_push() {
  local olm validate registry img
  bash "$HACK_DIR/tools.sh" olm olm-validate
  olm=$(bash "$HACK_DIR/tools.sh" path olm)
  validate=$(bash "$HACK_DIR/tools.sh" path olm-validate)
  bash "$HACK_DIR/registry.sh" up --port "$REGISTRY_PORT" >/dev/null
  bash "$HACK_DIR/image.sh" install
  eval "$(bash "$HACK_DIR/image.sh" env)"
  registry=127.0.0.1:$REGISTRY_PORT/operator-framework
  build_image "$registry/olm:$OLM_VERSION" olm "$olm/olm" "$olm/catalog"
  build_image "$registry/opm:$OPERATOR_REGISTRY_VERSION" opm "$validate/opm"
  for img in "$registry/olm:$OLM_VERSION" "$registry/opm:$OPERATOR_REGISTRY_VERSION"; do
    podman push --quiet --tls-verify=false "$img" >&2
    log "pushed $img"
  done
  printf 'export OLM_IMAGE=quay.io/operator-framework/olm:%s\n' "$OLM_VERSION"
  printf 'export OPM_IMAGE=quay.io/operator-framework/opm:%s\n' "$OPERATOR_REGISTRY_VERSION"
}

case "${1:-}" in
  push) cmd_push ;;
  *) die "usage: hack/olm-images.sh push" ;;
esac
