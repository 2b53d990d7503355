/**
 * What the real-node tier's suites share: the real node's names, the repository's scripts and make
 * targets as child processes, the operator's pods and image, and containerd's view of a pod's
 * container (what makes it real rather than kwok's report).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  AuthorizationV1Api,
  CoreV1Api,
  RbacAuthorizationV1Api,
  type KubeConfig,
  type RbacV1Subject,
  type V1Pod,
} from '@kubernetes/client-node';
import { DEPLOYED, exec, ROOT } from '../support/deploy.js';
import { helmByHand } from '../support/helm.js';
import { toolCacheDir } from '../support/tool-cache.js';

export const NODE = 'real-node-0';
export const TAINT = 'helm-operator.io/real-node';
export const POD_NET = /^10\.244\.0\.\d+$/;

export const make = (...args: string[]): Promise<string> => exec('make', ['--no-print-directory', ...args], 900_000);
export const hack = (script: string, ...args: string[]): Promise<string> =>
  exec('bash', [path.join(ROOT, 'hack', script), ...args], 600_000);

/** The loopback registry's address (`hack/registry.sh up`, idempotent). */
export async function registry(): Promise<string> {
  const address = /^export REGISTRY=(\S+)$/m.exec(await hack('registry.sh', 'up'))?.[1];
  if (address === undefined) throw new Error('hack/registry.sh up printed no REGISTRY');
  return address;
}

/** The operator image the deploy suite builds and pushes (`make docker-build docker-push`), by tag. */
export const operatorImage = async (tag = 'real-node'): Promise<string> => `${await registry()}/helm-operator:${tag}`;

/** The operator's pods that are not being deleted (config/default's label; this repository's namespace unless told). */
export async function operatorPods(kc: KubeConfig, namespace: string = DEPLOYED.namespace): Promise<V1Pod[]> {
  const pods = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace, labelSelector: 'control-plane=controller-manager' });
  return pods.items.filter((p) => p.metadata?.deletionTimestamp === undefined);
}

export const ready = (p: V1Pod | undefined): boolean =>
  p?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** containerd's tasks (running containers) of the pods' namespace, by container id. */
export async function tasks(): Promise<Map<string, { pid: number; status: string }>> {
  // Rows are "<64 hex id> <pid> <STATUS>"; ctr's warnings (cgroup v1 deprecation) are not.
  const out = await hack('real-node.sh', 'ctr', 'tasks', 'ls');
  const rows = [...out.matchAll(/^([0-9a-f]{64})\s+(\d+)\s+([A-Z]+)\s*$/gm)];
  return new Map(rows.map(([, id, pid, status]) => [id ?? '', { pid: Number(pid), status: status ?? '' }]));
}

/** The containerd id of a pod's container ("containerd://<id>" in its status). */
function containerId(pod: V1Pod, container: string): string {
  const status = pod.status?.containerStatuses?.find((c) => c.name === container);
  const id = /^containerd:\/\/([0-9a-f]{64})$/.exec(status?.containerID ?? '')?.[1];
  if (id === undefined) throw new Error(`pod ${pod.metadata?.name}: container ${container} has no containerd id (${status?.containerID})`);
  return id;
}

/** What makes a pod's container real: a RUNNING containerd task whose process is on this host, in a kubepods cgroup. */
export async function realContainer(pod: V1Pod, container: string): Promise<{ pid: number; uid: string }> {
  const id = containerId(pod, container);
  const task = (await tasks()).get(id);
  if (task?.status !== 'RUNNING') throw new Error(`container ${id} is not a RUNNING containerd task: ${JSON.stringify(task)}`);
  const cgroup = await readFile(`/proc/${task.pid}/cgroup`, 'utf8');
  if (!cgroup.includes('/kubepods/')) throw new Error(`process ${task.pid} is not in a kubepods cgroup: ${cgroup}`);
  const uid = /^Uid:\s+(\d+)/m.exec(await readFile(`/proc/${task.pid}/status`, 'utf8'))?.[1] ?? '';
  return { pid: task.pid, uid };
}

/** Where the real node's kubelet writes pod logs (hack/real-node.sh: podLogsDir). */
const POD_LOGS = path.join(toolCacheDir(), 'real-node/pod-logs');

/** A container's first run's output, by stream, from the kubelet's log file (`kubectl logs` merges them). */
export async function podLog(pod: V1Pod, container: string): Promise<{ stdout: string; stderr: string }> {
  const file = path.join(POD_LOGS, `${pod.metadata?.namespace}_${pod.metadata?.name}_${pod.metadata?.uid}`, container, '0.log');
  const out = { stdout: '', stderr: '' };
  // CRI lines: "<time> <stream> <F|P> <text>"; P is a partial line, continued by the next.
  for (const [, stream, tag, text] of (await readFile(file, 'utf8')).matchAll(/^\S+ (stdout|stderr) ([FP]) ?(.*)$/gm)) {
    out[stream as 'stdout' | 'stderr'] += `${text}${tag === 'F' ? '\n' : ''}`;
  }
  return out;
}

export interface Account {
  readonly name: string;
  readonly namespace: string;
}

/** The RBAC bindings naming a ServiceAccount, as "<binding> -> <Kind>/<role>" (namespaced ones prefixed "<namespace>/"). */
export async function accountBindings(kc: KubeConfig, account: Account): Promise<{ cluster: string[]; local: string[] }> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const names = (s: RbacV1Subject): boolean => s.kind === 'ServiceAccount' && s.name === account.name && s.namespace === account.namespace;
  const cluster = (await rbac.listClusterRoleBinding()).items.filter((b) => (b.subjects ?? []).some(names));
  const local = (await rbac.listRoleBindingForAllNamespaces()).items.filter((b) => (b.subjects ?? []).some(names));
  return {
    cluster: cluster.map((b) => `${b.metadata?.name} -> ${b.roleRef.kind}/${b.roleRef.name}`),
    local: local.map((b) => `${b.metadata?.namespace}/${b.metadata?.name} -> ${b.roleRef.kind}/${b.roleRef.name}`),
  };
}

/** What the API server's authorizer grants a ServiceAccount, its groups included, in `namespace`. */
export function accountCan(
  kc: KubeConfig,
  account: Account,
  namespace: string,
): (verb: string, group: string, resource: string) => Promise<boolean> {
  const authz = kc.makeApiClient(AuthorizationV1Api);
  return async (verb, group, resource) =>
    (
      await authz.createSubjectAccessReview({
        body: {
          spec: {
            user: `system:serviceaccount:${account.namespace}:${account.name}`,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${account.namespace}`, 'system:authenticated'],
            resourceAttributes: { verb, group, resource, namespace },
          },
        },
      })
    ).status?.allowed === true;
}

/** Each release's `helm history` as "<revision>:<status>", by release name ([] when there is none). */
export async function histories(releases: readonly string[], namespace: string): Promise<Record<string, string[]>> {
  const history = async (release: string): Promise<string[]> => {
    const out = await helmByHand('history', release, '-n', namespace, '-o', 'json').catch((err: unknown) => {
      if (err instanceof Error && /release: not found/.test(err.message)) return '[]';
      throw err;
    });
    return (JSON.parse(out) as { revision: number; status: string }[]).map((r) => `${r.revision}:${r.status}`);
  };
  const out: Record<string, string[]> = {};
  // A few helm processes at a time: the machine is small.
  for (let i = 0; i < releases.length; i += 6) {
    await Promise.all(releases.slice(i, i + 6).map(async (r) => (out[r] = await history(r))));
  }
  return out;
}
