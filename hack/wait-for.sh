# Sourced by hack/cluster.sh and hack/real-node.sh (which define die).
# wait_for <seconds> <description> <command...>: runs the command every second until it succeeds;
# dies after <seconds>, naming what it waited for and, when set, $WAIT_FOR_HINT (where to look).
wait_for() {
  local limit=$1 what=$2 start=$SECONDS
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS - start < limit)) || die "timed out after ${limit}s waiting for $what${WAIT_FOR_HINT:+ ($WAIT_FOR_HINT)}"
    sleep 1
  done
}
