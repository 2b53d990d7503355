#!/usr/bin/env bash
# Stand-in images for what the real node runs (docs/real-node.md), built here from the Debian stand-in
# base (hack/image.sh) and pushed to the loopback registry (hack/registry.sh) under their public
# names, which the real node's containerd resolves there.
#
#   hack/stand-ins.sh push <name>:<tag>   build hack/stand-ins/<name>.Dockerfile, push it as library/<name>:<tag>
#
# REGISTRY_PORT: the registry's port (default 5000). Builds are cached by podman's layer cache.
set -euo pipefail

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REGISTRY_PORT=${REGISTRY_PORT:-5000}

die() { printf 'error: %s\n' "$*" >&2; exit 1; }

cmd_push() {
  local ref=$1 name tag img
  [[ "$ref" =~ ^[a-z0-9][a-z0-9._-]*:[A-Za-z0-9._-]+$ ]] || die "'$ref' is not <name>:<tag>"
  name=${ref%%:*}
  tag=${ref#*:}
  [ -f "$HACK_DIR/stand-ins/$name.Dockerfile" ] || die "no stand-in for $name (hack/stand-ins/$name.Dockerfile)"
  bash "$HACK_DIR/registry.sh" up >/dev/null
  img=127.0.0.1:$REGISTRY_PORT/library/$name:$tag
  bash "$HACK_DIR/image.sh" build "$img" "$HACK_DIR/stand-ins/$name.Dockerfile" "$HACK_DIR/stand-ins"
  eval "$(bash "$HACK_DIR/image.sh" env)"
  podman push --quiet --tls-verify=false "$img" >&2
  echo "$img"
}

case "${1:-}" in
  push) cmd_push "${2:?usage: hack/stand-ins.sh push <name>:<tag>}" ;;
  *) die "usage: hack/stand-ins.sh push <name>:<tag>" ;;
esac
