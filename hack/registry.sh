#!/usr/bin/env bash
# A local OCI registry on 127.0.0.1 for a machine with none: the CNCF distribution registry that
# hack/tools.sh builds from its Go module, started in the background. Images pushed to it (the
# operator, its bundle, a catalog) are what `opm render`, `run bundle <image> --use-http` and a
# cluster on this machine pull. Plain HTTP on loopback: podman pushes with --tls-verify=false (the
# scaffolded Makefile adds it for 127.0.0.1 and localhost), opm reads with --use-http.
#
#   hack/registry.sh up [--port P]       start it (default port 5000) unless it answers already; prints
#                                        `export REGISTRY=127.0.0.1:P` (eval "$(make -s registry-up)")
#   hack/registry.sh down [--port P]     stop it; what was pushed stays for the next `up`
#   hack/registry.sh status [--port P]   exit 0 when it answers
#
# State (images, config, pid, log): $HELM_OPERATOR_CACHE_DIR/registries/<port>/.
set -euo pipefail

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_ROOT=${HELM_OPERATOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/helm-operator-ts}
PORT=${REGISTRY_PORT:-5000}

die() { printf 'error: %s\n' "$*" >&2; exit 1; }

parse_flags() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --port) PORT=${2:?--port needs a value}; shift 2 ;;
      *) die "unknown flag '$1'" ;;
    esac
  done
  [[ "$PORT" =~ ^[0-9]+$ ]] && ((PORT > 0 && PORT < 65536)) || die "port '$PORT' must be a number from 1 to 65535"
  DIR="$CACHE_ROOT/registries/$PORT"
  ADDR="127.0.0.1:$PORT"
}

answers() { curl -fsS -o /dev/null --max-time 2 "http://$ADDR/v2/" 2>/dev/null; }

running_pid() {
  local pid
  pid=$(cat "$DIR/pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null && echo "$pid"
}

cmd_up() {
  if answers; then
    # Ours from an earlier `up`, or another registry already on that port: either serves pushes.
    printf 'export REGISTRY=%s\n' "$ADDR"
    return 0
  fi
  bash "$HACK_DIR/tools.sh" registry >&2
  eval "$(bash "$HACK_DIR/tools.sh" env)"
  mkdir -p "$DIR/data"
  printf 'version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n' \
    "$DIR/data" "$ADDR" >"$DIR/config.yml"
  OTEL_TRACES_EXPORTER=none nohup "$REGISTRY_BIN" serve "$DIR/config.yml" >"$DIR/registry.log" 2>&1 </dev/null &
  echo $! >"$DIR/pid"
  for _ in $(seq 1 100); do
    if answers; then
      printf 'export REGISTRY=%s\n' "$ADDR"
      return 0
    fi
    running_pid >/dev/null || break
    sleep 0.2
  done
  die "the registry did not answer on $ADDR (port in use?); its log, $DIR/registry.log:
$(tail -n 5 "$DIR/registry.log" 2>/dev/null)"
}

cmd_down() {
  local pid
  if pid=$(running_pid); then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/pid"
}

main() {
  local cmd=${1:-}
  shift || true
  parse_flags "$@"
  case "$cmd" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) answers ;;
    *) die "usage: hack/registry.sh up|down|status [--port P]" ;;
  esac
}

main "$@"
