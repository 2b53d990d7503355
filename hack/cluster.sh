#!/usr/bin/env bash
# A real Kubernetes control plane on 127.0.0.1 for development and tests: etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler built from source, with kwok faking one Node so
# Deployments become Available without a kubelet. kwok manages only the Nodes annotated
# kwok.x-k8s.io/node=fake, so a real kubelet's Node stays its own.
#
#   hack/cluster.sh up [--name N] [--port P] [--export] [--real-node]
#                                             start (or reuse) a cluster; prints the kubeconfig path last,
#                                             or with --export the line `export KUBECONFIG=<path>` (what
#                                             `make cluster-up` prints: eval "$(make -s cluster-up)")
#                                             --real-node: also one real node (kubelet, containerd, CNI
#                                             bridge, kube-proxy; root; one per machine), tainted
#                                             helm-operator.io/real-node=true:NoSchedule (docs/real-node.md)
#                                             --sharded: kube-apiserver with the ShardedListAndWatch
#                                             gate on (KEP-5866, alpha since v1.36; docs/adr/0103)
#   hack/cluster.sh down [--name N]           delete it (and its real node, restoring the host)
#   hack/cluster.sh kubeconfig [--name N]     print the kubeconfig path of a running cluster
#   hack/cluster.sh status [--name N]         exit 0 when the cluster answers
#
# SERVICE_CIDR (e.g. 10.0.0.0/16) widens the Service IP range of a new cluster; the default /24
# holds about 250 Services, too few for benchmarks with more CRs of a chart that has a Service.
# NODE_PODS (default 250) is how many Pods the fake Node takes; the rest stay Pending.
#
# Everything lives under $HELM_OPERATOR_CACHE_DIR/clusters/<name>; ~/.kube/config is never touched.
set -euo pipefail

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_ROOT=${HELM_OPERATOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/helm-operator-ts}
NAME=${CLUSTER_NAME:-helm-operator-dev}
PORT=${CLUSTER_PORT:-0}
EXPORT=false
REAL_NODE=false
SHARDED=false
NODE_NAME=kwok-node-0
NODE_PODS=${NODE_PODS:-250}
[[ $NODE_PODS =~ ^[1-9][0-9]*$ ]] || { printf 'error: NODE_PODS must be a positive integer, got "%s"\n' "$NODE_PODS" >&2; exit 2; }

log() { printf '[cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

parse_flags() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --name) NAME=${2:?--name needs a value}; shift 2 ;;
      --port) PORT=${2:?--port needs a value}; shift 2 ;;
      --export) EXPORT=true; shift ;;
      --real-node) REAL_NODE=true; shift ;;
      --sharded) SHARDED=true; shift ;;
      *) die "unknown flag '$1'" ;;
    esac
  done
  [[ "$NAME" =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] || die "cluster name '$NAME' must be a DNS label"
  [[ "$PORT" =~ ^[0-9]+$ ]] || die "port '$PORT' must be a number"
  WORKDIR="$CACHE_ROOT/clusters"
  CLUSTER_DIR="$WORKDIR/clusters/$NAME"
  KUBECONFIG_PATH="$CLUSTER_DIR/kubeconfig.yaml"
  export KWOK_WORKDIR="$WORKDIR"
}

load_tools() {
  bash "$HACK_DIR/tools.sh" kubectl k8s etcd kwok >&2
  eval "$(bash "$HACK_DIR/tools.sh" env)"
}

# The last stdout line of `up`: scripts read the bare path; people get a line their shell can run.
print_kubeconfig() {
  if [ "$EXPORT" = true ]; then printf 'export KUBECONFIG=%q\n' "$KUBECONFIG_PATH"; else echo "$KUBECONFIG_PATH"; fi
}

kc() { "$KUBECTL_BIN" --kubeconfig "$KUBECONFIG_PATH" "$@"; }

answers() {
  [ -f "$KUBECONFIG_PATH" ] && kc get --raw /readyz --request-timeout=5s >/dev/null 2>&1
}

port_in_use() {
  ss -ltnH "sport = :$1" 2>/dev/null | grep -q .
}

# The apiserver listens on loopback only; a listener on another address means the config was not applied.
check_loopback() {
  local pids pid bad
  pids=$(cat "$CLUSTER_DIR"/pids/*.pid 2>/dev/null || true)
  for pid in $pids; do
    bad=$(ss -ltnpH 2>/dev/null | grep "pid=$pid," | awk '{print $4}' | grep -Ev '^(127\.0\.0\.1|\[::1\]):' || true)
    [ -z "$bad" ] || die "cluster '$NAME' process $pid listens beyond loopback: $bad"
  done
}

# shellcheck source=wait-for.sh
. "$HACK_DIR/wait-for.sh"

# The fake node advertises what real charts request (most public ones set ephemeral-storage
# requests or limits; without it in allocatable such a pod stays Pending, Insufficient
# ephemeral-storage). Nothing runs there, so the figures only bound how much fits.
register_node() {
  kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $NODE_NAME
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: $NODE_NAME
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
status:
  allocatable: {cpu: "32", memory: 256Gi, ephemeral-storage: 1Ti, pods: "$NODE_PODS"}
  capacity: {cpu: "32", memory: 256Gi, ephemeral-storage: 1Ti, pods: "$NODE_PODS"}
EOF
  wait_for 60 "node $NODE_NAME to be Ready" kc wait --for=condition=Ready "node/$NODE_NAME" --timeout=5s
  # Pods need the default ServiceAccount, which the controller-manager creates shortly after start.
  wait_for 60 "the default ServiceAccount" kc get serviceaccount default -n default
}

# kwok-controller manages only the fake Node (kwokctl's binary runtime has it manage every Node, and
# would report a real node's pods Running without a container).
# The controller-manager and the scheduler are alone on their cluster: leader election would only
# renew their two Leases every 2 s, about 11% of the API server's requests in a `make test` run and
# a share of etcd's writes (docs/development.md, "Where the CPU goes").
kwokctl_config() {
  cat <<EOF
kind: KwokctlConfiguration
apiVersion: config.kwok.x-k8s.io/v1alpha1
options:
  runtime: binary
  bindAddress: 127.0.0.1
  kubeApiserverPort: $PORT
EOF
  [ "$REAL_NODE" = false ] || bash "$HACK_DIR/real-node.sh" apiserver-options
  cat <<EOF
componentsPatches:
- name: kwok-controller
  extraArgs:
  - key: manage-all-nodes
    value: "false"
  - key: manage-nodes-with-annotation-selector
    value: kwok.x-k8s.io/node=fake
- name: kube-controller-manager
  extraArgs:
  - key: leader-elect
    value: "false"
- name: kube-scheduler
  extraArgs:
  - key: leader-elect
    value: "false"
EOF
  [ -n "${SERVICE_CIDR:-}" ] || [ "$REAL_NODE" = true ] || [ "$SHARDED" = true ] || return 0
  printf -- '- name: kube-apiserver\n  extraArgs:\n'
  # Only the apiserver serves lists and watches: the gate is its alone.
  [ "$SHARDED" = false ] || printf '  - key: feature-gates\n    value: ShardedListAndWatch=true\n'
  [ -z "${SERVICE_CIDR:-}" ] || printf '  - key: service-cluster-ip-range\n    value: %s\n' "$SERVICE_CIDR"
  [ "$REAL_NODE" = false ] || bash "$HACK_DIR/real-node.sh" apiserver-args "$CLUSTER_DIR"
}

cleanup_failed_up() {
  [ "$REAL_NODE" = false ] || down_real_node >&2 || true
  "$KWOKCTL_BIN" delete cluster --name "$NAME" >/dev/null 2>&1 || true
}

# The real node of this cluster, if it has one (its owner file names the cluster).
down_real_node() {
  [ "$(bash "$HACK_DIR/real-node.sh" owner 2>/dev/null || true)" = "$NAME" ] || return 0
  bash "$HACK_DIR/real-node.sh" down
}

cmd_up() {
  load_tools
  if answers; then
    if [ "$REAL_NODE" = true ] && [ "$(bash "$HACK_DIR/real-node.sh" owner 2>/dev/null || true)" != "$NAME" ]; then
      die "cluster '$NAME' is running without a real node; take it down first (hack/cluster.sh down --name $NAME)"
    fi
    # The apiserver's gate is fixed at start: a reused cluster must be the kind asked for.
    local running_sharded=false
    grep -qs 'ShardedListAndWatch=true' "$WORKDIR/kwokctl-$NAME.yaml" && running_sharded=true
    if [ "$running_sharded" != "$SHARDED" ]; then
      die "cluster '$NAME' is running $([ "$running_sharded" = true ] && echo with || echo without) the ShardedListAndWatch apiserver, asked $([ "$SHARDED" = true ] && echo with || echo without); take it down first (hack/cluster.sh down --name $NAME)"
    fi
    log "cluster '$NAME' is already running"
    print_kubeconfig
    return 0
  fi
  down_real_node
  if [ -d "$CLUSTER_DIR" ]; then
    log "cluster '$NAME' has state but does not answer; deleting it first"
    "$KWOKCTL_BIN" delete cluster --name "$NAME" >&2 || rm -rf "$CLUSTER_DIR"
  fi
  if [ "$PORT" != 0 ] && port_in_use "$PORT"; then
    die "port $PORT on 127.0.0.1 is already in use; pick another with --port or CLUSTER_PORT (0 picks a free one)"
  fi
  mkdir -p "$WORKDIR"
  local config="$WORKDIR/kwokctl-$NAME.yaml" start=$SECONDS
  # Ctrl-C or a failure half-way leaves processes behind: take down what this call started.
  trap 'log "start-up of cluster '"'$NAME'"' failed or was interrupted; cleaning up"; cleanup_failed_up' ERR INT TERM
  if [ "$REAL_NODE" = true ]; then
    bash "$HACK_DIR/registry.sh" up >/dev/null
    bash "$HACK_DIR/real-node.sh" prepare "$NAME"
  fi
  kwokctl_config >"$config"
  log "starting cluster '$NAME' (apiserver port: ${PORT/#0/any free})"
  # kwokctl picks free ports, which its processes bind only later: two clusters started at once
  # could pick the same ones. Starts are made one at a time, machine-wide (fd 9 closes with this call).
  exec 9>"$WORKDIR/.create.lock"
  flock -w 600 9 || die "another cluster has been starting for 10 minutes (lock $WORKDIR/.create.lock)"
  PATH="$(dirname "$KUBECTL_BIN"):$PATH" "$KWOKCTL_BIN" -c "$config" create cluster \
    --name "$NAME" --runtime binary --kubeconfig "" --wait 120s --timeout 180s \
    --kube-apiserver-binary "$KUBE_APISERVER_BIN" \
    --kube-controller-manager-binary "$KUBE_CONTROLLER_MANAGER_BIN" \
    --kube-scheduler-binary "$KUBE_SCHEDULER_BIN" \
    --kwok-controller-binary "$KWOK_BIN" \
    --etcd-binary "$ETCD_BIN" >&2 9>&-
  exec 9>&-
  wait_for 60 "the apiserver to answer /readyz" answers
  register_node
  check_loopback
  [ "$REAL_NODE" = false ] || bash "$HACK_DIR/real-node.sh" up "$CLUSTER_DIR" "$KUBECONFIG_PATH"
  trap - ERR INT TERM
  log "cluster '$NAME' is up in $((SECONDS - start))s"
  print_kubeconfig
}

cmd_down() {
  load_tools
  # The node first: its kubelet and kube-proxy would otherwise retry a vanished apiserver.
  down_real_node
  if [ ! -d "$CLUSTER_DIR" ]; then
    log "cluster '$NAME' does not exist"
    return 0
  fi
  "$KWOKCTL_BIN" delete cluster --name "$NAME" >&2
  log "cluster '$NAME' deleted"
}

main() {
  local cmd=${1:-}
  [ $# -gt 0 ] && shift
  parse_flags "$@"
  case "$cmd" in
    up) cmd_up ;;
    down) cmd_down ;;
    kubeconfig) load_tools; answers || die "cluster '$NAME' is not running (make cluster-up)"; echo "$KUBECONFIG_PATH" ;;
    status) load_tools; answers ;;
    *) die "usage: hack/cluster.sh up|down|kubeconfig|status [--name N] [--port P] [--export] [--real-node] [--sharded]" ;;
  esac
}

main "$@"
