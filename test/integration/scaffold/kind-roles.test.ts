/**
 * Issue 47: the editor and viewer ClusterRoles `create api` writes for a kind, as a scaffolded
 * project's `kubectl kustomize config/default` deploys them, on the real control plane. They
 * aggregate into the built-in `edit`/`admin` and `view` (the aggregation controller adds them), so
 * a namespace's RoleBinding to those roles covers the kind: under impersonation, an `edit` user
 * creates and changes the CRs but may not write their status (where a held plan's digest is kept,
 * docs/plans.md), a `view` user reads them (and the plan ConfigMap beside them) but creates nothing.
 */
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type V1CustomResourceDefinition,
  type V1ClusterRole,
} from '@kubernetes/client-node';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { isStatus } from '../../../src/k8s/errors.js';
import { runCreateApi } from '../../../src/scaffold/commands.js';
import { kubectl } from '../../support/deploy.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { fixtureChart } from '../../support/operator.js';
import { initFilesOnly } from '../../support/scaffold.js';

const PROJECT = 'kindroles';
const GROUP = 'kindroles.example.com';
const PLURAL = 'books';
const VERSION = 'v1alpha1';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const forbidden = (err: unknown): boolean => isStatus(err, 403);

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  rules?: V1ClusterRole['rules'];
}

describe("create api's editor and viewer roles, aggregated into edit and view, on a real API server", () => {
  const kc = testKubeConfig();
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  let root = '';
  let ns: Awaited<ReturnType<typeof createNamespace>> = { name: '', remove: () => Promise.resolve() };
  let roles: Obj[] = [];

  /** The test's kubeconfig acting as `user` (impersonation). */
  const actingAs = (user: string): KubeConfig => {
    const k = new KubeConfig();
    k.loadFromOptions({
      clusters: kc.clusters,
      contexts: kc.contexts,
      currentContext: kc.currentContext,
      users: kc.users.map((u) => ({ ...u, impersonateUser: user })),
    });
    return k;
  };
  const as = (user: string): CustomObjectsApi => actingAs(user).makeApiClient(CustomObjectsApi);
  const book = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'Book',
    metadata: { name },
    spec,
  });
  const all = () => ({ group: GROUP, version: VERSION, plural: PLURAL, namespace: ns.name });
  const at = (name: string) => ({ ...all(), name });
  const bind = (user: string, role: 'edit' | 'view') =>
    rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: `${user}-${role}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
      },
    });

  beforeAll(async () => {
    root = await initFilesOnly(PROJECT);
    await runCreateApi({
      root,
      helmBinary: inject('helmBin'),
      force: false,
      dryRun: false,
      group: 'kindroles',
      version: VERSION,
      kind: 'Book',
      helmChart: fixtureChart('scaffold-web'),
    });
    const objects = parseAllDocuments(await kubectl('kustomize', path.join(root, 'config/default')))
      .map((d) => d.toJS() as Obj | null)
      .filter((o): o is Obj => o !== null);
    // Only the kind's CRD and its two roles: the operator itself does not run here.
    const crd = objects.find((o) => o.kind === 'CustomResourceDefinition');
    roles = objects.filter((o) => o.kind === 'ClusterRole' && /-(editor|viewer)-role$/.test(o.metadata.name));
    if (crd === undefined) throw new Error('config/default renders no CRD');
    await ext.createCustomResourceDefinition({ body: crd as V1CustomResourceDefinition });
    await waitFor('the CRD to be established', async () => {
      const got = await ext.readCustomResourceDefinition({ name: `${PLURAL}.${GROUP}` });
      return got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true;
    });
    for (const role of roles) await rbac.createClusterRole({ body: role });
    ns = await createNamespace(kc, 'kindroles');
  });

  afterAll(async () => {
    await ns.remove();
    for (const role of roles) await rbac.deleteClusterRole({ name: role.metadata.name }).catch(() => undefined);
    await ext.deleteCustomResourceDefinition({ name: `${PLURAL}.${GROUP}` }).catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  });

  it('deploys the editor aggregated to edit and admin and the viewer to view, under the project prefix', () => {
    expect(
      roles.map((r) => [
        r.metadata.name,
        Object.keys(r.metadata.labels ?? {})
          .filter((l) => l.startsWith('rbac.'))
          .sort(),
      ]),
    ).toStrictEqual([
      [
        `${PROJECT}-kindroles-book-editor-role`,
        ['rbac.authorization.k8s.io/aggregate-to-admin', 'rbac.authorization.k8s.io/aggregate-to-edit'],
      ],
      [`${PROJECT}-kindroles-book-viewer-role`, ['rbac.authorization.k8s.io/aggregate-to-view']],
    ]);
  });

  it('lets a user bound to edit create and change the CRs, but not write their status', { timeout: 180_000 }, async () => {
    const editor = `kindroles-editor-${ns.name}`;
    await bind(editor, 'edit');
    const api = as(editor);
    // The aggregation controller adds the kind to `edit` a moment after the ClusterRole appears.
    await waitFor(
      'the editor to create a Book',
      () => api.createNamespacedCustomObject({ ...all(), body: book('a', {}) }).then(() => true),
      { timeoutMs: 120_000 },
    );
    await api.patchNamespacedCustomObject({ ...at('a'), body: { spec: { greeting: 'changed' } } }, mergePatch);
    const changed = (await api.getNamespacedCustomObject(at('a'))) as { spec: { greeting?: string } };
    expect(changed.spec.greeting).toBe('changed');
    await expect(
      api.patchNamespacedCustomObjectStatus({ ...at('a'), body: { status: { plan: { digest: 'sha256:forged' } } } }, mergePatch),
    ).rejects.toSatisfy(forbidden);
    // ... which the operator's own credentials (here the test's) may.
    await kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObjectStatus(at('a'));
    await api.deleteNamespacedCustomObject(at('a'));
  });

  it(
    'lets a user bound to view read the CRs, their status and the plan ConfigMap beside them, but create and change nothing',
    { timeout: 180_000 },
    async () => {
      await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({ ...all(), body: book('b', {}) });
      await core.createNamespacedConfigMap({
        namespace: ns.name,
        body: { metadata: { name: 'plan.book.b' }, data: { 'plan.json': '{}' } },
      });
      const viewer = `kindroles-viewer-${ns.name}`;
      await bind(viewer, 'view');
      const api = as(viewer);
      await waitFor('the viewer to read a Book', () => api.getNamespacedCustomObject(at('b')).then(() => true), { timeoutMs: 120_000 });
      const list = (await api.listNamespacedCustomObject(all())) as { items: unknown[] };
      expect(list.items).toHaveLength(1);
      await api.getNamespacedCustomObjectStatus(at('b'));
      await expect(api.createNamespacedCustomObject({ ...all(), body: book('c', {}) })).rejects.toSatisfy(forbidden);
      await expect(api.patchNamespacedCustomObject({ ...at('b'), body: { spec: { greeting: 'no' } } }, mergePatch)).rejects.toSatisfy(
        forbidden,
      );
      await expect(api.deleteNamespacedCustomObject(at('b'))).rejects.toSatisfy(forbidden);
      // The plan ConfigMap is read through the same built-in role (docs/adr/0092); the kind's roles add no ConfigMap.
      expect(
        (await actingAs(viewer).makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: ns.name, name: 'plan.book.b' })).data,
      ).toStrictEqual({ 'plan.json': '{}' });
      expect(roles.flatMap((r) => r.rules ?? []).flatMap((rule) => rule.resources ?? [])).not.toContain('configmaps');
    },
  );

  it('gives nothing to a user bound to neither', async () => {
    await expect(as(`kindroles-outsider-${ns.name}`).listNamespacedCustomObject(all())).rejects.toSatisfy(forbidden);
  });
});
