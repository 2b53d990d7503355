#!/usr/bin/env bash
# Renders a kustomization with the pinned kubectl's built-in kustomize (v5.7.1), optionally with the
# operator image set, without editing any tracked file.
#
#   hack/kustomize.sh build <dir> [image]   print the manifests of <dir> (e.g. config/default)
#
# With an image (IMG: repo[:tag] or repo@sha256:digest), <dir> is built through a throw-away overlay
# in a temporary directory whose only content is `resources: [<dir>]` plus an `images:` entry that
# renames the placeholder image "controller" (config/manager/manager.yaml). This is what kubebuilder's
# `kustomize edit set image` achieves, minus the edit of config/manager/kustomization.yaml.
# REAL_NODE=1 adds a patch that puts the operator's Deployment on hack/cluster.sh's real node
# (its nodeSelector and a toleration of its taint; docs/real-node.md).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Splits an image reference into kustomize's newName / newTag / digest. The tag is what follows the
# last ':' after the last '/', so a registry port (localhost:5000/op) is not mistaken for a tag.
image_entry() {
  local img=$1 name tag="" digest=""
  [[ "$img" =~ ^[A-Za-z0-9][A-Za-z0-9._/:@-]*$ ]] || die "IMG '$img' is not an image reference"
  name=$img
  if [[ "$name" == *@* ]]; then
    digest=${name#*@}
    name=${name%%@*}
    [[ "$digest" =~ ^sha256:[a-f0-9]{64}$ ]] || die "IMG '$img': the digest must be sha256:<64 hex digits>"
  fi
  local last=${name##*/}
  if [[ "$last" == *:* ]]; then
    tag=${last##*:}
    name=${name%:*}
  fi
  [ -n "$name" ] || die "IMG '$img' has no repository"
  printf 'images:\n  - name: controller\n    newName: %s\n' "$name"
  [ -z "$tag" ] || printf '    newTag: "%s"\n' "$tag"
  [ -z "$digest" ] || printf '    digest: %s\n' "$digest"
}

real_node_patch() {
  cat <<'EOF'
patches:
  - target: {kind: Deployment, labelSelector: control-plane=controller-manager}
    patch: |-
      - {op: add, path: /spec/template/spec/nodeSelector, value: {helm-operator.io/real-node: "true"}}
      - {op: add, path: /spec/template/spec/tolerations, value: [{key: helm-operator.io/real-node, operator: Exists, effect: NoSchedule}]}
EOF
}

cmd_build() {
  local dir=${1:?usage: hack/kustomize.sh build <dir> [image]} img=${2:-}
  bash "$ROOT/hack/tools.sh" kubectl >&2
  # 2>/dev/null: without go, `env` complains about the control plane paths, which are not used here.
  eval "$(bash "$ROOT/hack/tools.sh" env 2>/dev/null)"
  [ -f "$dir/kustomization.yaml" ] || die "$dir has no kustomization.yaml"
  if [ -z "$img" ]; then
    "$KUBECTL_BIN" kustomize "$dir"
    return
  fi
  local overlay base
  overlay=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$overlay'" EXIT
  base=$(realpath --relative-to="$overlay" "$(cd "$dir" && pwd)")
  {
    printf '# Temporary overlay written by hack/kustomize.sh\nresources:\n  - %s\n' "$base"
    image_entry "$img"
    [ -z "${REAL_NODE:-}" ] || real_node_patch
  } >"$overlay/kustomization.yaml"
  "$KUBECTL_BIN" kustomize "$overlay"
}

case "${1:-}" in
  build) shift; cmd_build "$@" ;;
  image-entry) shift; image_entry "${1:?usage: hack/kustomize.sh image-entry <image>}" ;;
  *) die "usage: hack/kustomize.sh build <dir> [image]" ;;
esac
