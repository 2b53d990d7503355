#!/usr/bin/env bash
# Measures the operator's memory while it reconciles N sample CRs, to size the Deployment's
# requests/limits (config/manager/manager.yaml; numbers in docs/adr/0010-deploying-the-operator.md).
#
#   KUBECONFIG=<cluster> hack/measure-memory.sh [N=20] [SETTLE_SECONDS=75] [MAX_CONCURRENT=2]
#   MEASURE_REF=HEAD hack/measure-memory.sh ...   measure a committed revision instead of the work tree
#   OPERATOR_NODE_OPTIONS=--max-old-space-size=192 hack/measure-memory.sh ...   node flags for the operator only
#
# Runs the compiled operator (`node dist/cli/main.js run`; the image runs the same code bundled, see
# hack/bundle.ts, which starts ~10 MiB lighter) against the cluster,
# creates N Nginx CRs from config/samples in a fresh namespace, and samples every 0.2 s with `ps`:
# the node process's RSS, and the RSS of the helm processes it spawns. Phases: install (until every
# CR is Deployed=True), steady (SETTLE_SECONDS more, covering one periodic 1m resync), uninstall
# (delete every CR, until they are gone). Prints the peak and last value per phase. Needs the CRD
# installed (make install). Cleans up its namespace and stops the operator it started.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
N=${1:-20}
SETTLE_SECONDS=${2:-75}
MAX_CONCURRENT=${3:-2}
PATH="$(bash hack/tools.sh node-dir):$PATH"
bash hack/tools.sh helm kubectl >&2
# 2>/dev/null: without go, `env` complains about the control plane paths, which are not used here.
eval "$(bash hack/tools.sh env 2>/dev/null)"
kubectl() { "$KUBECTL_BIN" "$@"; }

work=$(mktemp -d)
ns="measure-$(date +%s)"
out="$ROOT/.cache/measure-dist"
op_pid=""
cleanup() {
  [ -z "$op_pid" ] || kill "$op_pid" 2>/dev/null || true
  [ -z "$op_pid" ] || wait "$op_pid" 2>/dev/null || true
  kubectl delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

rm -rf "$out" && mkdir -p "$out"
if [ -n "${MEASURE_REF:-}" ]; then
  # A clean snapshot of src/ at that revision, compiled next to the repo's node_modules.
  snap="$ROOT/.cache/measure-src"
  rm -rf "$snap" && mkdir -p "$snap"
  git archive "$MEASURE_REF" src | tar -x -C "$snap"
  printf '{"extends":"../../tsconfig.json","compilerOptions":{"rootDir":"src","outDir":"../measure-dist"},"include":["src"]}\n' >"$snap/tsconfig.json"
  echo "[measure] compiling src/ of $MEASURE_REF into $out" >&2
  npx tsc -p "$snap/tsconfig.json"
else
  echo "[measure] compiling src/ into $out" >&2
  npx tsc -p tsconfig.build.json --outDir "$out"
fi
printf -- '- group: example.com\n  version: v1alpha1\n  kind: Nginx\n  chart: %s\n' "$ROOT/helm-charts/nginx" >"$work/watches.yaml"
kubectl create namespace "$ns" >/dev/null

NODE_OPTIONS="${OPERATOR_NODE_OPTIONS:-}" node "$out/cli/main.js" run --watches-file "$work/watches.yaml" --helm-binary "$HELM_BIN" \
  --max-concurrent-reconciles "$MAX_CONCURRENT" --zap-log-level warn \
  --metrics-bind-address=0 --health-probe-bind-address=0 >"$work/operator.log" 2>&1 &
op_pid=$!

phase=start
sample() { # prints: phase operator_rss_kib helm_count helm_rss_sum_kib helm_rss_max_kib
  local rss helm
  rss=$(ps -o rss= -p "$op_pid" 2>/dev/null | tr -d ' ') || return 0
  helm=$(ps -o rss=,comm= --ppid "$op_pid" 2>/dev/null | awk '$2=="helm"{n++; s+=$1; if($1>m)m=$1} END{printf "%d %d %d", n, s, m}' || true)
  echo "$phase $rss $helm"
}
sampler() { while kill -0 "$op_pid" 2>/dev/null; do phase=$(cat "$work/phase"); sample; sleep 0.2; done; }
echo start >"$work/phase"
sampler >"$work/samples" &
sampler_pid=$!

# CPU seconds used so far by the operator and the helm processes it has reaped (utime+stime+cutime+cstime).
cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15 + $16 + $17) / t }' "/proc/$op_pid/stat"; }
sleep 3
cpu_start=$(cpu)
echo install >"$work/phase"
start=$SECONDS
for i in $(seq 1 "$N"); do
  sed "s/name: nginx-sample/name: nginx-$i/" config/samples/example.com_v1alpha1_nginx.yaml
  echo ---
done | kubectl apply -n "$ns" -f - >/dev/null
kubectl wait -n "$ns" --for=condition=Deployed --all nginxes.example.com --timeout=600s >/dev/null
echo "[measure] $N CRs Deployed=True after $((SECONDS - start))s; CPU seconds (operator + helm) since start-up: $(cpu) (at start-up: $cpu_start)" >&2
echo steady >"$work/phase"
cpu_steady=$(cpu)
sleep "$SETTLE_SECONDS"
echo "[measure] steady phase: $(awk -v a="$cpu_steady" -v b="$(cpu)" 'BEGIN { printf "%.1f", b - a }') CPU seconds in ${SETTLE_SECONDS}s" >&2
echo uninstall >"$work/phase"
start=$SECONDS
kubectl delete nginxes.example.com -n "$ns" --all --timeout=600s >/dev/null
echo "[measure] $N CRs uninstalled and gone after $((SECONDS - start))s; CPU seconds so far: $(cpu)" >&2
echo end >"$work/phase"
sleep 1
kill "$op_pid"
wait "$op_pid" || true
op_pid=""
wait "$sampler_pid" || true

echo "phase      samples  operator_rss_MiB(peak/last)  helm_procs(peak)  helm_rss_sum_MiB(peak)  one_helm_rss_MiB(peak)  operator+helm_MiB(peak)"
awk '{ p=$1; n[p]++; if($2>orss[p])orss[p]=$2; last[p]=$2; if($3>hc[p])hc[p]=$3; if($4>hs[p])hs[p]=$4; if($5>hm[p])hm[p]=$5; t=$2+$4; if(t>tot[p])tot[p]=t;
       if(!(p in seen)){seen[p]=1; order[++k]=p} }
     END { for(i=1;i<=k;i++){p=order[i]; printf "%-10s %7d  %12.1f / %-12.1f  %16d  %22.1f  %22.1f  %22.1f\n", p, n[p], orss[p]/1024, last[p]/1024, hc[p], hs[p]/1024, hm[p]/1024, tot[p]/1024} }' "$work/samples"
if grep -q '"level":"\(error\|fatal\)"' "$work/operator.log"; then
  echo "[measure] the operator logged errors:" >&2
  grep '"level":"\(error\|fatal\)"' "$work/operator.log" | head -5 >&2
fi
