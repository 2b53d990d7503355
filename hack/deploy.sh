#!/usr/bin/env bash
# Applies or deletes a kustomization (config/crd, config/default) with the pinned kubectl, in the
# cluster that KUBECONFIG (or ~/.kube/config's current context) points at. Used by
# `make install / uninstall / deploy / undeploy`.
#
#   hack/deploy.sh apply  <dir> [image]   kubectl apply the manifests of <dir> (image: see hack/kustomize.sh),
#                                         then wait until each of its CRDs is Established
#   hack/deploy.sh delete <dir>           delete them, custom resources first (see below)
#
# Deleting a CRD deletes its custom resources, and each of those carries the operator's finalizer
# (helm.sdk.operatorframework.io/uninstall-release): only a running operator removes it, after
# `helm uninstall`. Deleting the CRD and the operator in one go would leave the CRD Terminating
# forever and the releases installed. So `delete` first deletes the custom resources of every CRD
# in <dir>, waiting (DELETE_TIMEOUT, default 120s) while the operator, still running, uninstalls
# their releases; only then does it delete the manifests, CRDs and operator included. When that
# wait times out, it stops before deleting anything else and says what is left.
#
# `apply` returns only once the API server serves the custom resources of every CRD it applied, so
# that `make install && kubectl apply -f config/samples/...` does not fail with "no matches for
# kind": a CRD is Established a moment after it is created, not when `kubectl apply` returns.
#
# Environment: KUBECONFIG; IGNORE_NOT_FOUND=true|false (default false: like kubebuilder's
# `make undeploy ignore-not-found=true`); DELETE_TIMEOUT (kubectl duration, default 120s);
# ESTABLISH_TIMEOUT (kubectl duration, default 60s).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IGNORE_NOT_FOUND=${IGNORE_NOT_FOUND:-false}
DELETE_TIMEOUT=${DELETE_TIMEOUT:-120s}
ESTABLISH_TIMEOUT=${ESTABLISH_TIMEOUT:-60s}

log() { printf '[deploy] %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

bash "$ROOT/hack/tools.sh" kubectl >&2
# 2>/dev/null: without go, `env` complains about the control plane paths, which are not used here.
eval "$(bash "$ROOT/hack/tools.sh" env 2>/dev/null)"
kubectl() { "$KUBECTL_BIN" "$@"; }

context() {
  local ctx
  ctx=$(kubectl config current-context 2>/dev/null || true)
  printf '%s' "${ctx:-<no current context>}${KUBECONFIG:+ (KUBECONFIG=$KUBECONFIG)}"
}

# Fail with a clear message before rendering anything when no cluster answers (kubectl would
# otherwise try http://localhost:8080 and print a screen of connection errors).
preflight() {
  local err
  if ! err=$(kubectl get --raw /version --request-timeout=15s 2>&1 >/dev/null); then
    # Both this repository's Makefile and a scaffolded project's have cluster-up (this script ships
    # in the runtime package, where no hack/ is next to the project), so the hint names the target.
    die "cannot reach the cluster of $(context): ${err##*$'\n'}
Set KUBECONFIG to a cluster that answers; for a local control plane run 'make cluster-up' and then the 'export KUBECONFIG=...' line it prints (or: eval \"\$(make -s cluster-up)\")."
  fi
}

cmd_apply() {
  local dir=${1:?usage: hack/deploy.sh apply <dir> [image]} img=${2:-} manifests
  manifests=$(bash "$ROOT/hack/kustomize.sh" build "$dir" "$img")
  if [ "$img" = controller:latest ]; then
    log "warning: IMG is the placeholder controller:latest, which no registry serves; pass IMG=<registry>/<name>:<tag>"
  fi
  log "applying $dir${img:+ with image $img} to $(context)"
  printf '%s\n' "$manifests" | kubectl apply -f -
  wait_established $(printf '%s\n' "$manifests" | crd_names)
}

wait_established() {
  [ $# -gt 0 ] || return 0
  if ! kubectl wait --for=condition=Established --timeout="$ESTABLISH_TIMEOUT" "${@/#/customresourcedefinition/}"; then
    die "applied, but not every CRD is Established after $ESTABLISH_TIMEOUT; its conditions say why:
$(kubectl get customresourcedefinition "$@" -o custom-columns='NAME:.metadata.name,CONDITIONS:.status.conditions[*].message' 2>&1 || true)"
  fi
}

# Names of the CRDs among the manifests on stdin (kustomize output: top-level keys at column 0,
# metadata's own keys indented by two).
crd_names() {
  awk '/^---/ { kind = ""; meta = 0; next }
       /^kind: / { kind = $2 }
       /^metadata:/ { meta = 1; next }
       meta && /^  name: / { if (kind == "CustomResourceDefinition") print $2; meta = 0 }
       /^[^ ]/ { meta = 0 }'
}

# Names of the CRDs among the manifests on stdin that exist in the cluster.
existing_crds() {
  local name
  crd_names |
    while read -r name; do
      kubectl get customresourcedefinition "$name" --ignore-not-found -o name | sed 's|^.*/||'
    done
}

delete_custom_resources() {
  local crd=$1 left
  [ -n "$(kubectl get "$crd" --all-namespaces -o name 2>/dev/null)" ] || return 0
  log "deleting every $crd first, while the operator can still uninstall their releases (timeout $DELETE_TIMEOUT)"
  if ! kubectl delete "$crd" --all --all-namespaces --wait=true --timeout="$DELETE_TIMEOUT"; then
    left=$(kubectl get "$crd" --all-namespaces -o custom-columns='NAMESPACE:.metadata.namespace,NAME:.metadata.name,FINALIZERS:.metadata.finalizers' 2>/dev/null || true)
    die "these $crd are still there after $DELETE_TIMEOUT (nothing else was deleted):
$left
Their finalizer is removed by a running operator after it uninstalls the helm release. Start the
operator (or wait for it) and run this again; or, to leave the releases installed, remove the
finalizers by hand: kubectl patch $crd -n NAMESPACE NAME --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'"
  fi
}

cmd_delete() {
  local dir=${1:?usage: hack/deploy.sh delete <dir>} manifests crd
  manifests=$(bash "$ROOT/hack/kustomize.sh" build "$dir")
  log "deleting $dir from $(context)"
  for crd in $(printf '%s\n' "$manifests" | existing_crds); do
    delete_custom_resources "$crd"
  done
  printf '%s\n' "$manifests" | kubectl delete --ignore-not-found="$IGNORE_NOT_FOUND" -f -
}

case "${1:-}" in
  apply) shift; preflight; cmd_apply "$@" ;;
  delete) shift; preflight; cmd_delete "$@" ;;
  *) die "usage: hack/deploy.sh apply <dir> [image] | delete <dir>" ;;
esac
