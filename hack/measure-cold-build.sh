#!/usr/bin/env bash
# How long CI's tools take to build from empty caches (issue 33's cold-time criterion), one
# component at a time, without touching the warm cache: a fresh clone of this repository in
# <dir>/repo, HELM_OPERATOR_CACHE_DIR=<dir>/cache and npm_config_cache=<dir>/npm, so the Go module
# and build caches start empty too. Prints one line per step (time, exit code, seconds) and the
# total. Debian packages are the machine's; <dir> is removed first.
#   hack/measure-cold-build.sh /tmp/cold [component...]   (default: what .ci/run builds)
set -u
dir=${1:?usage: hack/measure-cold-build.sh <dir> [component...]}
shift
components=("$@")
[ ${#components[@]} -gt 0 ] || components=(helm etcd kwok k8s helm3 registry olm-validate olm kubelet containerd pause)
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rm -rf "$dir" && mkdir -p "$dir"
git clone -q "$repo_root" "$dir/repo" && cd "$dir/repo" || exit 1
export HELM_OPERATOR_CACHE_DIR="$dir/cache" npm_config_cache="$dir/npm"
start=$(date +%s)
step() {
  local s rc
  s=$(date +%s)
  "$@" >"$dir/step.log" 2>&1
  rc=$?
  echo "$(date +%H:%M:%S) rc=$rc $(($(date +%s) - s))s :: $*"
  [ "$rc" = 0 ] || tail -n 5 "$dir/step.log"
}
step bash hack/tools.sh node
PATH="$(bash hack/tools.sh node-dir):$PATH"
export PATH
step npm ci --no-audit --no-fund
for c in "${components[@]}"; do step bash hack/tools.sh "$c"; done
echo "total $(($(date +%s) - start))s"
