import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, RbacAuthorizationV1Api, type V1PolicyRule } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HelmClient } from '../../../src/helm/index.js';
import { helmPort } from '../../../src/operator/helm-adapter.js';
import type { HelmPort } from '../../../src/reconciler/core/helm-port.js';
import { helmRejection } from '../../support/helm.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';

/**
 * The port's `render` with `dryRun: 'server'` (the confineToNamespace pre-flight of a watch with
 * `dryRunOption: server`) against the real control plane, once per helm major. The chart
 * (test/fixtures/charts/lookup-gate) renders a ClusterRole only when `lookup()` finds no
 * ConfigMap named `.Values.marker` in the release namespace, so its render tells whether helm
 * asked the cluster: offline, lookup finds nothing and the ClusterRole is always there.
 */
const CHART = fileURLToPath(new URL('../../fixtures/charts/lookup-gate', import.meta.url));
const MARKER = 'lookup-gate-marker';

const binaries = [
  { major: 4 as const, bin: inject('helmBin') },
  { major: 3 as const, bin: inject('helm3Bin') },
].filter((b) => b.bin !== '' && existsSync(b.bin));

const CLUSTER_ROLE = /^kind: ClusterRole$/m;

describe.each(binaries)('server dry run with helm v$major', ({ major, bin }) => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  let ns: { name: string; remove: () => Promise<void> };
  let work: string;
  let client: HelmClient;
  let port: HelmPort;

  type RenderRequest = Parameters<HelmPort['render']>[0];
  const request = (release: string, extra: Partial<RenderRequest> = {}): RenderRequest => ({
    release,
    namespace: ns.name,
    chart: CHART,
    values: {},
    labels: {},
    ...extra,
  });
  const releaseSecrets = async (release: string): Promise<string[]> =>
    (await core.listNamespacedSecret({ namespace: ns.name, labelSelector: `owner=helm,name=${release}` })).items.map(
      (s) => s.metadata?.name ?? '',
    );
  const configMaps = async (): Promise<Record<string, string>> =>
    Object.fromEntries(
      (await core.listNamespacedConfigMap({ namespace: ns.name })).items.map((c) => [
        c.metadata?.name ?? '',
        c.metadata?.resourceVersion ?? '',
      ]),
    );
  const clusterRoleExists = (name: string): Promise<boolean> =>
    rbac.readClusterRole({ name }).then(
      () => true,
      (err: unknown) => {
        if ((err as { code?: number }).code === 404) return false;
        throw err;
      },
    );
  /** ServiceAccount `name` of the test namespace, bound to a Role of the same name with `rules`. */
  async function serviceAccount(name: string, rules: V1PolicyRule[]): Promise<string> {
    await core.createNamespacedServiceAccount({ namespace: ns.name, body: { metadata: { name } } });
    await rbac.createNamespacedRole({ namespace: ns.name, body: { metadata: { name }, rules } });
    await bind(name, name);
    return `system:serviceaccount:${ns.name}:${name}`;
  }
  async function bind(serviceAccountName: string, role: string): Promise<void> {
    await rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: `${serviceAccountName}-${role}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
        subjects: [{ kind: 'ServiceAccount', name: serviceAccountName, namespace: ns.name }],
      },
    });
  }

  beforeAll(async () => {
    ns = await createNamespace(kc, `dry-run-v${major}`);
    work = await mkdtemp(path.join(tmpdir(), 'helm-dry-run-'));
    client = new HelmClient({ binary: bin, kubeconfig: inject('kubeconfigPath'), tmpDir: work });
    port = helmPort(client);
    await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: MARKER } } });
  });

  afterAll(async () => {
    await ns.remove();
    await rm(work, { recursive: true, force: true });
  });

  it('offline (no dryRun, or client), lookup() finds nothing: the ClusterRole is rendered', async () => {
    const offline = await port.render(request('web'));
    expect(offline).toMatch(CLUSTER_ROLE);
    expect(offline).toContain('# Source: lookup-gate/templates/hook.yaml');
    expect(await port.render(request('web', { dryRun: 'client' }))).toBe(offline);
  });

  it('server: lookup() sees the marker in the cluster, so no ClusterRole; hooks are in the output as helm template gives them', async () => {
    const server = await port.render(request('web', { dryRun: 'server' }));
    expect(server).not.toMatch(CLUSTER_ROLE);
    expect(server).toContain('# Source: lookup-gate/templates/configmap.yaml');
    expect(server).toContain('# Source: lookup-gate/templates/hook.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-pre-hook');
    // With nothing in the cluster to find, the server dry run and helm template print the same text.
    const absent = { values: { marker: 'no-such-configmap' } };
    const serverAbsent = await port.render(request('web', { ...absent, dryRun: 'server' }));
    expect(serverAbsent).toMatch(CLUSTER_ROLE);
    expect(serverAbsent).toBe(await port.render(request('web', absent)));
  });

  it('the server dry runs of a release that does not exist left nothing behind', async () => {
    expect(await releaseSecrets('web')).toEqual([]);
    expect(await client.status('web', ns.name)).toBeUndefined();
    expect(Object.keys(await configMaps()).sort()).toEqual(['kube-root-ca.crt', MARKER]); // no object, no hook
    expect(await clusterRoleExists(`${ns.name}-web-bootstrap`)).toBe(false);
    expect(client.running('web', ns.name)).toBe(false);
  });

  it('an existing release renders as its next revision, and stays exactly as it was', async () => {
    await client.install({ release: 'web', namespace: ns.name, chart: CHART, values: {} });
    const before = { secrets: await releaseSecrets('web'), configMaps: await configMaps() };
    expect(before.secrets).toEqual(['sh.helm.release.v1.web.v1']);
    expect(Object.keys(before.configMaps)).toEqual(expect.arrayContaining(['web-settings', 'web-pre-hook']));

    const server = await port.render(request('web', { dryRun: 'server' }));
    expect(server).toContain('revision: "2"\n  upgrade: "true"');
    expect(server).not.toMatch(CLUSTER_ROLE);
    expect(await port.render(request('web'))).toContain('revision: "1"\n  upgrade: "false"'); // helm template: always an install

    expect(await releaseSecrets('web')).toEqual(before.secrets);
    expect(await configMaps()).toEqual(before.configMaps); // same objects, same resourceVersions: no hook ran, nothing applied
    expect(await client.status('web', ns.name)).toMatchObject({ revision: 1, status: 'deployed' });
    await client.uninstall({ release: 'web', namespace: ns.name });
  });

  it("acts as the impersonated identity, for helm's release storage and for lookup()", async () => {
    // Enough for helm's storage, not for the marker: lookup() itself is refused.
    const deployer = await serviceAccount('deployer', [
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
    ]);
    // (Waited for: a new RoleBinding reaches the API server's authorizer within moments, not at once.)
    const lookupRefused = new RegExp(`configmaps "${MARKER}" is forbidden: User "${deployer}"`);
    await waitFor('the lookup refused, not the storage', async () =>
      lookupRefused.test((await helmRejection(port.render(request('app', { dryRun: 'server', impersonate: deployer })))).summary),
    );
    // The cluster refusing, not the chart failing: retried, so granting the access is enough.
    expect(await helmRejection(port.render(request('app', { dryRun: 'server', impersonate: deployer })))).toMatchObject({
      reason: 'KubernetesAPIError',
    });
    // The operator itself may read the marker, and the offline render never asks.
    expect(await port.render(request('app', { dryRun: 'server' }))).not.toMatch(CLUSTER_ROLE);
    expect(await port.render(request('app', { impersonate: deployer }))).toMatch(CLUSTER_ROLE);

    await rbac.createNamespacedRole({
      namespace: ns.name,
      body: { metadata: { name: 'configmap-reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] },
    });
    await bind('deployer', 'configmap-reader');
    const granted = await waitFor('the marker readable as deployer', () =>
      port.render(request('app', { dryRun: 'server', impersonate: deployer })),
    );
    expect(granted).not.toMatch(CLUSTER_ROLE);

    // No RBAC at all: helm cannot even read the release's history.
    const nobody = `system:serviceaccount:${ns.name}:nobody`;
    const forbidden = await helmRejection(port.render(request('app', { dryRun: 'server', impersonate: nobody })));
    expect(forbidden).toMatchObject({ reason: 'KubernetesAPIError', verb: 'dry-run' });
    expect(forbidden.summary).toMatch(new RegExp(`secrets is forbidden: User "${nobody}"`));
    expect(await releaseSecrets('app')).toEqual([]);
  });
});
