/**
 * The kustomize tree of a project (`config/`), as this repository has it: `init` writes these with
 * the project's name. test/unit/scaffold/templates.test.ts renders them for the name
 * "helm-operator" and compares them with this repository's own config/, so the two never drift.
 * Files that depend on the APIs (CRDs, samples, the manager role) are in api.ts.
 */

import { baseCsv, manifestsKustomization } from '../../bundle/kustomize-manifests.js';
import { scorecardKustomize } from '../../bundle/scorecard.js';

export interface ProjectNames {
  /** `projectName` of PROJECT: names the namespace (`<name>-system`), the name prefix and labels. */
  readonly projectName: string;
}

export const configFiles = (p: ProjectNames): Record<string, string> => ({
  'config/default/kustomization.yaml': `# The operator with everything it needs: \`make deploy IMG=...\` applies this, \`make build-installer
# IMG=...\` writes it to dist/install.yaml.
#
# Every namespaced object goes into this namespace; every name gets the prefix (CRD names are
# never prefixed), so several operators built from this layout can share a cluster.
namespace: ${p.projectName}-system
namePrefix: ${p.projectName}-

resources:
  - ../crd
  - ../rbac
  - ../manager
  - metrics_service.yaml
  # [PROMETHEUS] a ServiceMonitor for the metrics Service (needs the prometheus-operator CRDs).
  # - ../prometheus
`,
  'config/default/metrics_service.yaml': `# Prometheus metrics of the operator (plain HTTP, --metrics-bind-address=:8080).
apiVersion: v1
kind: Service
metadata:
  name: controller-manager-metrics-service
  namespace: system
  labels:
    control-plane: controller-manager
    app.kubernetes.io/name: ${p.projectName}
    app.kubernetes.io/managed-by: kustomize
spec:
  ports:
    - name: http
      port: 8080
      protocol: TCP
      targetPort: metrics
  selector:
    control-plane: controller-manager
    app.kubernetes.io/name: ${p.projectName}
`,
  'config/manager/kustomization.yaml': `resources:
  - manager.yaml
# The image is set at build time, not here: \`make deploy IMG=...\` and \`make build-installer IMG=...\`
# build config/default through a temporary overlay with an \`images:\` entry for "controller"
# (hack/kustomize.sh), so no tracked file is edited.
`,
  'config/manager/manager.yaml': `# The operator's namespace (renamed ${p.projectName}-system by config/default) and Deployment.
# The namespace enforces the "restricted" Pod Security Standard, so the API server itself refuses
# an operator pod that does not meet it.
apiVersion: v1
kind: Namespace
metadata:
  name: system
  labels:
    control-plane: controller-manager
    app.kubernetes.io/name: ${p.projectName}
    app.kubernetes.io/managed-by: kustomize
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/enforce-version: latest
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller-manager
  namespace: system
  labels:
    control-plane: controller-manager
    app.kubernetes.io/name: ${p.projectName}
    app.kubernetes.io/managed-by: kustomize
spec:
  replicas: 1
  selector:
    matchLabels:
      control-plane: controller-manager
      app.kubernetes.io/name: ${p.projectName}
  template:
    metadata:
      annotations:
        kubectl.kubernetes.io/default-container: manager
      labels:
        control-plane: controller-manager
        app.kubernetes.io/name: ${p.projectName}
    spec:
      serviceAccountName: controller-manager
      # On SIGTERM in-flight reconciles get --graceful-shutdown-timeout (30 s) to finish, then helm
      # gets SIGTERM and 5 s to record the release state, then the Lease is released (ADR 4):
      # ~36 s. The margin keeps the kubelet's SIGKILL from stranding a release in pending-*.
      terminationGracePeriodSeconds: 45
      securityContext:
        # The image runs as uid 1001 (numeric USER), so runAsNonRoot can be verified. No
        # runAsUser here: platforms that assign uids (OpenShift's restricted SCC) keep working.
        runAsNonRoot: true
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: manager
          image: controller:latest
          # The image's ENTRYPOINT is \`helm-operator run --watches-file=./watches.yaml
          # --helm-binary=/usr/local/bin/helm\`; these args are appended to it.
          args:
            - --leader-elect
            - --leader-election-id=${p.projectName}
            - --health-probe-bind-address=:8081
            - --metrics-bind-address=:8080
            # Concurrent reconciles (so concurrent helm processes) per watched kind. Explicit, because
            # the memory limit below is sized for it; the default follows the CPU count.
            - --max-concurrent-reconciles=4
          env:
            # helm's HELM_*_HOME directories and the values files go to os.tmpdir(): the emptyDir
            # below, since the root filesystem is read-only.
            - name: TMPDIR
              value: /tmp
            # Comma-separated namespaces to watch; empty watches every namespace.
            - name: WATCH_NAMESPACE
              value: ""
            # Multi-tenant lock-down (README, Tenancy): watches without serviceAccountName act as this
            # ServiceAccount of each CR's namespace; empty: as the operator. Needs impersonate and get on serviceaccounts.
            - name: DEFAULT_SERVICE_ACCOUNT
              value: ""
          ports:
            - name: metrics
              containerPort: 8080
              protocol: TCP
            - name: health
              containerPort: 8081
              protocol: TCP
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop:
                - ALL
          livenessProbe:
            httpGet:
              path: /healthz
              port: health
            initialDelaySeconds: 15
            periodSeconds: 20
          readinessProbe:
            httpGet:
              path: /readyz
              port: health
            initialDelaySeconds: 5
            periodSeconds: 10
          # From measurements (hack/measure-memory.sh; docs/adr/0010-deploying-the-operator.md):
          # with 20 CRs the node process peaks at ~215 MiB RSS and idles at ~4m CPU; each helm
          # process it runs adds ~75 MiB, so 4 workers peaked at ~456 MiB together. The limit
          # leaves ~1.7x headroom over that peak. More kinds in watches.yaml (each has its own
          # workers) or a higher --max-concurrent-reconciles need ~80Mi more per extra worker.
          resources:
            requests:
              cpu: 100m
              memory: 256Mi
            limits:
              cpu: "1"
              memory: 768Mi
          volumeMounts:
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 256Mi
`,
  // Written by init, so config/manifests builds and `make bundle` works from the start; the base
  // CSV is the user's to edit (create api and generate kustomize manifests never overwrite it).
  [`config/manifests/bases/${p.projectName}.clusterserviceversion.yaml`]: baseCsv(p.projectName),
  'config/manifests/kustomization.yaml': manifestsKustomization(p.projectName),
  ...Object.fromEntries(scorecardKustomize().flatMap((op) => (op.op === 'create' ? [[op.path, String(op.body)]] : []))),
  'config/prometheus/kustomization.yaml': `resources:
  - monitor.yaml
`,
  'config/prometheus/monitor.yaml': `# Prometheus Operator ServiceMonitor scraping the operator's metrics Service
# (config/default/metrics_service.yaml). Enable it in config/default/kustomization.yaml.
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: controller-manager-metrics-monitor
  namespace: system
  labels:
    control-plane: controller-manager
    app.kubernetes.io/name: ${p.projectName}
    app.kubernetes.io/managed-by: kustomize
spec:
  endpoints:
    - path: /metrics
      port: http
      scheme: http
  selector:
    matchLabels:
      control-plane: controller-manager
      app.kubernetes.io/name: ${p.projectName}
`,
  'config/rbac/kustomization.yaml': `resources:
  # The operator's identity and what it may do cluster-wide (role.yaml: its CRs, helm release
  # Secrets, Events, and the kinds its charts render).
  - service_account.yaml
  - role.yaml
  - role_binding.yaml
  # Leader election in the operator's namespace.
  - leader_election_role.yaml
  - leader_election_role_binding.yaml
  # For scrapers of /metrics (not bound).
  - metrics_reader_role.yaml
`,
  'config/rbac/leader_election_role.yaml': `# Leader election (--leader-elect): a coordination.k8s.io Lease in the operator's own namespace,
# and the Events that announce a new leader. A Role, not a ClusterRole: bound in one namespace.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: leader-election-role
  namespace: system
  labels:
    app.kubernetes.io/name: ${p.projectName}
    app.kubernetes.io/managed-by: kustomize
rules:
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
  - apiGroups: [""]
    resources: ["events"]
    verbs: ["create", "patch"]
`,
  'config/rbac/leader_election_role_binding.yaml': `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: leader-election-rolebinding
  namespace: system
  labels:
    app.kubernetes.io/name: ${p.projectName}
    app.kubernetes.io/managed-by: kustomize
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: leader-election-role
subjects:
  - kind: ServiceAccount
    name: controller-manager
    namespace: system
`,
  'config/rbac/metrics_reader_role.yaml': `# Grant this to whatever scrapes the operator (e.g. Prometheus' ServiceAccount) once metrics are
# served behind authentication (--metrics-secure --metrics-require-rbac). Not bound here.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: metrics-reader
  labels:
    app.kubernetes.io/name: ${p.projectName}
    app.kubernetes.io/managed-by: kustomize
rules:
  - nonResourceURLs: ["/metrics"]
    verbs: ["get"]
`,
  'config/rbac/role_binding.yaml': `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: manager-rolebinding
  labels:
    app.kubernetes.io/name: ${p.projectName}
    app.kubernetes.io/managed-by: kustomize
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: manager-role
subjects:
  - kind: ServiceAccount
    name: controller-manager
    namespace: system
`,
  'config/rbac/service_account.yaml': `# The identity the operator runs as. Everything it may do is granted to this account by
# role_binding.yaml (cluster-wide) and leader_election_role_binding.yaml (its own namespace).
apiVersion: v1
kind: ServiceAccount
metadata:
  name: controller-manager
  namespace: system
  labels:
    app.kubernetes.io/name: ${p.projectName}
    app.kubernetes.io/managed-by: kustomize
`,
});
