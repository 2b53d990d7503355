#!/usr/bin/env bash
# `make run-as-deployed`: runs the operator on this machine with the identity of the ServiceAccount
# that `make deploy` created, so with exactly the permissions of config/rbac. Use it
#  - on the local test control plane, whose fake node never runs the deployed pod;
#  - to check config/rbac against a chart: a missing rule shows up as a Forbidden error in the
#    logs and in the CR's status, as it would in the cluster.
#
# A short-lived token (TokenRequest, `kubectl create token`, 1h) and the current context's server
# and CA go into a private kubeconfig that is deleted on exit. Extra arguments go to `run`.
# The endpoints bind loopback only, as with `make run` (METRICS_BIND_ADDRESS, HEALTH_PROBE_BIND_ADDRESS
# override; a flag passed through wins): this is a process on a workstation, not in a pod.
# Environment: KUBECONFIG (the admin context that deployed), WATCHES_FILE (default watches.yaml),
# OPERATOR_NAMESPACE (helm-operator-system), OPERATOR_SERVICE_ACCOUNT (helm-operator-controller-manager);
# for scaffolded projects (this script ships in the runtime package) PROJECT_DIR (default: this
# repository) and HELM_OPERATOR_BIN (default: node dist/cli/main.js).
set -euo pipefail
HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "${PROJECT_DIR:-$HACK_DIR/..}"
NAMESPACE=${OPERATOR_NAMESPACE:-helm-operator-system}
SA=${OPERATOR_SERVICE_ACCOUNT:-helm-operator-controller-manager}
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

bash "$HACK_DIR/tools.sh" helm kubectl >&2
# 2>/dev/null: without go, `env` complains about the control plane paths, which are not used here.
eval "$(bash "$HACK_DIR/tools.sh" env 2>/dev/null)"
if [ -n "${HELM_OPERATOR_BIN:-}" ]; then operator=("$HELM_OPERATOR_BIN"); else operator=(node dist/cli/main.js); fi
kubectl() { "$KUBECTL_BIN" "$@"; }

kubectl get serviceaccount "$SA" -n "$NAMESPACE" >/dev/null ||
  die "ServiceAccount $NAMESPACE/$SA not found: run 'make deploy IMG=...' first"
[ -n "${HELM_OPERATOR_BIN:-}" ] || [ -f dist/cli/main.js ] || die "dist/cli/main.js is missing: run 'make build' first"

server=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.server}')
ca=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
if [ -z "$ca" ]; then
  ca_file=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority}')
  [ -z "$ca_file" ] || ca=$(base64 -w0 <"$ca_file")
fi
token=$(kubectl create token "$SA" -n "$NAMESPACE" --duration=1h)

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
umask 077
{
  printf 'apiVersion: v1\nkind: Config\ncurrent-context: operator\n'
  printf 'clusters:\n- name: cluster\n  cluster:\n    server: %s\n' "$server"
  [ -z "$ca" ] || printf '    certificate-authority-data: %s\n' "$ca"
  printf 'users:\n- name: operator\n  user:\n    token: %s\n' "$token"
  printf 'contexts:\n- name: operator\n  context:\n    cluster: cluster\n    user: operator\n'
} >"$dir/kubeconfig"

echo "[run-as-deployed] running as system:serviceaccount:$NAMESPACE:$SA against $server (token valid 1h)" >&2
# Not exec: the trap removes the token file when the operator stops.
KUBECONFIG="$dir/kubeconfig" "${operator[@]}" run \
  --watches-file "${WATCHES_FILE:-watches.yaml}" \
  --helm-binary "$HELM_BIN" \
  --kubeconfig "$dir/kubeconfig" \
  --metrics-bind-address "${METRICS_BIND_ADDRESS:-127.0.0.1:8080}" \
  --health-probe-bind-address "${HEALTH_PROBE_BIND_ADDRESS:-127.0.0.1:8081}" \
  "$@"
