#!/bin/bash
# BUNDLE=<dir> [CLUSTER_NAME=…] [ROUNDS=30] hack/measure-event-writes.sh   (BUNDLE: `npm run bundle -- <dir>`; docs/benchmarks.md)
# Event writes in a bulk failure scenario: 20 Nginx CRs, each with an invalid annotation value
# changed ROUNDS times (every reconcile records an InvalidAnnotation Warning with the value in it),
# then the same value poked ROUNDS more times (a repeat). Counts the API server's event writes.
set -e
cd "$(dirname "$0")/.."; ROOT=$PWD; WORK=$(mktemp -d)
export PATH=$(bash hack/tools.sh node-dir):$PATH
export KUBECONFIG=$(bash hack/cluster.sh kubeconfig --name "${CLUSTER_NAME:-helm-operator-test}" | tail -1)
ROUNDS=${ROUNDS:-30}
NS=ev$RANDOM
kubectl create ns $NS >/dev/null
printf -- "- group: example.com\n  version: v1alpha1\n  kind: Nginx\n  chart: $ROOT/helm-charts/nginx\n" > $WORK/watches.yaml
HOME=$WORK WATCH_NAMESPACE=$NS node $BUNDLE/helm-operator.js run --watches-file $WORK/watches.yaml --metrics-bind-address 127.0.0.1:18080 --health-probe-bind-address 127.0.0.1:18081 --helm-binary "$(bash hack/tools.sh path helm3)/helm" --max-concurrent-reconciles 2 > $WORK/ev-op.log 2>&1 &
OP=$!
until curl -sf 127.0.0.1:18081/readyz >/dev/null; do sleep 0.2; done
for i in $(seq -w 1 20); do printf 'apiVersion: example.com/v1alpha1\nkind: Nginx\nmetadata: {name: n%s}\nspec: {replicaCount: 2, service: {port: 8080, type: ClusterIP}}\n---\n' $i; done > $WORK/crs.yaml
kubectl -n $NS apply -f $WORK/crs.yaml >/dev/null
until [ "$(kubectl -n $NS get nginx -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Deployed")].status}{"\n"}{end}' | grep -c True)" = 20 ]; do sleep 1; done
sleep 5
writes() { kubectl get --raw /metrics | grep '^apiserver_request_total' | grep 'resource="events"' | grep -E 'verb="(POST|PATCH)"' | sed -E 's/.*verb="([A-Z]+)".* ([0-9]+)$/\1 \2/' | awk '{s[$1]+=$2} END {printf "POST=%d PATCH=%d\n", s["POST"], s["PATCH"]}'; }
reconciles() { curl -s 127.0.0.1:18080/metrics | grep '^controller_runtime_reconcile_total' | awk '{s+=$2} END {print s}'; }
B=$(writes); R0=$(reconciles)
for r in $(seq 1 $ROUNDS); do kubectl -n $NS annotate nginx --all --overwrite helm.sdk.operatorframework.io/uninstall-wait=bad$r >/dev/null; sleep 1; done
sleep 5; M=$(writes); R1=$(reconciles)
for r in $(seq 1 $ROUNDS); do kubectl -n $NS annotate nginx --all --overwrite test.example.com/poke=p$r >/dev/null; sleep 1; done
sleep 5; A=$(writes); R2=$(reconciles)
echo "before: $B | after distinct flood ($((R1-R0)) reconciles): $M | after repeats ($((R2-R1)) reconciles): $A"
echo "Event objects about Nginx CRs: $(kubectl -n $NS get events --field-selector involvedObject.kind=Nginx -o name | wc -l)"
curl -s 127.0.0.1:18080/metrics | grep '^helm_operator_events_dropped_total' || true
kill $OP; wait $OP 2>/dev/null || true
kubectl delete nginx -n $NS --all --wait=false >/dev/null; sleep 3; kubectl delete ns $NS --wait=false >/dev/null
