import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { CoreV1Api, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions, type V1PolicyRule } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { REDACTED } from '../../../src/reconciler/status/redaction.js';
import { makeLogger } from '../../../src/telemetry/logger.js';
import { VALUES_FROM_ANNOTATION, VALUES_SOURCE_LABEL } from '../../../src/reconciler/desired/values-from.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, startOperator, type RunningOperator, type TestKind } from '../../support/operator.js';

const run = promisify(execFile);
const CHART = fixtureChart('tenant-app');
const APP: TestKind = { group: 'tenancy.example.com', version: 'v1', kind: 'App', plural: 'apps' };
const SCOPED: TestKind = { group: 'tenancy.example.com', version: 'v1', kind: 'ScopedApp', plural: 'scopedapps' };
const CONFINED: TestKind = { group: 'tenancy.example.com', version: 'v1', kind: 'ConfinedApp', plural: 'confinedapps' };
const LOOKUP_SERVER: TestKind = { group: 'tenancy.example.com', version: 'v1', kind: 'LookupServer', plural: 'lookupservers' };
const LOOKUP_CLIENT: TestKind = { group: 'tenancy.example.com', version: 'v1', kind: 'LookupClient', plural: 'lookupclients' };
const SECRET_APP: TestKind = { group: 'tenancy.example.com', version: 'v1', kind: 'SecretApp', plural: 'secretapps' };
const MARKED_APP: TestKind = { group: 'tenancy.example.com', version: 'v1', kind: 'MarkedApp', plural: 'markedapps' };

const watchOf = (k: TestKind, extra = ''): string =>
  `- {group: ${k.group}, version: ${k.version}, kind: ${k.kind}, chart: ${CHART}${extra}}`;
const ALL_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
/** The ServiceAccount `deployer` of `namespace`, bound to the Role `deployer` with `rules`. */
async function deployer(core: CoreV1Api, rbac: RbacAuthorizationV1Api, namespace: string, rules: V1PolicyRule[]): Promise<void> {
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'deployer' } } });
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name: 'deployer' }, rules } });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'deployer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'deployer' },
      subjects: [{ kind: 'ServiceAccount', name: 'deployer', namespace }],
    },
  });
}
const releaseSecrets = async (core: CoreV1Api, namespace: string, name: string) =>
  (await core.listNamespacedSecret({ namespace, labelSelector: `owner=helm,name=${name}` })).items;

describe('values from Secrets and ConfigMaps', () => {
  const kc = testKubeConfig();
  const apps = new CRs(kc, APP);
  const core = kc.makeApiClient(CoreV1Api);
  const CANARY = `canary-${Math.random().toString(36).slice(2)}-s3cr3t`;
  const logs: string[] = [];
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  const renderedPassword = async (release: string): Promise<string> =>
    Buffer.from((await core.readNamespacedSecret({ namespace: ns.name, name: `${release}-auth` })).data?.password ?? '', 'base64').toString(
      'utf8',
    );

  beforeAll(async () => {
    await ensureCrd(kc, APP);
    ns = await createNamespace(kc, 'values-from');
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logs.push(chunk.toString('utf8'));
        done();
      },
    });
    op = await startOperator({ watches: `${watchOf(APP)}\n`, namespaces: [ns.name], log: pino({ level: 'debug' }, sink) });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('installs with a password from a Secret, and the secret shows up nowhere but in the release', async () => {
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 'db', labels: { [VALUES_SOURCE_LABEL]: 'true' } }, stringData: { password: CANARY } },
    });
    await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'defaults' }, data: { 'values.yaml': 'greeting: from-configmap\n' } },
    });
    const refs = [
      { kind: 'ConfigMap', name: 'defaults' },
      { kind: 'Secret', name: 'db', key: 'password', targetPath: 'auth.password' },
    ];
    // Watch the process table while helm runs: values must never be on a command line.
    const seen: string[] = [];
    const sampling = { on: true };
    const sampler = (async () => {
      for (let i = 0; sampling.on && i < 600; i++) {
        seen.push((await run('ps', ['-eo', 'args'])).stdout);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await apps.create(ns.name, 'web', { greeting: 'from-spec' }, { [VALUES_FROM_ANNOTATION]: JSON.stringify(refs) });
    const cr = await apps.waitForCondition(ns.name, 'web', { type: 'Deployed', status: 'True' });
    sampling.on = false;
    await sampler;

    expect(await renderedPassword('web')).toBe(CANARY);
    // The spec wins over referenced values.
    expect((await core.readNamespacedConfigMap({ namespace: ns.name, name: 'web-settings' })).data?.greeting).toBe('from-spec');

    expect(seen.some((s) => s.includes('helm'))).toBe(true);
    expect(seen.filter((s) => s.includes(CANARY))).toEqual([]);
    expect(logs.join('')).not.toContain(CANARY);
    expect(logs.length).toBeGreaterThan(0);
    expect(JSON.stringify(cr.status)).not.toContain(CANARY);
    const events = await core.listNamespacedEvent({ namespace: ns.name });
    expect(JSON.stringify(events.items.map((e) => e.message))).not.toContain(CANARY);
    // Nothing left on disk either: the values file went with its directory.
    expect((await readdir(tmpdir())).filter((d) => d.startsWith(`helm-values-${process.pid}-`))).toEqual([]);
    const storage = await releaseSecrets(core, ns.name, 'web');
    expect(storage).toHaveLength(1);
    expect(JSON.stringify(storage.map((s) => s.metadata?.labels))).not.toContain(CANARY);
  });

  it('upgrades the release within seconds when the referenced Secret changes', async () => {
    await core.patchNamespacedSecret(
      { namespace: ns.name, name: 'db', body: { stringData: { password: 'rotated' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor(
      'revision 2 with the new password',
      async () => (await apps.get(ns.name, 'web'))?.status?.deployedRelease?.revision === 2,
      {
        timeoutMs: 20_000,
      },
    );
    expect(await renderedPassword('web')).toBe('rotated');
  });

  it('blocks helm with a clear condition while a required reference is missing, then installs once it exists', async () => {
    const refs = [{ kind: 'Secret', name: 'not-yet', key: 'password', targetPath: 'auth.password' }];
    await apps.create(ns.name, 'waiting', {}, { [VALUES_FROM_ANNOTATION]: JSON.stringify(refs) });
    const cr = await apps.waitForCondition(ns.name, 'waiting', {
      type: 'Irreconcilable',
      status: 'True',
      reason: 'ValuesReferenceNotFound',
    });
    expect(condition(cr, 'Irreconcilable')?.message).toBe(`values reference not found in namespace ${ns.name}: Secret not-yet`);
    expect(await releaseSecrets(core, ns.name, 'waiting')).toEqual([]);

    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 'not-yet', labels: { [VALUES_SOURCE_LABEL]: 'true' } }, stringData: { password: 'finally' } },
    });
    await apps.waitForCondition(ns.name, 'waiting', { type: 'Deployed', status: 'True' }, { timeoutMs: 30_000 });
    expect(await renderedPassword('waiting')).toBe('finally');
    expect(condition(await apps.get(ns.name, 'waiting'), 'Irreconcilable')?.status).toBe('False');
  });

  it('refuses a malformed reference list without running helm', async () => {
    await apps.create(ns.name, 'typo', {}, { [VALUES_FROM_ANNOTATION]: '[{kind: Secret, nmae: db}]' });
    const cr = await apps.waitForCondition(ns.name, 'typo', { type: 'Irreconcilable', status: 'True', reason: 'InvalidValuesReference' });
    expect(condition(cr, 'Irreconcilable')?.message).toContain('unknown field "nmae"');
    expect(await releaseSecrets(core, ns.name, 'typo')).toEqual([]);
  });
});

describe('per-CR identity (serviceAccountName)', () => {
  const kc = testKubeConfig();
  const scoped = new CRs(kc, SCOPED);
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;
  const rule = (resources: string[], verbs = ALL_VERBS): V1PolicyRule => ({ apiGroups: [''], resources, verbs });
  const grant = (rules: V1PolicyRule[]) =>
    rbac.replaceNamespacedRole({ namespace: ns.name, name: 'deployer', body: { metadata: { name: 'deployer' }, rules } });

  beforeAll(async () => {
    await ensureCrd(kc, SCOPED);
    ns = await createNamespace(kc, 'identity');
    // helm keeps release state in Secrets; the chart makes Secrets and ConfigMaps, and here a Service too.
    await deployer(core, rbac, ns.name, [rule(['secrets', 'configmaps'])]);
    op = await startOperator({ watches: `${watchOf(SCOPED, ', serviceAccountName: deployer')}\n`, namespaces: [ns.name] });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('fails with Forbidden naming the Service when the ServiceAccount may not create it, though the operator could', async () => {
    await scoped.create(ns.name, 'web', { service: true });
    const cr = await scoped.waitForCondition(ns.name, 'web', { type: 'ReleaseFailed', status: 'True' });
    const message = condition(cr, 'ReleaseFailed')?.message ?? '';
    expect(message).toContain(`system:serviceaccount:${ns.name}:deployer`);
    expect(message).toMatch(/services.*forbidden|forbidden.*services/is);
    await expect(core.readNamespacedService({ namespace: ns.name, name: 'web-svc' })).rejects.toSatisfy((e) => isStatus(e, 404));
  });

  it('succeeds once the ServiceAccount may, and repairs drift and uninstalls as that ServiceAccount', async () => {
    await grant([rule(['secrets', 'configmaps', 'services'])]);
    // A spec change brings a new desired state (the failed one is counted against the old one).
    const patched = await scoped.patch(ns.name, 'web', { spec: { service: true, greeting: 'granted' } });
    await waitFor('the patched spec to be deployed', async () => {
      const cr = await scoped.get(ns.name, 'web');
      return cr?.status?.observedGeneration === patched.metadata.generation && condition(cr, 'Deployed')?.status === 'True';
    });
    expect((await core.readNamespacedConfigMap({ namespace: ns.name, name: 'web-settings' })).data?.greeting).toBe('granted');
    await core.readNamespacedService({ namespace: ns.name, name: 'web-svc' });

    // Drift repair as the ServiceAccount: without create on configmaps, a deleted one cannot come back.
    await grant([rule(['secrets', 'services']), rule(['configmaps'], ['get', 'list', 'watch', 'update', 'patch', 'delete'])]);
    await core.deleteNamespacedConfigMap({ namespace: ns.name, name: 'web-settings' });
    const failed = await scoped.waitForCondition(ns.name, 'web', { type: 'Drifted', status: 'True', reason: 'DriftRepairFailed' });
    expect(condition(failed, 'Drifted')?.message).toContain(`system:serviceaccount:${ns.name}:deployer`);
    await grant([rule(['secrets', 'configmaps', 'services'])]);
    await waitFor('the ConfigMap to be recreated', async () =>
      core.readNamespacedConfigMap({ namespace: ns.name, name: 'web-settings' }).then(
        () => true,
        () => false,
      ),
    );

    // Uninstall as the ServiceAccount: without delete on services, the uninstall fails and says who.
    await grant([rule(['secrets', 'configmaps']), rule(['services'], ['get', 'list', 'watch', 'create', 'update', 'patch'])]);
    await scoped.delete(ns.name, 'web');
    const stuck = await scoped.waitForCondition(ns.name, 'web', { type: 'ReleaseFailed', status: 'True', reason: 'UninstallError' });
    expect(condition(stuck, 'ReleaseFailed')?.message).toContain(`system:serviceaccount:${ns.name}:deployer`);
    await grant([rule(['secrets', 'configmaps', 'services'])]);
    await scoped.waitForGone(ns.name, 'web');
  });
});

describe('namespace confinement (confineToNamespace)', () => {
  const kc = testKubeConfig();
  const confined = new CRs(kc, CONFINED);
  const open = new CRs(kc, APP);
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let other: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  beforeAll(async () => {
    await ensureCrd(kc, CONFINED);
    await ensureCrd(kc, APP);
    await ensureCrd(kc, LOOKUP_SERVER);
    await ensureCrd(kc, LOOKUP_CLIENT);
    ns = await createNamespace(kc, 'confined');
    other = await createNamespace(kc, 'elsewhere');
    // lookup-gate renders a ClusterRole unless a marker ConfigMap of the release's namespace exists.
    const gate = fixtureChart('lookup-gate');
    const lookupWatch = (k: TestKind, dryRun: string): string =>
      `- {group: ${k.group}, version: ${k.version}, kind: ${k.kind}, chart: ${gate}, confineToNamespace: true${dryRun}}`;
    const watches = [
      watchOf(CONFINED, ', confineToNamespace: true'),
      watchOf(APP),
      lookupWatch(LOOKUP_SERVER, ', dryRunOption: server'),
      lookupWatch(LOOKUP_CLIENT, ''),
      '',
    ];
    op = await startOperator({ watches: watches.join('\n'), namespaces: [ns.name] });
  });
  afterAll(async () => {
    await op.stop();
    await rbac.deleteClusterRole({ name: `${ns.name}-free-tenant` }).catch(() => undefined);
    await other.remove();
    await ns.remove();
  });

  it('refuses a release that renders into another namespace, creating nothing', async () => {
    await confined.create(ns.name, 'escape', { targetNamespace: other.name });
    const cr = await confined.waitForCondition(ns.name, 'escape', {
      type: 'Irreconcilable',
      status: 'True',
      reason: 'NamespaceConfinementViolation',
    });
    expect(condition(cr, 'Irreconcilable')?.message).toContain(`ConfigMap ${other.name}/escape-settings (namespace ${other.name})`);
    expect(await releaseSecrets(core, ns.name, 'escape')).toEqual([]);
    expect(
      (await core.listNamespacedConfigMap({ namespace: other.name })).items.filter((c) => c.metadata?.name === 'escape-settings'),
    ).toEqual([]);
  });

  it('refuses a cluster-scoped object the watch does not allow', async () => {
    await confined.create(ns.name, 'admin', { clusterRole: true });
    const cr = await confined.waitForCondition(ns.name, 'admin', {
      type: 'Irreconcilable',
      status: 'True',
      reason: 'NamespaceConfinementViolation',
    });
    expect(condition(cr, 'Irreconcilable')?.message).toContain(`ClusterRole ${ns.name}-admin-tenant (cluster-scoped)`);
    await expect(rbac.readClusterRole({ name: `${ns.name}-admin-tenant` })).rejects.toSatisfy((e) => isStatus(e, 404));
  });

  it('installs a confined release as usual', async () => {
    await confined.create(ns.name, 'home', {});
    await confined.waitForCondition(ns.name, 'home', { type: 'Deployed', status: 'True' });
  });

  it("dryRunOption: server renders the pre-flight against the cluster, so a chart's lookup() sees what exists", async () => {
    await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'lookup-gate-marker' } } });
    const server = new CRs(kc, LOOKUP_SERVER);
    const client = new CRs(kc, LOOKUP_CLIENT);
    await server.create(ns.name, 'seen', {});
    await client.create(ns.name, 'blind', {});
    // Offline, lookup() finds nothing and the chart renders its cluster-wide part: refused.
    const blind = await client.waitForCondition(ns.name, 'blind', {
      type: 'Irreconcilable',
      status: 'True',
      reason: 'NamespaceConfinementViolation',
    });
    expect(condition(blind, 'Irreconcilable')?.message).toContain(`ClusterRole ${ns.name}-blind-bootstrap (cluster-scoped)`);
    // Against the cluster, lookup() finds the marker: nothing outside the namespace, installed.
    await server.waitForCondition(ns.name, 'seen', { type: 'Deployed', status: 'True' });
    await core.readNamespacedConfigMap({ namespace: ns.name, name: 'seen-settings' });
    await expect(rbac.readClusterRole({ name: `${ns.name}-seen-bootstrap` })).rejects.toSatisfy((e) => isStatus(e, 404));
    expect((await releaseSecrets(core, ns.name, 'seen')).map((s) => s.metadata?.labels?.version)).toEqual(['1']);
  });

  it('changes nothing when confinement is off', async () => {
    await open.create(ns.name, 'free', { targetNamespace: other.name, clusterRole: true });
    await open.waitForCondition(ns.name, 'free', { type: 'Deployed', status: 'True' });
    await core.readNamespacedConfigMap({ namespace: other.name, name: 'free-settings' });
    await rbac.readClusterRole({ name: `${ns.name}-free-tenant` });
  });
});

describe('values from Secrets under a ServiceAccount: opt-in and redaction', () => {
  const kc = testKubeConfig();
  const apps = new CRs(kc, SECRET_APP);
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const logs: string[] = [];
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  /** Every place a Secret's value must not reach: the namespace's ConfigMaps, the CR's status, events, the operator's log. */
  const leaks = async (canary: string, cr: string, crs: CRs = apps): Promise<string[]> => {
    const where: string[] = [];
    const configMaps = (await core.listNamespacedConfigMap({ namespace: ns.name })).items;
    if (JSON.stringify(configMaps.map((c) => [c.data, c.metadata?.labels])).includes(canary)) where.push('a ConfigMap');
    if (JSON.stringify((await crs.get(ns.name, cr))?.status).includes(canary)) where.push('status');
    if (JSON.stringify((await core.listNamespacedEvent({ namespace: ns.name })).items).includes(canary)) where.push('events');
    if (logs.join('').includes(canary)) where.push('operator log');
    return where;
  };
  const eventOf = (cr: string, reason: string) =>
    waitFor(`a ${reason} event for ${cr}`, async () =>
      (await core.listNamespacedEvent({ namespace: ns.name })).items.find((e) => e.involvedObject.name === cr && e.reason === reason),
    );

  beforeAll(async () => {
    await ensureCrd(kc, SECRET_APP);
    await ensureCrd(kc, MARKED_APP);
    ns = await createNamespace(kc, 'secret-refs');
    // The ServiceAccount reads every Secret of the namespace (helm's release storage needs it): the label, not RBAC, is the opt-in.
    await deployer(core, rbac, ns.name, [{ apiGroups: [''], resources: ['secrets', 'configmaps'], verbs: ALL_VERBS }]);
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logs.push(chunk.toString('utf8'));
        done();
      },
    });
    // The operator's own logger: its error serializer writes messages and causes, where values would leak.
    const log = makeLogger({ level: 'debug', destination: sink });
    const watches = [watchOf(SECRET_APP, ', serviceAccountName: deployer'), watchOf(MARKED_APP, ', sensitiveValues: [tier]'), ''];
    op = await startOperator({ watches: watches.join('\n'), namespaces: [ns.name], log });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('refuses a Secret that did not opt in, rendering nothing, and uses it once it is labelled', async () => {
    const canary = `canary-${Math.random().toString(36).slice(2)}-other-team`;
    await core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name: 'other-team' }, stringData: { password: canary } } });
    const refs = [{ kind: 'Secret', name: 'other-team', key: 'password', targetPath: 'auth.password' }];
    await apps.create(ns.name, 'steal', {}, { [VALUES_FROM_ANNOTATION]: JSON.stringify(refs) });

    const cr = await apps.waitForCondition(ns.name, 'steal', {
      type: 'Irreconcilable',
      status: 'True',
      reason: 'ValuesReferenceNotAllowed',
    });
    const message = condition(cr, 'Irreconcilable')?.message ?? '';
    expect(message).toContain(`Secret other-team of namespace ${ns.name} not labelled ${VALUES_SOURCE_LABEL}="true"`);
    expect(message).toContain('label them');
    expect((await eventOf('steal', 'ValuesReferenceNotAllowed')).type).toBe('Warning');
    expect(await releaseSecrets(core, ns.name, 'steal')).toEqual([]);
    await expect(core.readNamespacedSecret({ namespace: ns.name, name: 'steal-auth' })).rejects.toSatisfy((e) => isStatus(e, 404));
    await expect(core.readNamespacedConfigMap({ namespace: ns.name, name: 'steal-settings' })).rejects.toSatisfy((e) => isStatus(e, 404));
    expect(await leaks(canary, 'steal')).toEqual([]);

    // The owner of the Secret opts in: the label's watch reconciles the CR, reading it as the ServiceAccount.
    await core.patchNamespacedSecret(
      { namespace: ns.name, name: 'other-team', body: { metadata: { labels: { [VALUES_SOURCE_LABEL]: 'true' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await apps.waitForCondition(ns.name, 'steal', { type: 'Deployed', status: 'True' }, { timeoutMs: 30_000 });
    const rendered = await core.readNamespacedSecret({ namespace: ns.name, name: 'steal-auth' });
    expect(Buffer.from(rendered.data?.password ?? '', 'base64').toString('utf8')).toBe(canary);
    expect(condition(await apps.get(ns.name, 'steal'), 'Irreconcilable')?.status).toBe('False');
  });

  it('keeps a Secret value the API server refuses out of status, events and logs, while saying what failed', async () => {
    // Not a valid label value (':'), so the API server refuses the ConfigMap and quotes the value.
    const canary = `cnry:${Math.random().toString(36).slice(2)}`;
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 'tier', labels: { [VALUES_SOURCE_LABEL]: 'true' } }, stringData: { tier: canary } },
    });
    const refs = [{ kind: 'Secret', name: 'tier', key: 'tier', targetPath: 'tier' }];
    await apps.create(ns.name, 'refused', {}, { [VALUES_FROM_ANNOTATION]: JSON.stringify(refs) });

    const cr = await apps.waitForCondition(ns.name, 'refused', { type: 'ReleaseFailed', status: 'True', reason: 'InstallError' });
    const message = condition(cr, 'ReleaseFailed')?.message ?? '';
    expect(message).toContain('refused-settings');
    expect(message).toContain(`Invalid value: "${REDACTED}"`);
    expect((await eventOf('refused', 'InstallFailed')).message).toContain(`Invalid value: "${REDACTED}"`);
    await waitFor('the failure in the operator log', () =>
      Promise.resolve(logs.some((l) => l.includes('Reconciler error') && l.includes('refused-settings'))),
    );
    expect(await leaks(canary, 'refused')).toEqual([]);
  });

  it('keeps a value the watch marks sensitive (sensitiveValues) out of status, events and logs, wherever it was set', async () => {
    const canary = `mark:${Math.random().toString(36).slice(2)}`;
    const marked = new CRs(kc, MARKED_APP);
    await marked.create(ns.name, 'marked', { tier: canary });
    const cr = await marked.waitForCondition(ns.name, 'marked', { type: 'ReleaseFailed', status: 'True', reason: 'InstallError' });
    expect(condition(cr, 'ReleaseFailed')?.message).toContain(`Invalid value: "${REDACTED}"`);
    expect((await eventOf('marked', 'InstallFailed')).message).toContain(`Invalid value: "${REDACTED}"`);
    await waitFor('the failure in the operator log', () =>
      Promise.resolve(logs.some((l) => l.includes('Reconciler error') && l.includes('marked-settings'))),
    );
    expect(await leaks(canary, 'marked', marked)).toEqual([]);
  });

  it('keeps a long token and a value with runs of spaces and a tab out of status, events and logs when helm quotes them back', async () => {
    // 1500 characters: longer than helm's 1000-character summary, which once cut it and left 889 of them.
    const token = randomBytes(750).toString('hex');
    // Two spaces and a tab: helm's summary collapses them, the API server's %q escapes the tab.
    const hidden = randomBytes(8).toString('hex');
    const spaced = `pw  ${hidden}\tend`;
    const marked = new CRs(kc, MARKED_APP);
    await marked.create(ns.name, 'long-token', { tier: token });
    await marked.create(ns.name, 'spaced', { tier: spaced });
    for (const name of ['long-token', 'spaced']) {
      const cr = await marked.waitForCondition(ns.name, name, { type: 'ReleaseFailed', status: 'True', reason: 'InstallError' });
      expect(condition(cr, 'ReleaseFailed')?.message).toContain(`Invalid value: "${REDACTED}"`);
      expect((await eventOf(name, 'InstallFailed')).message).toContain(`Invalid value: "${REDACTED}"`);
      await waitFor(`${name}'s failure in the operator log`, () =>
        Promise.resolve(logs.some((l) => l.includes('Reconciler error') && l.includes(`${name}-settings`))),
      );
    }
    // Any 12 characters of the token (a prefix of it left by a cut included), or the middle of the spaced value.
    const fragments = [...Array.from({ length: (token.length - 12) / 6 + 1 }, (_, i) => token.slice(i * 6, i * 6 + 12)), hidden];
    const readable = {
      status: JSON.stringify(await Promise.all(['long-token', 'spaced'].map(async (n) => (await marked.get(ns.name, n))?.status))),
      events: JSON.stringify((await core.listNamespacedEvent({ namespace: ns.name })).items),
      'operator log': logs.join(''),
    };
    const found = Object.entries(readable).flatMap(([where, text]) =>
      fragments.filter((f) => text.includes(f)).map((f) => `${where}: ${f}`),
    );
    expect(found).toEqual([]);
  });
});
