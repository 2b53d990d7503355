/**
 * N sharded replicas in the bundle (docs/adr/0100): `generate bundle --sharded-replicas N` turns
 * the operator's Deployment (the one whose container runs `--leader-elect`) into N replicas with
 * `--sharding`, and every Deployment the CSV carries with `--sharding`, however it got there
 * (the flag, or config/manifests built from config/sharding), is checked for what the replicas
 * need at run time: `--leader-elect` (the operator refuses `--sharding` without it) and the Lease
 * verbs of the shard coordinator in the namespace OLM installs it to. OLM would install a bundle
 * that lacks them, and every replica would then exit at start or on its first Lease write.
 */
import { BundleInputError } from './errors.js';
import { get, objs, type K8sObject, type Obj } from './types.js';

/** The Lease verbs src/runtime/shard-lease-store.ts uses: list the group's Leases, create, update. */
export const SHARD_LEASE_VERBS = ['list', 'create', 'update'] as const;

/** Replicas share namespaces, so an install that watches one namespace keeps all but one replica idle. */
export const SHARDED_INSTALL_MODES_NOTE =
  'the replicas share the watched namespaces by bucket: installed OwnNamespace or SingleNamespace, one replica owns the one ' +
  'namespace and the others stand by; MultiNamespace or AllNamespaces spread the work';

const LEADER_ELECT = '--leader-elect';
const SHARDING = '--sharding';

/** A boolean flag as the run command parses it: `--flag`, `--flag=true` or `--flag true` (a following non-flag word). */
function flagOn(args: readonly string[], flag: string): boolean {
  return args.some((a, i) => {
    if (a === `${flag}=true`) return true;
    if (a !== flag) return false;
    const next = args[i + 1];
    return next !== 'false';
  });
}

const argsOf = (container: Obj): string[] => (Array.isArray(container['args']) ? container['args'].map(String) : []);
const containersOf = (deploymentSpec: unknown): Obj[] => objs(get(deploymentSpec, 'template', 'spec', 'containers'));

/** Whether a Deployment spec runs a container with `--sharding` on. */
export function runsSharded(deploymentSpec: unknown): boolean {
  return containersOf(deploymentSpec).some((c) => flagOn(argsOf(c), SHARDING));
}

const electing = (spec: unknown): Obj[] => containersOf(spec).filter((c) => flagOn(argsOf(c), LEADER_ELECT));

/**
 * The input's Deployments with the operator's (those with a container that runs `--leader-elect`)
 * at `replicas` N and `--sharding` added to those containers. Pure: new objects. Throws when no
 * container runs leader election: the shard Leases' id, namespace and timings are leader
 * election's, and a Deployment of something else (a sidecar service) must not be multiplied.
 */
export function shardedDeployments(deployments: readonly K8sObject[], replicas: number): K8sObject[] {
  if (!Number.isInteger(replicas) || replicas < 1) {
    throw new BundleInputError(`--sharded-replicas ${replicas}: give a whole number of replicas, at least 1`);
  }
  if (!deployments.some((d) => electing(d['spec']).length > 0)) {
    throw new BundleInputError(
      `--sharded-replicas: no container of Deployment ${deployments.map((d) => d.metadata.name).join(', ')} runs ${LEADER_ELECT}; ` +
        `sharding's Leases are named and timed by leader election: add ${LEADER_ELECT} and --leader-election-id=<name> to the ` +
        `manager's args (config/manager/manager.yaml)`,
    );
  }
  return deployments.map((d) => {
    const copy = structuredClone(d);
    const spec = get(copy, 'spec') as Obj | undefined;
    const operator = spec === undefined ? [] : electing(spec);
    if (spec === undefined || operator.length === 0) return copy;
    spec['replicas'] = replicas;
    for (const c of operator) {
      const args = argsOf(c);
      if (!flagOn(args, SHARDING)) c['args'] = [...args, SHARDING];
    }
    return copy;
  });
}

/** Whether some rule grants `verb` on coordination.k8s.io leases (no resourceNames: the Lease names are made up at run time). */
function grants(rules: readonly unknown[], verb: string): boolean {
  const has = (list: unknown, want: string): boolean => Array.isArray(list) && list.some((x) => x === want || x === '*');
  return objs(rules).some(
    (r) =>
      has(r['apiGroups'], 'coordination.k8s.io') &&
      has(r['resources'], 'leases') &&
      has(r['verbs'], verb) &&
      !(Array.isArray(r['resourceNames']) && r['resourceNames'].length > 0),
  );
}

export interface CsvDeployment {
  readonly name: string;
  readonly spec: unknown;
  readonly serviceAccountName: string;
}

/**
 * What is wrong with a sharded Deployment of the CSV, or undefined. `rules` are the CSV's
 * `permissions` (a Role in the install namespace, where the Leases are) and `clusterPermissions`
 * of its ServiceAccount together.
 */
export function shardingProblem(d: CsvDeployment, rules: readonly unknown[]): string | undefined {
  if (!runsSharded(d.spec)) return undefined;
  const sharded = containersOf(d.spec).filter((c) => flagOn(argsOf(c), SHARDING));
  const lone = sharded.find((c) => !flagOn(argsOf(c), LEADER_ELECT));
  if (lone !== undefined) {
    return (
      `Deployment ${d.name}, container ${String(lone['name'])}: ${SHARDING} without ${LEADER_ELECT}; the operator refuses to start so ` +
      `(its Leases take --leader-election-id and the lease timings): add ${LEADER_ELECT}`
    );
  }
  const missing = SHARD_LEASE_VERBS.filter((v) => !grants(rules, v));
  if (missing.length > 0) {
    return (
      `Deployment ${d.name} runs ${SHARDING}, but ServiceAccount ${d.serviceAccountName} may not ${missing.join(', ')} ` +
      `coordination.k8s.io leases: each replica lists, creates and updates its peer and fence Leases in the operator's namespace. ` +
      `Add the verbs to the Role bound to it (config/rbac/leader_election_role.yaml)`
    );
  }
  return undefined;
}
