#!/usr/bin/env bash
# `make run`: the operator against the current kube context when one answers, otherwise against the
# local test control plane (started on demand). Installs the CRDs first so the sample CRs apply.
#
# Also shipped in the runtime package, for scaffolded projects: PROJECT_DIR (default: this
# repository) holds watches.yaml and config/, HELM_OPERATOR_BIN (default: node dist/cli/main.js)
# is the operator command.
set -euo pipefail
HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "${PROJECT_DIR:-$HACK_DIR/..}"
bash "$HACK_DIR/tools.sh" helm kubectl >&2
eval "$(bash "$HACK_DIR/tools.sh" env 2>/dev/null)"
if [ -n "${HELM_OPERATOR_BIN:-}" ]; then operator=("$HELM_OPERATOR_BIN"); else operator=(node dist/cli/main.js); fi

if [ -n "${KUBECONFIG:-}" ] || [ -f "$HOME/.kube/config" ]; then
  if "$KUBECTL_BIN" get --raw /readyz --request-timeout=5s >/dev/null 2>&1; then
    echo "[run] using the current kube context: $("$KUBECTL_BIN" config current-context 2>/dev/null || echo in-cluster)" >&2
  else
    echo "[run] the current kube context does not answer; starting the local test control plane" >&2
    KUBECONFIG=$(bash "$HACK_DIR/cluster.sh" up | tail -n 1)
  fi
else
  echo "[run] no kubeconfig found; starting the local test control plane" >&2
  KUBECONFIG=$(bash "$HACK_DIR/cluster.sh" up | tail -n 1)
fi
export KUBECONFIG

"$KUBECTL_BIN" apply -k config/crd >&2
# -k: config/samples holds a kustomization.yaml next to the samples, which `apply -f` would reject.
echo "[run] CRDs installed; try: kubectl --kubeconfig $KUBECONFIG apply -k config/samples" >&2
# Development defaults, each overridable from the environment: endpoints on loopback only, readable
# logs, and hot reload of watches.yaml and the charts it names (WATCH_CONFIG=false turns it off).
# Flags given to `bash hack/run.sh --flag ...` are passed through.
echo "[run] metrics: http://${METRICS_BIND_ADDRESS:-127.0.0.1:8080}/metrics  probes: http://${HEALTH_PROBE_BIND_ADDRESS:-127.0.0.1:8081}/readyz" >&2
exec "${operator[@]}" run \
  --watches-file "${WATCHES_FILE:-watches.yaml}" \
  --helm-binary "$HELM_BIN" \
  --metrics-bind-address "${METRICS_BIND_ADDRESS:-127.0.0.1:8080}" \
  --health-probe-bind-address "${HEALTH_PROBE_BIND_ADDRESS:-127.0.0.1:8081}" \
  --watch-config="${WATCH_CONFIG:-true}" \
  --log-format "${LOG_FORMAT:-text}" \
  "$@"
