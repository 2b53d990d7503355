import { describe, expect, it } from 'vitest';
import { readHelmYamlStream } from '../../../../src/config/helm-yaml.js';
import { CHART_LABEL, PRIMARY_RESOURCE, PRIMARY_RESOURCE_TYPE, type Owner } from '../../../../src/reconciler/objects/ownership.js';
import { stampOwnership, type StampContext } from '../../../../src/reconciler/objects/render-ownership.js';

const owner: Owner = {
  apiVersion: 'example.com/v1alpha1',
  kind: 'Nginx',
  group: 'example.com',
  namespace: 'demo',
  name: 'web',
  uid: 'uid-1',
};
const ref = { apiVersion: 'example.com/v1alpha1', kind: 'Nginx', name: 'web', uid: 'uid-1', controller: true, blockOwnerDeletion: true };
const CLUSTER_KINDS = new Set(['ClusterRole', 'Namespace']);
const ctx: StampContext = {
  owner,
  chartName: 'nginx',
  namespace: 'demo',
  isNamespaced: (_apiVersion, kind) =>
    kind === 'Unserved' ? Promise.reject(new Error('not served')) : Promise.resolve(!CLUSTER_KINDS.has(kind)),
};

const docs = async (manifest: string): Promise<unknown[]> => readHelmYamlStream(await stampOwnership(manifest, ctx));
const meta = (doc: unknown): Record<string, unknown> => (doc as { metadata: Record<string, unknown> }).metadata;

describe('stampOwnership', () => {
  it('gives a namespaced object the chart label and a controller owner reference, keeping its own labels', async () => {
    const [cm] = await docs(
      '# Source: nginx/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  labels: {app: web}\ndata:\n  mode: "0400"\n',
    );
    expect(meta(cm)).toEqual({ name: 'web', labels: { app: 'web', [CHART_LABEL]: 'nginx' }, ownerReferences: [ref] });
    expect((cm as { data: unknown }).data).toEqual({ mode: '0400' });
  });

  it('keeps the Source comment for helm get manifest', async () => {
    const out = await stampOwnership('# Source: nginx/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n', ctx);
    expect(out.startsWith('# Source: nginx/templates/cm.yaml\n{')).toBe(true);
  });

  it('reads values as helm does (YAML 1.1) before writing them as JSON', async () => {
    const [secret] = await docs('apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nspec:\n  defaultMode: 0400\n  on: yes\n');
    expect((secret as { spec: unknown }).spec).toEqual({ defaultMode: 256, true: true });
  });

  it('uses the owner annotations for cluster-scoped objects, other namespaces and kept objects', async () => {
    const annotations = { [PRIMARY_RESOURCE]: 'demo/web', [PRIMARY_RESOURCE_TYPE]: 'Nginx.example.com' };
    const stamped = await docs(
      [
        'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\n',
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: elsewhere, namespace: other}\n',
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept, annotations: {helm.sh/resource-policy: keep}}\n',
      ].join('---\n'),
    );
    expect(stamped.map(meta)).toEqual([
      { name: 'reader', labels: { [CHART_LABEL]: 'nginx' }, annotations },
      { name: 'elsewhere', namespace: 'other', labels: { [CHART_LABEL]: 'nginx' }, annotations },
      { name: 'kept', labels: { [CHART_LABEL]: 'nginx' }, annotations: { 'helm.sh/resource-policy': 'keep', ...annotations } },
    ]);
  });

  it('leaves byte for byte what it cannot stamp safely: lists, own owner references, odd metadata, unserved kinds, unreadable YAML', async () => {
    const untouched = [
      'apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n',
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  ownerReferences: [{apiVersion: v1, kind: X, name: x, uid: u}]\n',
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: {n: 1}\n',
      'apiVersion: example.com/v1\nkind: Unserved\nmetadata: {name: d}\n',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [e\n',
      '# only a comment\n',
      '',
    ];
    for (const doc of untouched) expect(await stampOwnership(doc, ctx)).toBe(doc);
  });

  it('keeps every document, in order, separated where helm cuts the stream', async () => {
    const manifest =
      '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems: []\n---   \napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n';
    const stamped = await docs(manifest);
    expect(
      stamped.map((d) => (d === null ? null : ((meta(d) as { name?: string } | undefined)?.name ?? (d as { kind: string }).kind))),
    ).toEqual([null, 'a', 'List', 'b']);
  });
});
