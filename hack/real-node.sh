#!/usr/bin/env bash
# One real node (kubelet + containerd + CNI bridge + kube-proxy) joined to a cluster that
# hack/cluster.sh started, so pods run for real beside kwok's fake node. hack/cluster.sh calls this;
# docs/real-node.md says what it needs and costs, docs/adr/0047-real-node.md why it is built so.
#
#   hack/real-node.sh prepare <cluster-name>        before the control plane starts: host facts, bridge, FORWARD rule
#   hack/real-node.sh up <cluster-dir> <kubeconfig> after: relay, certificates, containerd, kubelet, kube-proxy
#   hack/real-node.sh down                          stop it all and put the host back as `prepare` found it
#   hack/real-node.sh apiserver-options             the kwokctl `options:` lines the apiserver needs for it
#   hack/real-node.sh apiserver-args <cluster-dir>  the kube-apiserver extraArgs it needs
#   hack/real-node.sh owner                         print the cluster name that has the node (exit 1: none)
#   hack/real-node.sh ctr <args...>                 ctr against the node's containerd, namespace k8s.io (pods' containers)
#   hack/real-node.sh host-state                    print what a real node changes on the host, as it is now
#   hack/real-node.sh check-host <before-file>      exit 1, with the difference, unless host-state equals it
#
# Root only. One per machine (kube-proxy's iptables chains are global to the host): its state is
# $HELM_OPERATOR_CACHE_DIR/real-node, whichever cluster it belongs to.
set -euo pipefail

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
. "${TOOLS_VERSIONS_FILE:-$HACK_DIR/versions.env}"
CACHE_ROOT=${HELM_OPERATOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/helm-operator-ts}
STATE=$CACHE_ROOT/real-node
# Names and addresses the host-state check (hack/host-state.sh) knows too.
NODE=real-node-0
BRIDGE=horn0
POD_CIDR=10.244.0.0/24
NODE_IP=10.244.0.1
TAINT_KEY=helm-operator.io/real-node
RULE_COMMENT=helm-operator-real-node
REGISTRY_PORT=${REGISTRY_PORT:-5000}
# The sysctls the kubelet (protectKernelDefaults: false), the bridge plugin and kube-proxy may set.
SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys
kernel.keys.root_maxbytes net.ipv4.ip_forward net.ipv4.conf.all.forwarding net.ipv4.conf.all.route_localnet
net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables net.netfilter.nf_conntrack_max"
# Host paths outside STATE that the kubelet, containerd or libcni create whatever their configuration.
HOST_PATHS="/var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/containerd /run/netns"
# Paths a misconfigured node would create (containerd's, the kubelet's and CNI's defaults): checked only.
WATCHED_PATHS="/var/lib/containerd /opt/containerd /run/nri /etc/kubernetes /etc/cni /opt/cni"
# The kubelet's own iptables chains, which `kube-proxy --cleanup` leaves.
KUBELET_CHAINS="KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT"

log() { printf '[real-node %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

need_root() {
  [ "$(id -u)" = 0 ] || die "a real node needs root: it runs containerd and the kubelet, and changes host networking (docs/real-node.md)"
}

load_tools() {
  bash "$HACK_DIR/tools.sh" real-node kubectl >&2
  eval "$(bash "$HACK_DIR/tools.sh" env)"
  CTR=$CONTAINERD_DIR/ctr
  SOCK=$STATE/containerd/containerd.sock
}

# shellcheck source=wait-for.sh
. "$HACK_DIR/wait-for.sh"
WAIT_FOR_HINT="logs: $STATE/logs"

# --- prepare: what the control plane needs to exist before it starts ------------------------------

# The first address of the Service range: the `kubernetes` Service's ClusterIP, in the apiserver's certificate.
first_service_ip() {
  local cidr=${SERVICE_CIDR:-10.0.0.0/24} ip
  ip=${cidr%/*}
  printf '%s.%s\n' "${ip%.*}" "$((${ip##*.} + 1))"
}

cmd_prepare() {
  local owner=$1 p
  need_root
  if [ -f "$STATE/owner" ]; then
    die "a real node already runs on this machine, for cluster '$(cat "$STATE/owner")' (one per machine: kube-proxy's iptables chains are host-wide); take it down first: hack/cluster.sh down --name $(cat "$STATE/owner")"
  fi
  ip link show "$BRIDGE" >/dev/null 2>&1 && die "bridge $BRIDGE exists but no real node is recorded in $STATE; delete it (ip link del $BRIDGE) if nothing else uses it"
  rm -rf "$STATE" && mkdir -p "$STATE/logs" "$STATE/pids"
  echo "$owner" >"$STATE/owner"
  # What `down` restores or removes: the sysctls as they are now, the host paths that do not exist
  # yet, the network namespaces already there (kept).
  for p in $SYSCTLS; do
    if v=$(sysctl -n "$p" 2>/dev/null); then printf '%s=%s\n' "$p" "$v"; fi
  done >"$STATE/sysctls.before"
  for p in $HOST_PATHS; do [ -e "$p" ] || echo "$p"; done >"$STATE/host-paths.created"
  ip netns list 2>/dev/null | awk '{print $1}' >"$STATE/netns.before"
  # The node's address exists before anything needs it: the kubelet's --node-ip must be local, the
  # relay binds it, and the CNI bridge plugin adopts the bridge as it finds it.
  ip link add name "$BRIDGE" type bridge
  ip addr add "$NODE_IP/${POD_CIDR#*/}" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # Pods reach each other and the host (the relay, the kubelet), never past it.
  iptables -I FORWARD 1 -i "$BRIDGE" ! -o "$BRIDGE" -m comment --comment "$RULE_COMMENT" -j DROP
  log "bridge $BRIDGE ($NODE_IP) and its FORWARD rule are in place"
}

# kwokctl configuration for the apiserver of a cluster with a real node: pods reach it at the bridge
# address (through the relay) and at the `kubernetes` ClusterIP, so both go in its certificate
# (apiserver-options: lines of `options:`); it reaches the kubelet by InternalIP (the default tries the
# node name in DNS first), with a client certificate (apiserver-args: kube-apiserver extraArgs).
cmd_apiserver_options() {
  printf '  kubeApiserverCertSANs: [%s, %s]\n' "$NODE_IP" "$(first_service_ip)"
}

cmd_apiserver_args() {
  local cluster_dir=$1
  cat <<EOF
  - key: advertise-address
    value: $NODE_IP
  - key: kubelet-preferred-address-types
    value: InternalIP
  - key: kubelet-client-certificate
    value: $cluster_dir/pki/admin.crt
  - key: kubelet-client-key
    value: $cluster_dir/pki/admin.key
EOF
}

# --- up -------------------------------------------------------------------------------------------

start_daemon() { # start_daemon <name> <command...>: detached, its own session, pid in STATE/pids
  local name=$1
  shift
  setsid nohup "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/$name.pid"
}

sign() { # sign <name> <subject> [ip-san]: a key and a certificate signed by the cluster CA
  local name=$1 subj=$2 san=${3:-} ext
  ext=$(mktemp)
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n' \
    "$([ -n "$san" ] && echo serverAuth || echo clientAuth)" >"$ext"
  [ -z "$san" ] || printf 'subjectAltName=IP:%s\n' "$san" >>"$ext"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$STATE/pki/$name.key" -subj "$subj" -out "$STATE/pki/$name.csr" 2>/dev/null
  openssl x509 -req -in "$STATE/pki/$name.csr" -CA "$CA_DIR/ca.crt" -CAkey "$CA_DIR/ca.key" -CAcreateserial \
    -days 30 -extfile "$ext" -out "$STATE/pki/$name.crt" 2>/dev/null
  rm -f "$ext" "$STATE/pki/$name.csr"
}

kubeconfig_for() { # kubeconfig_for <name>: a kubeconfig on loopback with the certificate <name>
  cat >"$STATE/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "$SERVER", certificate-authority: "$CA_DIR/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$STATE/pki/$1.crt", client-key: "$STATE/pki/$1.key"}
contexts:
- name: local
  context: {cluster: local, user: $1}
current-context: local
EOF
}

write_containerd_config() {
  local host dir
  mkdir -p "$STATE/containerd/certs.d" "$STATE/cni/net.d"
  # Every registry name a chart uses goes to the loopback registry, and so does the registry itself
  # (plain HTTP): no pull ever leaves the machine, and stand-ins serve under their public names.
  for host in "127.0.0.1:$REGISTRY_PORT" "localhost:$REGISTRY_PORT" docker.io registry.k8s.io quay.io ghcr.io; do
    dir=$STATE/containerd/certs.d/$host
    mkdir -p "$dir"
    printf 'server = "http://127.0.0.1:%s"\n\n[host."http://127.0.0.1:%s"]\n  capabilities = ["pull", "resolve"]\n' \
      "$REGISTRY_PORT" "$REGISTRY_PORT" >"$dir/hosts.toml"
  done
  # Every path inside STATE, so nothing is left elsewhere (containerd's defaults are /var/lib,
  # /run/containerd/runc, /opt/containerd). restrict_oom_score_adj: no CAP_SYS_RESOURCE here, and
  # the kubelet's -998 for the sandbox would fail every pod. cgroupfs: no systemd.
  cat >"$STATE/containerd/config.toml" <<EOF
version = 3
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"

[grpc]
  address = "$SOCK"

[plugins]
  [plugins.'io.containerd.internal.v1.opt']
    path = "$STATE/containerd/opt"
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "$PAUSE_IMAGE"
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = "$STATE/containerd/certs.d"
  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    enable_cdi = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["/usr/lib/cni"]
      conf_dir = "$STATE/cni/net.d"
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "$(command -v runc)"
          Root = "$STATE/runc"
          SystemdCgroup = false
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
EOF
  # No masquerade: pods talk to each other and to the host only (the FORWARD rule drops the rest).
  cat >"$STATE/cni/net.d/10-$BRIDGE.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$BRIDGE",
  "plugins": [{
    "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": "$STATE/cni/ipam",
             "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]], "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}
EOF
}

write_kubelet_config() {
  # No resolver: pods get no DNS server rather than the host's (no lookup leaves the machine).
  : >"$STATE/resolv.conf"
  cat >"$STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $STATE/pki/kubelet-serving.crt
tlsPrivateKeyFile: $STATE/pki/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $CA_DIR/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$SOCK
cgroupDriver: cgroupfs
# This machine is cgroup v1; since 1.35 the kubelet refuses it unless told (ADR 0047, 0109).
failCgroupV1: false
failSwapOn: false
podLogsDir: $STATE/pod-logs
resolvConf: $STATE/resolv.conf
serializeImagePulls: false
maxPods: 30
registerWithTaints:
- {key: $TAINT_KEY, value: "true", effect: NoSchedule}
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
EOF
  cat >"$STATE/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $STATE/kube-proxy.kubeconfig}
hostnameOverride: $NODE
mode: iptables
clusterCIDR: $POD_CIDR
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
nodePortAddresses: ["$NODE_IP/32"]
# Leave the host's conntrack sysctls and route_localnet alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
EOF
}

cmd_up() {
  local cluster_dir=$1 kubeconfig=$2 port images start=$SECONDS
  need_root
  [ -f "$STATE/owner" ] || die "hack/real-node.sh prepare did not run"
  load_tools
  CA_DIR=$cluster_dir/pki
  SERVER=$(awk '$1 == "server:" {print $2; exit}' "$kubeconfig")
  port=${SERVER##*:}
  [ -n "$port" ] || die "no apiserver port in $kubeconfig"
  mkdir -p "$STATE/pki"
  # Pods dial the `kubernetes` Service (the advertised bridge address); the apiserver stays on loopback.
  start_daemon relay socat "TCP-LISTEN:$port,bind=$NODE_IP,reuseaddr,fork" "TCP:127.0.0.1:$port"
  sign kubelet "/O=system:nodes/CN=system:node:$NODE"
  sign kubelet-serving "/CN=$NODE" "$NODE_IP"
  sign kube-proxy "/CN=system:kube-proxy"
  kubeconfig_for kubelet
  kubeconfig_for kube-proxy
  write_containerd_config
  write_kubelet_config
  start_daemon containerd "$CONTAINERD_DIR/containerd" --config "$STATE/containerd/config.toml"
  wait_for 30 "containerd" "$CTR" --address "$SOCK" version
  "$CTR" --address "$SOCK" -n k8s.io images import --no-unpack=false "$PAUSE_DIR/pause.tar" >/dev/null
  # Not `ctr ... | grep -q`: grep's early exit would make ctr fail with SIGPIPE under pipefail.
  images=$("$CTR" --address "$SOCK" -n k8s.io images ls -q)
  grep -qx "$PAUSE_IMAGE" <<<"$images" || die "the pause image did not import as $PAUSE_IMAGE (images: $images)"
  start_daemon kubelet "$KUBELET_BIN" --config "$STATE/kubelet.yaml" --kubeconfig "$STATE/kubelet.kubeconfig" \
    --root-dir "$STATE/kubelet" --cert-dir "$STATE/kubelet/pki" --hostname-override "$NODE" --node-ip "$NODE_IP" \
    --node-labels "$TAINT_KEY=true" --v 1
  start_daemon kube-proxy "$KUBE_PROXY_BIN" --config "$STATE/kube-proxy.yaml" --v 1
  wait_for 90 "node $NODE to be Ready" "$KUBECTL_BIN" --kubeconfig "$kubeconfig" wait --for=condition=Ready "node/$NODE" --timeout=5s
  log "node $NODE is Ready in $((SECONDS - start))s (taint $TAINT_KEY=true:NoSchedule; logs: $STATE/logs)"
}

# --- down -----------------------------------------------------------------------------------------

pid_of() { cat "$STATE/pids/$1.pid" 2>/dev/null || true; }

stop_pid() { # stop_pid <pid> [seconds]: SIGTERM, then SIGKILL
  local pid=$1 limit=${2:-15} i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null || true
  for ((i = 0; i < limit * 5; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  kill -9 "$pid" 2>/dev/null || true
}

# Deletes chain $2 of table $1 (iptables command $3) and every rule that jumps to it.
delete_chain() {
  local table=$1 chain=$2 ipt=$3 rule
  "$ipt" -t "$table" -S "$chain" >/dev/null 2>&1 || return 0
  { "$ipt" -t "$table" -S | grep -E -- "-j $chain( |\$)" || true; } | sed 's/^-A /-D /' | while read -r rule; do
    eval "\"$ipt\" -t $table $rule" || true
  done
  "$ipt" -t "$table" -F "$chain" 2>/dev/null || true
  "$ipt" -t "$table" -X "$chain" 2>/dev/null || true
}

stop_containers() {
  local ns id
  [ -S "$SOCK" ] || return 0
  for ns in $("$CTR" --address "$SOCK" namespaces ls -q 2>/dev/null); do
    for id in $("$CTR" --address "$SOCK" -n "$ns" tasks ls -q 2>/dev/null); do
      "$CTR" --address "$SOCK" -n "$ns" tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
      "$CTR" --address "$SOCK" -n "$ns" tasks delete -f "$id" >/dev/null 2>&1 || true
    done
  done
}

# Processes left in the kubelet's cgroups (a container whose shim died), then the cgroups themselves.
remove_cgroups() {
  local dir pid
  for dir in /sys/fs/cgroup/*/kubepods; do
    [ -d "$dir" ] || continue
    for pid in $(find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  done
  for dir in /sys/fs/cgroup/*/kubepods; do
    [ -d "$dir" ] || continue
    find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [ ! -d "$dir" ] || { sleep 1; find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true; }
  done
}

# Mount points under the given directories, deepest first.
mounts_under() {
  awk '{print $5}' /proc/self/mountinfo | sed 's/\\040/ /g' | grep -E "^($(IFS='|'; echo "$*"))(/|\$)" | sort -r || true
}

# containerd's pod network namespaces (cni-<uuid>; podman's are netns-<uuid>): their mounts.
netns_mounts() {
  awk '{print $5}' /proc/self/mountinfo | grep -E '^(/var)?/run/netns/cni-' || true
}

# Processes whose executable is $1.
pids_of_exe() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/exe" 2>/dev/null)" = "$1" ] && echo "${p#/proc/}"
  done
  return 0
}

cmd_down() {
  local pid m ns p ipt table chain created
  need_root
  [ -f "$STATE/owner" ] || { log "no real node on this machine"; return 0; }
  load_tools
  # The recipe's order: the kubelet first (it would restart what is stopped under it), kube-proxy and
  # its rules, the relay, the containers, containerd, its shims; then what they left on the host.
  stop_pid "$(pid_of kubelet)"
  stop_pid "$(pid_of kube-proxy)"
  [ ! -f "$STATE/kube-proxy.yaml" ] || "$KUBE_PROXY_BIN" --config "$STATE/kube-proxy.yaml" --cleanup >"$STATE/logs/kube-proxy-cleanup.log" 2>&1 || true
  stop_pid "$(pid_of relay)"
  stop_containers
  stop_pid "$(pid_of containerd)"
  for pid in $(pids_of_exe "$CONTAINERD_DIR/containerd-shim-runc-v2"); do stop_pid "$pid" 5; done
  for m in $(mounts_under "$STATE" /run/containerd /var/lib/kubelet) $(netns_mounts); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    grep -qx "$ns" "$STATE/netns.before" 2>/dev/null || case "$ns" in cni-*) ip netns delete "$ns" 2>/dev/null || true ;; esac
  done
  iptables -D FORWARD -i "$BRIDGE" ! -o "$BRIDGE" -m comment --comment "$RULE_COMMENT" -j DROP 2>/dev/null || true
  for ipt in iptables ip6tables; do
    for table in filter nat mangle; do
      for chain in $KUBELET_CHAINS; do delete_chain "$table" "$chain" "$ipt"; done
    done
  done
  remove_cgroups
  ip link del "$BRIDGE" 2>/dev/null || true
  [ ! -f "$STATE/sysctls.before" ] || while IFS= read -r p; do sysctl -q -w "$p" >/dev/null 2>&1 || log "could not restore $p"; done <"$STATE/sysctls.before"
  # Host paths: removed when this node created them; otherwise only what it put there.
  created=$(cat "$STATE/host-paths.created" 2>/dev/null || true)
  for p in $HOST_PATHS; do
    if printf '%s\n' "$created" | grep -qx "$p"; then
      [ -z "$(mounts_under "$p")" ] && rm -rf "$p"
    fi
  done
  [ -d /var/log/containers ] && find /var/log/containers -maxdepth 1 -lname "$STATE/*" -delete 2>/dev/null || true
  [ -z "$(mounts_under "$STATE")" ] || die "mounts under $STATE are still there; not deleting it: $(mounts_under "$STATE" | tr '\n' ' ')"
  rm -rf "$STATE"
  log "real node stopped; host restored"
}

# --- host state: what `down` must leave as `prepare` found it --------------------------------------

# Everything below concerns the real node only (its binaries, state dir, names and addresses), so
# kwok clusters and podman containers of other users of the machine do not show.
host_state() {
  local p ipt procs
  eval "$(bash "$HACK_DIR/tools.sh" env 2>/dev/null)"
  procs=$(ps -eo pid=,args=)
  printf '%s\n' "$procs" | awk -v a="$(dirname "$KUBELET_BIN")/" -v b="$CONTAINERD_DIR/" -v s="$STATE" -v ip="$NODE_IP" \
    'index($2, a) == 1 || index($2, b) == 1 || index($0, s) || ($2 ~ /socat$/ && index($0, ip)) || $2 == "/pause" {$1 = ""; print "process" $0}'
  { mounts_under "$STATE" /run/containerd /var/lib/kubelet; netns_mounts; } | sed 's/^/mount /'
  ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ {print "netns " $1}'
  ip -o link show 2>/dev/null | awk -F': ' -v br="$BRIDGE" '$2 == br || index($0, "master " br " ") {print "link " $2}'
  ip -o addr show 2>/dev/null | awk -v ip="$NODE_IP" 'index($0, " " ip "/") {print "addr " $2 " " $4}'
  ip route show 2>/dev/null | grep -E "$BRIDGE|${POD_CIDR%.*}\." | sed 's/^/route /' || true
  for ipt in iptables-save ip6tables-save; do
    "$ipt" 2>/dev/null | grep -E "KUBE-|CNI-|$BRIDGE|$RULE_COMMENT" | sed -E "s/ \[[0-9]+:[0-9]+\]\$//; s/^/$ipt /" | sort || true
  done
  find /sys/fs/cgroup -maxdepth 2 -name 'kubepods*' 2>/dev/null | sed 's/^/cgroup /' | sort
  for p in $SYSCTLS; do printf 'sysctl %s=%s\n' "$p" "$(sysctl -n "$p" 2>/dev/null || echo absent)"; done
  for p in $HOST_PATHS $WATCHED_PATHS "$STATE"; do
    if [ -e "$p" ]; then printf 'path %s: %s\n' "$p" "$(ls -A "$p" 2>/dev/null | tr '\n' ' ')"; fi
  done
  ss -ltnH 2>/dev/null | awk -v ip="$NODE_IP" '$4 ~ /:(10250|10248|10249|10256)$/ || index($4, ip ":") == 1 {print "listen " $4}'
}

cmd_check_host() {
  local before=$1 now
  now=$(host_state)
  if ! diff <(cat "$before") <(printf '%s\n' "$now") >&2; then
    die "the host differs from $before (lines with > are new, < are gone): the real node left these behind"
  fi
}

cmd_owner() { [ -f "$STATE/owner" ] && cat "$STATE/owner"; }

case "${1:-}" in
  prepare) cmd_prepare "${2:?usage: hack/real-node.sh prepare <cluster-name>}" ;;
  up) cmd_up "${2:?usage: hack/real-node.sh up <cluster-dir> <kubeconfig>}" "${3:?usage: hack/real-node.sh up <cluster-dir> <kubeconfig>}" ;;
  down) cmd_down ;;
  apiserver-options) cmd_apiserver_options ;;
  apiserver-args) cmd_apiserver_args "${2:?usage: hack/real-node.sh apiserver-args <cluster-dir>}" ;;
  owner) cmd_owner ;;
  ctr) shift; load_tools >/dev/null; exec "$CTR" --address "$SOCK" -n k8s.io "$@" ;;
  host-state) host_state ;;
  check-host) cmd_check_host "${2:?usage: hack/real-node.sh check-host <before-file>}" ;;
  *) die "usage: hack/real-node.sh prepare <cluster-name> | up <cluster-dir> <kubeconfig> | down | apiserver-options | apiserver-args <cluster-dir> | owner | ctr <args...> | host-state | check-host <before-file>" ;;
esac
