/**
 * OLM as pods, on a cluster whose nodes run containers (docs/olm.md, docs/adr/0064): the objects
 * `olm install` creates for OLM's olm-operator and catalog-operator, and the registry pod `run bundle`
 * serves a catalog from, as operator-sdk's. Pure: manifests and the decisions read off their status;
 * olm.ts and bundle.ts apply them.
 */
import type { KubernetesObject } from '../k8s/client-node.js';
import { pinnedVersion } from '../config/pinned-versions.js';
import type { Obj } from './cluster.js';

export const OLM_OPERATORS = ['olm-operator', 'catalog-operator'] as const;
const SERVICE_ACCOUNT = 'olm-operator-serviceaccount';
/** Upstream's names for OLM's cluster role and its binding (deploy/chart/templates). */
export const OLM_CLUSTER_ROLE = 'system:controller:operator-lifecycle-manager';
export const olmClusterRoleBinding = (namespace: string): string => `olm-operator-binding-${namespace}`;
export const REGISTRY_PORT = 50051;

/** Upstream's image names; hack/olm-images.sh pushes the ones built here under them (the real node mirrors quay.io). */
export const defaultOlmImage = (): string => `quay.io/operator-framework/olm:${pinnedVersion('OLM_VERSION')}`;
export const defaultOpmImage = (): string => `quay.io/operator-framework/opm:${pinnedVersion('OPERATOR_REGISTRY_VERSION')}`;

/**
 * Where OLM's pods may go: not on kwok's fake nodes (label type=kwok), where nothing would run, and on
 * hack/cluster.sh's real node despite its taint (pods that do not tolerate it stay off it).
 */
export const PLACEMENT = {
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'type', operator: 'NotIn', values: ['kwok'] }] }],
      },
    },
  },
  tolerations: [{ key: 'helm-operator.io/real-node', operator: 'Exists', effect: 'NoSchedule' }],
} as const;

/** As upstream's Deployments: non-root, no privilege escalation, no capability, the runtime's seccomp profile. */
const RESTRICTED = {
  pod: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
  container: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
} as const;

function operatorDeployment(name: (typeof OLM_OPERATORS)[number], namespace: string, command: string[]): KubernetesObject {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, labels },
    spec: {
      replicas: 1,
      strategy: { type: 'RollingUpdate' },
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: SERVICE_ACCOUNT,
          securityContext: RESTRICTED.pod,
          ...PLACEMENT,
          containers: [
            {
              name,
              image: '',
              command,
              imagePullPolicy: 'IfNotPresent',
              securityContext: RESTRICTED.container,
              // OLM's health server listens on loopback here (hack/tools.sh olm), out of a kubelet probe's reach.
              env: [
                { name: 'OPERATOR_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                { name: 'OPERATOR_NAME', value: name },
              ],
              resources: { requests: { cpu: '10m', memory: '160Mi' } },
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
            },
          ],
          volumes: [{ name: 'tmp', emptyDir: {} }],
        },
      },
    },
  } as KubernetesObject;
}

const withImage = (d: KubernetesObject, image: string): KubernetesObject => {
  const spec = (d as Obj).spec as { template: { spec: { containers: { image: string }[] } } };
  for (const c of spec.template.spec.containers) c.image = image;
  return d;
};

/** OLM's objects besides its CRDs: its ServiceAccount with every permission (as upstream's), and its two operators. */
export function olmObjects(o: { namespace: string; image: string; opmImage: string }): KubernetesObject[] {
  const { namespace, image } = o;
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: SERVICE_ACCOUNT, namespace } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: OLM_CLUSTER_ROLE },
      rules: [
        { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
        { nonResourceURLs: ['*'], verbs: ['*'] },
      ],
    } as KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: olmClusterRoleBinding(namespace) },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: OLM_CLUSTER_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: SERVICE_ACCOUNT, namespace }],
    } as KubernetesObject,
    withImage(operatorDeployment('olm-operator', namespace, ['/bin/olm', '--namespace', namespace, '--writeStatusName', '']), image),
    // --util-image / --opmImage: what catalog-operator starts bundle-unpack Jobs and extracting catalog pods from.
    withImage(
      operatorDeployment('catalog-operator', namespace, [
        '/bin/catalog',
        '--namespace',
        namespace,
        '--writeStatusName',
        '',
        `--util-image=${image}`,
        `--opmImage=${o.opmImage}`,
        '--set-workload-user-id=true',
      ]),
      image,
    ),
  ];
}

/** Available=True with its one replica ready: the Deployment's pod runs and passed its checks (pure). */
export const deploymentAvailable = (d: Obj | undefined): boolean =>
  d?.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') === true && Number(d.status.readyReplicas ?? 0) >= 1;

interface ContainerState {
  readonly name?: string;
  readonly state?: { waiting?: { reason?: string; message?: string }; terminated?: { reason?: string; exitCode?: number } };
  readonly lastState?: { terminated?: { reason?: string; exitCode?: number } };
}

const STUCK = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'CrashLoopBackOff',
  'CreateContainerConfigError',
  'CreateContainerError',
]);

/** A container waiting for a reason it does not get over alone, with its last exit (pure). */
function containerStuck(c: ContainerState): string | undefined {
  const waiting = c.state?.waiting;
  if (waiting?.reason === undefined || !STUCK.has(waiting.reason)) return undefined;
  const exit = c.lastState?.terminated;
  const last = exit === undefined ? '' : ` (last exit ${String(exit.exitCode)} ${exit.reason ?? ''})`;
  return `container ${c.name ?? ''} ${waiting.reason}${waiting.message === undefined ? '' : `: ${waiting.message}`}${last}`;
}

/**
 * Why a pod is not running, when it will not without help: an image that cannot be pulled, a
 * container that keeps exiting, a pod no node takes (pure; undefined while it may still come up).
 */
export function podStuck(pod: Obj): string | undefined {
  const name = pod.metadata?.name ?? '';
  const container = ((pod.status?.containerStatuses ?? []) as ContainerState[]).map(containerStuck).find((m) => m !== undefined);
  if (container !== undefined) return `pod ${name}: ${container}`;
  const unschedulable = pod.status?.conditions?.find(
    (c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable',
  );
  return unschedulable === undefined
    ? undefined
    : `pod ${name} is not scheduled: ${unschedulable.message ?? ''} (OLM's pods go to nodes that run containers: not kwok's fake nodes)`;
}

/**
 * `run bundle`'s registry pod, as operator-sdk's: the opm image serving the one-bundle catalog (from
 * ConfigMap `name`, mounted at /configs/<package>) on port 50051; the CatalogSource names its address.
 */
export function registryObjects(o: {
  name: string;
  namespace: string;
  packageName: string;
  catalog: string;
  opmImage: string;
  labels: Record<string, string>;
}): { configMap: KubernetesObject; pod: KubernetesObject } {
  const metadata = { name: o.name, namespace: o.namespace, labels: o.labels };
  const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { 'catalog.yaml': o.catalog } } as KubernetesObject;
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata,
    spec: {
      securityContext: RESTRICTED.pod,
      ...PLACEMENT,
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'registry-grpc',
          image: o.opmImage,
          imagePullPolicy: 'IfNotPresent',
          securityContext: RESTRICTED.container,
          // No --cache-dir: opm builds its cache in a temporary directory (the emptyDir at /tmp) at each start.
          command: ['/bin/opm', 'serve', '/configs', '--port', String(REGISTRY_PORT)],
          ports: [{ name: 'grpc', containerPort: REGISTRY_PORT }],
          readinessProbe: { tcpSocket: { port: REGISTRY_PORT }, periodSeconds: 2 },
          resources: { requests: { cpu: '10m', memory: '50Mi' } },
          // subPath: the file alone; a ConfigMap volume's ..data directories would be read as catalog content.
          volumeMounts: [
            { name: 'catalog', mountPath: `/configs/${o.packageName}/catalog.yaml`, subPath: 'catalog.yaml' },
            { name: 'tmp', mountPath: '/tmp' },
          ],
        },
      ],
      volumes: [
        { name: 'catalog', configMap: { name: o.name } },
        { name: 'tmp', emptyDir: {} },
      ],
    },
  } as KubernetesObject;
  return { configMap, pod };
}

/** A ConfigMap holds at most 1 MiB; the catalog's YAML is nearly all of it. */
export const MAX_CATALOG_BYTES = 1_000_000;
