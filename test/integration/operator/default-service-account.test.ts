/**
 * `--default-service-account` as a tenant's adversary sees it (issue 32 items 3 and 4): a chart
 * written the way bitnami's are (extraDeploy rendered through common.tplvalues.render) lets a CR
 * author write templates. Without the flag, the same CRs get the operator's rights: a
 * ClusterRoleBinding to cluster-admin, an object in another namespace, another namespace's Secret
 * read through lookup(). That baseline is asserted too, so these tests prove the flag is what
 * stops the attacks.
 */
import { CoreV1Api, RbacAuthorizationV1Api, type V1PolicyRule } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  condition,
  CRs,
  ensureCrd,
  fixtureChart,
  startOperator,
  type CR,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';

const CHART = fixtureChart('tenant-extras');
const LOCKED: TestKind = { group: 'lockdown.example.com', version: 'v1', kind: 'LockedApp', plural: 'lockedapps' };
const OWN_SA: TestKind = { group: 'lockdown.example.com', version: 'v1', kind: 'OwnSaApp', plural: 'ownsaapps' };
const OPEN: TestKind = { group: 'lockdown.example.com', version: 'v1', kind: 'OpenApp', plural: 'openapps' };
const DEFAULT_SA = 'tenant-deployer';
const ALL_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
const watchOf = (k: TestKind, extra = ''): string =>
  `- {group: ${k.group}, version: ${k.version}, kind: ${k.kind}, chart: ${CHART}${extra}}`;

/** ServiceAccount `name` of `namespace`, bound to a Role with `rules` (what the namespace's admin grants). */
async function serviceAccount(
  kc: ReturnType<typeof testKubeConfig>,
  namespace: string,
  name: string,
  rules: V1PolicyRule[],
): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules } });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  });
}
/** helm's release storage and the chart's ConfigMaps, in the namespace only. */
const NAMESPACE_RULES: V1PolicyRule[] = [{ apiGroups: [''], resources: ['secrets', 'configmaps'], verbs: ALL_VERBS }];

/** The three attacks, each an extraDeploy entry a CR author writes; `vault` is another team's namespace. */
const attacks = (tenant: string, vault: string) => ({
  escalate: {
    extraDeploy: [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: `${tenant}-pwned` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'User', name: `${tenant}-user`, apiGroup: 'rbac.authorization.k8s.io' }],
      },
    ],
  },
  escape: { extraDeploy: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'planted', namespace: vault }, data: { by: tenant } }] },
  // The lookup runs through tpl, in the CR author's template: its result lands in a ConfigMap they can read.
  peek: {
    extraDeploy: [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: '{{ .Release.Name }}-loot' },
        data: { token: `{{ (lookup "v1" "Secret" "${vault}" "canary").data.token | default "" | b64dec }}` },
      },
    ],
  },
});

describe('--default-service-account against a bitnami-style chart', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const CANARY = `canary-${Math.random().toString(36).slice(2)}-vault`;
  const locked = new CRs(kc, LOCKED);
  const ownSa = new CRs(kc, OWN_SA);
  const open = new CRs(kc, OPEN);
  let tenant: Awaited<ReturnType<typeof createNamespace>>;
  let bare: Awaited<ReturnType<typeof createNamespace>>;
  let vault: Awaited<ReturnType<typeof createNamespace>>;
  let lockedOp: RunningOperator;
  let openOp: RunningOperator;

  /** Where the canary must not be: the tenant namespace's ConfigMaps, its CRs' status, its events. */
  const leaks = async (crs: CRs, names: readonly string[]): Promise<string[]> => {
    const where: string[] = [];
    const configMaps = (await core.listNamespacedConfigMap({ namespace: tenant.name })).items;
    if (JSON.stringify(configMaps.map((c) => c.data)).includes(CANARY)) where.push('a ConfigMap');
    for (const n of names) if (JSON.stringify((await crs.get(tenant.name, n))?.status).includes(CANARY)) where.push(`status of ${n}`);
    if (JSON.stringify((await core.listNamespacedEvent({ namespace: tenant.name })).items.map((e) => e.message)).includes(CANARY))
      where.push('events');
    return where;
  };
  const absent = (read: () => Promise<unknown>) => expect(read()).rejects.toSatisfy((e) => isStatus(e, 404));
  /** A failed release, whichever condition reports it (ReleaseFailed for helm, Irreconcilable for a render). */
  const failedAs = async (crs: CRs, name: string): Promise<string> => {
    const cr = await waitFor(`${name} to fail`, async (): Promise<CR | undefined> => {
      const got = await crs.get(tenant.name, name);
      return condition(got, 'ReleaseFailed')?.status === 'True' || condition(got, 'Irreconcilable')?.status === 'True' ? got : undefined;
    });
    return `${condition(cr, 'ReleaseFailed')?.message ?? ''} ${condition(cr, 'Irreconcilable')?.message ?? ''}`;
  };

  beforeAll(async () => {
    for (const k of [LOCKED, OWN_SA, OPEN]) await ensureCrd(kc, k);
    tenant = await createNamespace(kc, 'tenant');
    bare = await createNamespace(kc, 'no-sa');
    vault = await createNamespace(kc, 'vault');
    await core.createNamespacedSecret({ namespace: vault.name, body: { metadata: { name: 'canary' }, stringData: { token: CANARY } } });
    await serviceAccount(kc, tenant.name, DEFAULT_SA, NAMESPACE_RULES);
    // In `bare`, only the ServiceAccount a watch names itself exists.
    await serviceAccount(kc, bare.name, 'own', NAMESPACE_RULES);
    const namespaces = [tenant.name, bare.name];
    lockedOp = await startOperator({
      watches: [watchOf(LOCKED), watchOf(OWN_SA, ', serviceAccountName: own'), ''].join('\n'),
      namespaces,
      defaultServiceAccount: DEFAULT_SA,
      // A missing ServiceAccount is looked at again at the reconcile period, not retried with backoff.
      reconcilePeriodMs: 5_000,
    });
    openOp = await startOperator({ watches: `${watchOf(OPEN)}\n`, namespaces });
  });
  afterAll(async () => {
    await lockedOp.stop();
    await openOp.stop();
    await rbac.deleteClusterRoleBinding({ name: `${tenant.name}-pwned` }).catch(() => undefined);
    await Promise.all([tenant.remove(), bare.remove(), vault.remove()]);
  });

  it('locked down: a ClusterRoleBinding from a CR value is Forbidden for the ServiceAccount, and absent', async () => {
    await locked.create(tenant.name, 'escalate', attacks(tenant.name, vault.name).escalate);
    const message = await failedAs(locked, 'escalate');
    expect(message).toContain(`system:serviceaccount:${tenant.name}:${DEFAULT_SA}`);
    expect(message).toMatch(/forbidden/i);
    await absent(() => rbac.readClusterRoleBinding({ name: `${tenant.name}-pwned` }));
  });

  it('locked down: an object in another namespace is Forbidden, and absent', async () => {
    await locked.create(tenant.name, 'escape', attacks(tenant.name, vault.name).escape);
    const message = await failedAs(locked, 'escape');
    expect(message).toContain(`system:serviceaccount:${tenant.name}:${DEFAULT_SA}`);
    expect(message).toMatch(/forbidden/i);
    await absent(() => core.readNamespacedConfigMap({ namespace: vault.name, name: 'planted' }));
  });

  it("locked down: lookup() through tpl cannot read another namespace's Secret; the canary is in no object, status or event of the tenant", async () => {
    await locked.create(tenant.name, 'peek', attacks(tenant.name, vault.name).peek);
    const message = await failedAs(locked, 'peek');
    expect(message).toContain(`system:serviceaccount:${tenant.name}:${DEFAULT_SA}`);
    await absent(() => core.readNamespacedConfigMap({ namespace: tenant.name, name: 'peek-loot' }));
    expect(await leaks(locked, ['escalate', 'escape', 'peek'])).toEqual([]);
  });

  it('locked down: a harmless CR installs as the ServiceAccount', async () => {
    await locked.create(tenant.name, 'fine', { greeting: 'hi' });
    await locked.waitForCondition(tenant.name, 'fine', { type: 'Deployed', status: 'True' });
    expect((await core.readNamespacedConfigMap({ namespace: tenant.name, name: 'fine-config' })).data?.greeting).toBe('hi');
  });

  it("a missing ServiceAccount refuses the CR, naming it and what to create, installs nothing, and installs once it exists; the watch's own serviceAccountName wins", async () => {
    await locked.create(bare.name, 'early', {});
    const cr = await locked.waitForCondition(bare.name, 'early', {
      type: 'Irreconcilable',
      status: 'True',
      reason: 'ServiceAccountNotFound',
    });
    const message = condition(cr, 'Irreconcilable')?.message ?? '';
    expect(message).toContain(`ServiceAccount ${DEFAULT_SA} not found in namespace ${bare.name}`);
    expect(message).toContain('Create the ServiceAccount');
    expect((await core.listNamespacedSecret({ namespace: bare.name, labelSelector: 'owner=helm' })).items).toEqual([]);
    await absent(() => core.readNamespacedConfigMap({ namespace: bare.name, name: 'early-config' }));
    expect((await locked.waitForEvent(bare.name, 'early', (e) => e.reason === 'ServiceAccountNotFound')).type).toBe('Warning');

    // The watch that names its own ServiceAccount does not use the default one.
    await ownSa.create(bare.name, 'own', {});
    await ownSa.waitForCondition(bare.name, 'own', { type: 'Deployed', status: 'True' });

    // Created by the namespace's admin: the next periodic look installs, with nothing done to the CR.
    await serviceAccount(kc, bare.name, DEFAULT_SA, NAMESPACE_RULES);
    await locked.waitForCondition(bare.name, 'early', { type: 'Deployed', status: 'True' }, { timeoutMs: 30_000 });
    expect(condition(await locked.get(bare.name, 'early'), 'Irreconcilable')?.status).toBe('False');
  });

  it('says who each watch acts as in helm_operator_watch_identity: the operator itself only without the flag', async () => {
    const locks = await lockedOp.metrics.metrics();
    expect(locks).toContain(
      `helm_operator_watch_identity{controller="lockedapp-controller",kind="LockedApp.lockdown.example.com",identity="serviceaccount"} 1`,
    );
    expect(locks).toContain(
      `helm_operator_watch_identity{controller="ownsaapp-controller",kind="OwnSaApp.lockdown.example.com",identity="serviceaccount"} 1`,
    );
    expect(locks).not.toMatch(/^helm_operator_watch_identity\{[^}]*identity="operator"/m);
    expect(await openOp.metrics.metrics()).toContain(
      `helm_operator_watch_identity{controller="openapp-controller",kind="OpenApp.lockdown.example.com",identity="operator"} 1`,
    );
  });

  // The baseline: the same chart and CRs without the flag. If these stop succeeding, the tests above prove nothing.
  it('baseline without the flag: the same CRs create the ClusterRoleBinding, plant the object, and read the Secret', async () => {
    const a = attacks(tenant.name, vault.name);
    // Other names: a release name is the CR's, whatever its kind.
    await open.create(tenant.name, 'open-escalate', a.escalate);
    await open.create(tenant.name, 'open-escape', a.escape);
    await open.create(tenant.name, 'open-peek', a.peek);
    for (const n of ['open-escalate', 'open-escape', 'open-peek'])
      await open.waitForCondition(tenant.name, n, { type: 'Deployed', status: 'True' });
    const crb = await rbac.readClusterRoleBinding({ name: `${tenant.name}-pwned` });
    expect(crb.roleRef.name).toBe('cluster-admin');
    expect((await core.readNamespacedConfigMap({ namespace: vault.name, name: 'planted' })).data?.by).toBe(tenant.name);
    expect((await core.readNamespacedConfigMap({ namespace: tenant.name, name: 'open-peek-loot' })).data?.token).toBe(CANARY);
  });
});
