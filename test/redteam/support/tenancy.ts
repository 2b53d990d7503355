/**
 * The cluster as a hostile tenant finds it: namespaces of two tenants and a victim, each holding a
 * canary Secret, and the attacker's own identity, a user with RBAC only to manage the CRs of its
 * namespace and read its ConfigMaps and Events. The attacks act through that identity (client-node's
 * `as:`, the Impersonate-User header, from the admin kubeconfig), so what they achieve is what the
 * operator did for them, never what the test's own rights did.
 */
import { randomBytes } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi, KubeConfig, RbacAuthorizationV1Api, type V1PolicyRule } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { VALUES_SOURCE_LABEL } from '../../../src/reconciler/desired/values-from.js';
import { createNamespace, testKubeConfig, uniqueName, waitFor } from '../../support/kube.js';
import type { CR, TestKind } from '../../support/operator.js';

/**
 * The attacker, one per test file (a module per file: files run two at a time): in the default
 * configuration some escalations succeed by design and bind this user to cluster-admin until the
 * attack's check deletes the binding, which must not make another file's tenant powerful.
 */
export const TENANT_USER = uniqueName('tenant-a-user');
/** The ServiceAccount the recommended configuration's watches act as in each tenant namespace. */
export const DEPLOYER = 'deployer';
export const GROUP = 'redteam.example.com';

/** A secret value and how it may be spelled where it leaks (a Secret's data is base64). */
export const spellings = (v: string): string[] => [v, Buffer.from(v).toString('base64')];
type Namespace = Awaited<ReturnType<typeof createNamespace>>;
const canary = (what: string): string => `${what}-${randomBytes(8).toString('hex')}`;

/** `kc` acting as `user` (no groups but system:authenticated): every request carries Impersonate-User. */
export function impersonating(kc: KubeConfig, user: string): KubeConfig {
  const as = new KubeConfig();
  const current = kc.getCurrentUser();
  if (current === null) throw new Error('the admin kubeconfig has no current user');
  as.loadFromOptions({
    clusters: kc.clusters,
    users: [{ ...current, name: user, impersonateUser: user }],
    contexts: [{ name: user, cluster: kc.getCurrentCluster()?.name ?? '', user }],
    currentContext: user,
  });
  return as;
}

/** The deployer's rights: what the fixture charts make (ConfigMaps, Secrets, hook Jobs), helm's storage included. */
const DEPLOYER_RULES: V1PolicyRule[] = [
  { apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['*'] },
  { apiGroups: ['batch'], resources: ['jobs'], verbs: ['*'] },
];

/** The tenant's rights: its CRs (any kind of the test group, status included), and reading ConfigMaps and Events. */
const TENANT_RULES: V1PolicyRule[] = [
  { apiGroups: [GROUP], resources: ['*'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['configmaps', 'events'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['get', 'list', 'watch'] },
];

export interface Canaries {
  /** In Secret `db` of the victim namespace. */
  readonly victim: string;
  /** In the unlabelled Secret `internal` of tenant-a's namespace (the namespace owner's, not opted in). */
  readonly internal: string;
  /** In Secret `shared` of tenant-a's namespace, labelled as a values source: tenants may use it. */
  readonly shared: string;
}

export class Tenancy {
  readonly admin = testKubeConfig();
  readonly tenant = impersonating(this.admin, TENANT_USER);
  readonly canaries: Canaries = { victim: canary('victim'), internal: canary('internal'), shared: canary('shared') };
  readonly #core = this.admin.makeApiClient(CoreV1Api);
  readonly #rbac = this.admin.makeApiClient(RbacAuthorizationV1Api);

  private constructor(private readonly namespaces: readonly Namespace[]) {}

  /** The attacker's namespace. */
  get a(): string {
    return this.namespaces[0]!.name;
  }

  /** Another tenant's namespace, watched by the same operator. */
  get b(): string {
    return this.namespaces[1]!.name;
  }

  /** A namespace the operator does not watch, holding a Secret worth stealing. */
  get victim(): string {
    return this.namespaces[2]!.name;
  }

  static async create(): Promise<Tenancy> {
    const kc = testKubeConfig();
    const t = new Tenancy([
      await createNamespace(kc, 'tenant-a'),
      await createNamespace(kc, 'tenant-b'),
      await createNamespace(kc, 'victim'),
    ]);
    await t.#setUp();
    return t;
  }

  async #setUp(): Promise<void> {
    await this.#secret(this.victim, 'db', { password: this.canaries.victim });
    await this.#secret(this.a, 'internal', { token: this.canaries.internal });
    await this.#secret(this.a, 'shared', { token: this.canaries.shared }, { [VALUES_SOURCE_LABEL]: 'true' });
    for (const ns of [this.a, this.b]) {
      await this.#core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: DEPLOYER } } });
      await this.#grant(ns, DEPLOYER, DEPLOYER_RULES, { kind: 'ServiceAccount', name: DEPLOYER, namespace: ns });
    }
    await this.#grant(this.a, 'tenant', TENANT_RULES, { kind: 'User', name: TENANT_USER, apiGroup: 'rbac.authorization.k8s.io' });
    await this.expectPowerless();
  }

  async #secret(namespace: string, name: string, stringData: Record<string, string>, labels?: Record<string, string>): Promise<void> {
    await this.#core.createNamespacedSecret({
      namespace,
      body: { metadata: { name, ...(labels === undefined ? {} : { labels }) }, stringData },
    });
  }

  async #grant(
    namespace: string,
    name: string,
    rules: V1PolicyRule[],
    subject: { kind: string; name: string; namespace?: string; apiGroup?: string },
  ): Promise<void> {
    await this.#rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules } });
    await this.#rbac.createNamespacedRoleBinding({
      namespace,
      body: { metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects: [subject] },
    });
  }

  /**
   * The attacker cannot do by itself what the attacks try (read a Secret, bind cluster-admin), and
   * can do what a tenant does (read its ConfigMaps): an attack that succeeds is the operator's doing.
   */
  async expectPowerless(): Promise<void> {
    const core = this.tenant.makeApiClient(CoreV1Api);
    const rbac = this.tenant.makeApiClient(RbacAuthorizationV1Api);
    const forbidden = (err: unknown): boolean => isStatus(err, 403);
    // RBAC caches settle within a moment of the RoleBinding's creation: wait for the allowed read.
    await waitFor(
      `${TENANT_USER} to list ConfigMaps of ${this.a}`,
      async () => (await core.listNamespacedConfigMap({ namespace: this.a })).items.length > 0,
      { timeoutMs: 30_000 },
    );
    await expect(core.listNamespacedSecret({ namespace: this.a })).rejects.toSatisfy(forbidden);
    await expect(core.readNamespacedSecret({ namespace: this.a, name: 'internal' })).rejects.toSatisfy(forbidden);
    await expect(core.readNamespacedSecret({ namespace: this.victim, name: 'db' })).rejects.toSatisfy(forbidden);
    await expect(core.listNamespacedConfigMap({ namespace: this.b })).rejects.toSatisfy(forbidden);
    await expect(
      rbac.createClusterRoleBinding({
        body: {
          metadata: { name: uniqueName('self-grant') },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ kind: 'User', name: TENANT_USER, apiGroup: 'rbac.authorization.k8s.io' }],
        },
      }),
    ).rejects.toSatisfy(forbidden);
    await expect(
      rbac.createNamespacedRoleBinding({
        namespace: this.a,
        body: {
          metadata: { name: 'self-grant' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
          subjects: [{ kind: 'User', name: TENANT_USER, apiGroup: 'rbac.authorization.k8s.io' }],
        },
      }),
    ).rejects.toSatisfy(forbidden);
  }

  /**
   * Everything the attacker can read in its namespace that the operator wrote, as one text: the CRs
   * of `kinds` without their spec (which the attacker wrote itself), ConfigMaps, Events.
   */
  async tenantReadable(kinds: readonly TestKind[]): Promise<string> {
    const core = this.tenant.makeApiClient(CoreV1Api);
    const custom = this.tenant.makeApiClient(CustomObjectsApi);
    const crs = await Promise.all(
      kinds.map(async (k) => {
        const list = (await custom.listNamespacedCustomObject({
          group: k.group,
          version: k.version,
          plural: k.plural,
          namespace: this.a,
        })) as { items: CR[] };
        return list.items.map(({ metadata, status }) => ({ metadata, status }));
      }),
    );
    const cms = (await core.listNamespacedConfigMap({ namespace: this.a })).items;
    const events = (await core.listNamespacedEvent({ namespace: this.a })).items;
    return JSON.stringify({ crs, cms, events });
  }

  /** The canaries (any spelling) found in `text`, by name. */
  leaked(text: string, which: readonly (keyof Canaries)[] = ['victim', 'internal']): string[] {
    return which.filter((k) => spellings(this.canaries[k]).some((s) => text.includes(s)));
  }

  /** Whether the attacker can read Secret `name` of its namespace now (with its own identity or `kc`'s). */
  async canReadSecret(kc: KubeConfig = this.tenant, namespace = this.a, name = 'internal'): Promise<boolean> {
    try {
      await kc.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace, name });
      return true;
    } catch (err) {
      if (isStatus(err, 403) || isStatus(err, 401)) return false;
      throw err;
    }
  }

  /** Deletes the namespaces, releasing CRs no operator will finalize any more (call after stopping it). */
  async remove(): Promise<void> {
    for (const ns of this.namespaces) await ns.remove();
  }
}
