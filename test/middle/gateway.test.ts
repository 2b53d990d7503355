/**
 * Moved from the operator-level test/integration/operator/gateway.test.ts, reconcile by reconcile.
 * The helm gateway against a hostile tenant: a CR author who controls only the CR's spec, on a
 * chart written the way bitnami's are (`extraDeploy` rendered through `tpl`, a common library, a
 * password kept with `lookup`). Each attack is one the offline pre-flight render cannot see (the
 * real install renders differently, or the object hides in an `items:` list, or in `crds/`), so
 * only the gateway, deciding each request helm makes, stands in the way. Assertions are on the
 * cluster: the object absent, the canary in no object of the tenant's namespace.
 */
import { ApiextensionsV1Api, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus } from '../../src/k8s/errors.js';
import { VALUES_SOURCE_LABEL } from '../../src/reconciler/desired/values-from.js';
import { createNamespace, testKubeConfig } from '../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, type CR, type TestKind } from '../support/operator.js';
import { startReconcilers, type ReconcilerHarness } from '../support/reconciler-harness.js';

const EXTRAS = fixtureChart('tenant-lookup');
const CRDS = fixtureChart('tenant-crds');
const CONFINED: TestKind = { group: 'gateway.example.com', version: 'v1', kind: 'Extras', plural: 'extras' };
const CONFINED_CRDS: TestKind = { group: 'gateway.example.com', version: 'v1', kind: 'Gadgetry', plural: 'gadgetries' };
const AS_SA: TestKind = { group: 'gateway.example.com', version: 'v1', kind: 'SaExtras', plural: 'saextras' };
const LISTED: TestKind = { group: 'gateway.example.com', version: 'v1', kind: 'Listed', plural: 'listeds' };
/** Renders one ConfigMap of its own (and whatever `extraDeploy` adds): `allowKinds: [ConfigMap]` fits it. */
const CONFIGMAP_ONLY = fixtureChart('tenant-extras');
const watch = (k: TestKind, chart: string, extra: string): string =>
  `- {group: ${k.group}, version: ${k.version}, kind: ${k.kind}, chart: ${chart}, ${extra}}`;

const CANARY = `canary-${Math.random().toString(36).slice(2)}-victim`;
const INTERNAL = `internal-${Math.random().toString(36).slice(2)}-unlabelled`;
const SHARED = `shared-${Math.random().toString(36).slice(2)}-labelled`;
const spellings = (v: string): string[] => [v, Buffer.from(v).toString('base64')];

const crb = (name: string): string => `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ${name}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: User, name: tenant-a-user, apiGroup: rbac.authorization.k8s.io}]`;

/** A ConfigMap `name` of the release's namespace holding what `lookup` of Secret namespace/secret returned. */
const loot = (name: string, namespace: string, secret: string): string => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}}
data:
  loot: {{ (lookup "v1" "Secret" "${namespace}" "${secret}") | toJson | quote }}`;

describe.concurrent('the helm gateway against a hostile CR author', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const confined = new CRs(kc, CONFINED);
  const confinedCrds = new CRs(kc, CONFINED_CRDS);
  const asSa = new CRs(kc, AS_SA);
  const listed = new CRs(kc, LISTED);
  let tenant: Awaited<ReturnType<typeof createNamespace>>;
  let victim: Awaited<ReturnType<typeof createNamespace>>;
  let h: ReconcilerHarness;

  /** Every string of every ConfigMap and Secret of the tenant's namespace. */
  const tenantReadable = async (): Promise<string> => {
    const cms = (await core.listNamespacedConfigMap({ namespace: tenant.name })).items;
    const secrets = (await core.listNamespacedSecret({ namespace: tenant.name })).items.filter(
      (s) => !s.metadata?.name?.startsWith('sh.helm.release'),
    );
    return JSON.stringify([
      cms.map((c) => c.data),
      secrets.filter((s) => !['internal', 'shared'].includes(s.metadata?.name ?? '')).map((s) => s.data),
    ]);
  };
  const configMapData = async (name: string): Promise<Record<string, string> | undefined> => {
    try {
      return (await core.readNamespacedConfigMap({ namespace: tenant.name, name })).data ?? {};
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  };
  const clusterRoleBindingExists = async (name: string): Promise<boolean> => {
    try {
      await rbac.readClusterRoleBinding({ name });
      return true;
    } catch (err) {
      if (isStatus(err, 404)) return false;
      throw err;
    }
  };
  /** The CR once its reconciles settle, with condition `reason` True (else its conditions in the failure). */
  const withReason = async (crs: CRs, name: string, reason: string): Promise<CR> => {
    const { cr } = await h.reconcileUntilSettled(`${tenant.name}/${name}`, crs.kind);
    expect(cr?.status?.conditions?.filter((c) => c.status === 'True').map((c) => c.reason)).toContain(reason);
    return cr as CR;
  };
  const deployed = async (crs: CRs, name: string): Promise<void> => {
    const { cr } = await h.reconcileUntilSettled(`${tenant.name}/${name}`, crs.kind);
    expect(condition(cr, 'Deployed')?.status).toBe('True');
  };

  beforeAll(async () => {
    await Promise.all([ensureCrd(kc, CONFINED), ensureCrd(kc, CONFINED_CRDS), ensureCrd(kc, AS_SA), ensureCrd(kc, LISTED)]);
    // Cluster-scoped, so a kept cluster may still have it from a run whose attack got through.
    await kc
      .makeApiClient(ApiextensionsV1Api)
      .deleteCustomResourceDefinition({ name: 'gadgets.tenant.example.com' })
      .catch(() => undefined);
    tenant = await createNamespace(kc, 'tenant');
    victim = await createNamespace(kc, 'victim');
    await core.createNamespacedSecret({ namespace: victim.name, body: { metadata: { name: 'db' }, stringData: { password: CANARY } } });
    await core.createNamespacedSecret({
      namespace: tenant.name,
      body: { metadata: { name: 'internal' }, stringData: { token: INTERNAL } },
    });
    await core.createNamespacedSecret({
      namespace: tenant.name,
      body: { metadata: { name: 'shared', labels: { [VALUES_SOURCE_LABEL]: 'true' } }, stringData: { token: SHARED } },
    });
    // The namespace admin's ServiceAccount for the impersonating watch: everything in the namespace, Secrets included.
    await core.createNamespacedServiceAccount({ namespace: tenant.name, body: { metadata: { name: 'deployer' } } });
    await rbac.createNamespacedRoleBinding({
      namespace: tenant.name,
      body: {
        metadata: { name: 'deployer-admin' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
        subjects: [{ kind: 'ServiceAccount', name: 'deployer', namespace: tenant.name }],
      },
    });
    const watches = [
      watch(CONFINED, EXTRAS, 'confineToNamespace: true'),
      watch(CONFINED_CRDS, CRDS, 'confineToNamespace: true'),
      watch(AS_SA, EXTRAS, 'serviceAccountName: deployer'),
      watch(LISTED, CONFIGMAP_ONLY, 'allowKinds: [ConfigMap]'),
      '',
    ].join('\n');
    h = await startReconcilers({ watches, namespaces: [tenant.name] });
  });
  afterAll(async () => {
    await h.stop();
    await Promise.all([tenant.remove(), victim.remove()]);
    // Only there if an attack got through (the test then failed): leave no cluster-admin behind.
    for (const name of ['gw-lookup-crb', 'gw-items-crb']) await rbac.deleteClusterRoleBinding({ name }).catch(() => undefined);
    await kc
      .makeApiClient(ApiextensionsV1Api)
      .deleteCustomResourceDefinition({ name: 'gadgets.tenant.example.com' })
      .catch(() => undefined);
  });

  it('refuses a ClusterRoleBinding to cluster-admin that only the real install renders (lookup), and creates nothing outside', async () => {
    const attack = `{{- if lookup "v1" "Namespace" "" "kube-system" }}\n${crb('gw-lookup-crb')}\n{{- else }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: decoy}\n{{- end }}`;
    await confined.create(tenant.name, 'escalate', { extraDeploy: [attack] });
    const cr = await withReason(confined, 'escalate', 'NamespaceConfinementViolation');
    expect(JSON.stringify(cr.status?.conditions)).toContain('ClusterRoleBinding');
    expect(await clusterRoleBindingExists('gw-lookup-crb')).toBe(false);
  });

  it('checks the objects of an `items:` list whose kind does not end in List, one by one', async () => {
    const attack = `apiVersion: v1\nkind: Bundle\nitems:\n- ${crb('gw-items-crb').replaceAll('\n', '\n  ')}`;
    await confined.create(tenant.name, 'listed', { extraDeploy: [attack] });
    await withReason(confined, 'listed', 'NamespaceConfinementViolation');
    expect(await clusterRoleBindingExists('gw-items-crb')).toBe(false);
  });

  it('refuses an object in another namespace that only an upgrade renders (.Release.IsUpgrade)', async () => {
    await confined.create(tenant.name, 'sleeper', { extraDeploy: [] });
    await deployed(confined, 'sleeper');
    const attack = `{{- if .Release.IsUpgrade }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: planted, namespace: ${victim.name}}\ndata: {x: y}\n{{- end }}`;
    await confined.patch(tenant.name, 'sleeper', { spec: { extraDeploy: [attack], greeting: 'v2' } });
    await withReason(confined, 'sleeper', 'NamespaceConfinementViolation');
    await expect(core.readNamespacedConfigMap({ namespace: victim.name, name: 'planted' })).rejects.toSatisfy((err: unknown) =>
      isStatus(err, 404),
    );
  });

  it("does not install a confined chart's crds/", async () => {
    await confinedCrds.create(tenant.name, 'gadgets', {});
    await withReason(confinedCrds, 'gadgets', 'NamespaceConfinementViolation');
    const crds = await kc.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition();
    expect(crds.items.map((c) => c.metadata?.name)).not.toContain('gadgets.tenant.example.com');
  });

  it("lets lookup through tpl read no Secret of another namespace, nor an unlabelled one of the tenant's", async () => {
    await confined.create(tenant.name, 'reader', {
      extraDeploy: [
        loot('loot-victim', victim.name, 'db'),
        loot('loot-internal', tenant.name, 'internal'),
        loot('loot-shared', tenant.name, 'shared'),
      ],
    });
    await deployed(confined, 'reader');
    expect((await configMapData('loot-victim'))?.loot).toBe('{}');
    expect((await configMapData('loot-internal'))?.loot).toBe('{}');
    // Opted in with the values-source label: readable, as a values-from reference would be.
    expect((await configMapData('loot-shared'))?.loot).toContain(Buffer.from(SHARED).toString('base64'));
    const readableByTenant = await tenantReadable();
    for (const secret of [CANARY, INTERNAL]) for (const s of spellings(secret)) expect(readableByTenant).not.toContain(s);
  });

  it("under a ServiceAccount that may read the namespace's Secrets, lookup still reads no unlabelled one", async () => {
    await asSa.create(tenant.name, 'sa-reader', { extraDeploy: [loot('sa-loot-internal', tenant.name, 'internal')] });
    await deployed(asSa, 'sa-reader');
    expect((await configMapData('sa-loot-internal'))?.loot).toBe('{}');
    for (const s of spellings(INTERNAL)) expect(await tenantReadable()).not.toContain(s);
  });

  it("writes only the kinds the watch's allowKinds lists (helm's own release records aside)", async () => {
    await listed.create(tenant.name, 'plain', {});
    await deployed(listed, 'plain');
    const attack = 'apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: planted-sa}';
    await listed.create(tenant.name, 'sneaky', { extraDeploy: [attack] });
    const cr = await withReason(listed, 'sneaky', 'KindNotAllowed');
    expect(JSON.stringify(cr.status?.conditions)).toContain("ServiceAccount is not in this watch's allowKinds");
    await expect(core.readNamespacedServiceAccount({ namespace: tenant.name, name: 'planted-sa' })).rejects.toSatisfy((err: unknown) =>
      isStatus(err, 404),
    );
  });

  it('keeps what charts rely on: a password kept with lookup of its own Secret survives upgrades', async () => {
    await confined.create(tenant.name, 'keeper', { greeting: 'v1' });
    await deployed(confined, 'keeper');
    const password = async () => (await core.readNamespacedSecret({ namespace: tenant.name, name: 'keeper-password' })).data?.password;
    const first = await password();
    expect(first).toBeTruthy();
    await confined.patch(tenant.name, 'keeper', { spec: { greeting: 'v2' } });
    await deployed(confined, 'keeper');
    expect((await configMapData('keeper-settings'))?.greeting).toBe('v2');
    expect(await password()).toBe(first);
  });
});
