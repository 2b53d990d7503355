#!/usr/bin/env bash
# A helm that times itself: runs $REAL_HELM with the same arguments and appends one line per process
# to $HELM_TIMING_LOG: exit code, wall s, user s, system s, max RSS KiB, involuntary and voluntary
# context switches, then `:: <arguments>`. For the benchmark (BENCH_HELM_BIN=hack/helm-timing-wrapper.sh,
# ADR 0067); /usr/bin/time's rusage includes helm's own children (the post-renderer).
#   awk '/ install /{c+=$3+$4;n++} END{print c/n}' "$HELM_TIMING_LOG"   # CPU-s per install
set -u
: "${REAL_HELM:?REAL_HELM: the helm executable to time}" "${HELM_TIMING_LOG:?HELM_TIMING_LOG: where the lines go}"
times=$(mktemp)
/usr/bin/time -f '%e %U %S %M %c %w' -o "$times" "$REAL_HELM" "$@"
rc=$?
printf '%s %s :: %s\n' "$rc" "$(cat "$times")" "$*" >>"$HELM_TIMING_LOG"
rm -f "$times"
exit "$rc"
