import { describe, expect, it } from 'vitest';
import { inventoryOf, parseManifest, renderedBody, type ManifestObject } from '../../../../src/reconciler/objects/inventory.js';

/** A manifest as `helm get manifest` prints it: `# Source:` comments, `---` separators. */
const HELM_MANIFEST = `---
# Source: nginx/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: web
  labels:
    app: web
---
# Source: nginx/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: other
spec:
  ports:
  - port: 80
---
# Source: nginx/templates/clusterrole.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: web-reader
---
# Source: nginx/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    helm.sh/resource-policy: keep
    example.com/replicas: 3
    example.com/nested: {a: b}
spec:
  replicas: 1
`;

const CLUSTER_SCOPED = new Set(['ClusterRole', 'ClusterRoleBinding', 'Namespace', 'CustomResourceDefinition']);
const resolver = (apiVersion: string, kind: string): Promise<boolean> => Promise.resolve(!CLUSTER_SCOPED.has(kind) && apiVersion !== '');

const names = (objects: readonly ManifestObject[]): string[] => objects.map((o) => `${o.kind}/${o.name}`);

describe('parseManifest', () => {
  it('reads every document of a multi-document manifest, in order', () => {
    const objects = parseManifest(HELM_MANIFEST);
    expect(names(objects)).toEqual(['ServiceAccount/web', 'Service/web', 'ClusterRole/web-reader', 'Deployment/web']);
  });

  it('keeps apiVersion, kind, name, namespace (only when set), string annotations and the whole body', () => {
    const [sa, svc, , deploy] = parseManifest(HELM_MANIFEST);
    expect(sa).toStrictEqual({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      name: 'web',
      annotations: {},
      json: JSON.stringify({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'web', labels: { app: 'web' } } }),
    });
    expect(svc?.namespace).toBe('other');
    expect(deploy?.annotations).toStrictEqual({ 'helm.sh/resource-policy': 'keep' });
    expect(renderedBody(deploy!)).toMatchObject({ spec: { replicas: 1 } });
  });

  it('hands out a fresh copy of the rendered object each time', () => {
    const [sa] = parseManifest(HELM_MANIFEST);
    const first = renderedBody(sa!);
    (first.metadata as Record<string, unknown>).name = 'changed';
    expect(renderedBody(sa!)).toStrictEqual({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'web', labels: { app: 'web' } },
    });
  });

  it('renders YAML-only values as the JSON the API server would receive', () => {
    // As sigs.k8s.io/yaml converts it (checked against it): the plain key `n` is YAML 1.1's false.
    const [cm] = parseManifest('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  ? k\n  : v\n  n: ~\n');
    expect(cm?.json).toBe('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v","false":null}}');
  });

  it('reads YAML 1.1 scalars as helm sent them: octal modes, yes/no booleans', () => {
    const manifest =
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  enableServiceLinks: no\n  volumes:\n  - name: s\n    secret:\n      defaultMode: 0400\n';
    const [pod] = parseManifest(manifest);
    expect(renderedBody(pod!)).toMatchObject({ spec: { enableServiceLinks: false, volumes: [{ secret: { defaultMode: 256 } }] } });
  });

  it.each([
    ['an empty string', ''],
    ['only whitespace', '  \n\n'],
    ['only separators', '---\n---\n---\n'],
    ['only comments', '# Source: x/templates/empty.yaml\n---\n# nothing here\n'],
    ['a null document', '---\nnull\n---\n~\n'],
  ])('yields nothing for %s', (_what, manifest) => {
    expect(parseManifest(manifest)).toEqual([]);
  });

  it('skips empty documents between objects (templates that rendered to nothing)', () => {
    const manifest = `---\n# Source: a.yaml\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n---\n# Source: b.yaml\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n`;
    expect(names(parseManifest(manifest))).toEqual(['ConfigMap/a', 'ConfigMap/b']);
  });

  it('reads a manifest without a leading separator or trailing newline', () => {
    expect(names(parseManifest('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a'))).toEqual(['ConfigMap/a']);
  });

  it('reads a document with more than 100 aliases, as helm does (issue 32: such an object was hidden from the inventory)', () => {
    const aliases = Array.from({ length: 120 }, (_, i) => `    a${i}: *v`).join('\n');
    const manifest = `apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: hidden\n  annotations:\n    anchor: &v "x"\n${aliases}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n`;
    const [crb, cm] = parseManifest(manifest);
    expect(names([crb!, cm!])).toEqual(['ClusterRoleBinding/hidden', 'ConfigMap/after']);
    expect(crb!.annotations.a119).toBe('x');
  });

  it('drops, in bounded time, a document whose aliases expand beyond what the API server could take (billion laughs)', () => {
    const levels = Array.from(
      { length: 9 },
      (_, i) => `  l${i + 1}: &l${i + 1} [${Array.from({ length: 10 }, () => `*l${i}`).join(', ')}]`,
    ).join('\n');
    const manifest = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\ndata:\n  l0: &l0 "lol"\n${levels}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n`;
    expect(names(parseManifest(manifest))).toEqual(['ConfigMap/after']);
  });

  it('reads flow-style (JSON) documents', () => {
    expect(names(parseManifest('{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}'))).toEqual(['Secret/s']);
  });

  it('expands v1 List into its items, keeping their namespaces', () => {
    const manifest = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: one
- apiVersion: v1
  kind: Secret
  metadata:
    name: two
    namespace: elsewhere
`;
    const objects = parseManifest(manifest);
    expect(names(objects)).toEqual(['ConfigMap/one', 'Secret/two']);
    expect(objects[1]?.namespace).toBe('elsewhere');
    expect(renderedBody(objects[0]!)).toStrictEqual({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one' } });
  });

  it('expands any *List kind, nested lists, and skips invalid items', () => {
    const manifest = `apiVersion: v1
kind: ConfigMapList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: a}
- apiVersion: v1
  kind: List
  items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
- {kind: ConfigMap, metadata: {name: no-api-version}}
- {apiVersion: v1, kind: ConfigMap, metadata: {}}
- just a string
- null
---
apiVersion: v1
kind: List
items: []
`;
    expect(names(parseManifest(manifest))).toEqual(['ConfigMap/a', 'ConfigMap/b']);
  });

  it('expands items of a kind that does not end in List, as helm applies them (issue 32)', () => {
    const manifest =
      'apiVersion: v1\nkind: Bundle\nitems:\n- {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: escalate}}\n';
    expect(names(parseManifest(manifest))).toEqual(['ClusterRoleBinding/escalate']);
    expect(names(parseManifest('apiVersion: v1\nkind: Bundle\nmetadata: {name: b}\nitems: {}\n'))).toEqual([]);
  });

  it('keeps a *List kind that has no items list as an object of its own', () => {
    const manifest = 'apiVersion: example.com/v1\nkind: AllowList\nmetadata:\n  name: ips\nspec:\n  items: [a]\n';
    expect(names(parseManifest(manifest))).toEqual(['AllowList/ips']);
  });

  it.each([
    ['no metadata', 'apiVersion: v1\nkind: ConfigMap\n'],
    ['no name', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: x\n'],
    ['an empty name', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ""\n'],
    ['a number for a name', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 42\n'],
    ['only generateName', 'apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: job-\n'],
    ['metadata that is not a map', 'apiVersion: v1\nkind: ConfigMap\nmetadata: web\n'],
    ['no kind', 'apiVersion: v1\nmetadata:\n  name: a\n'],
    ['no apiVersion', 'kind: ConfigMap\nmetadata:\n  name: a\n'],
    ['an empty kind', 'apiVersion: v1\nkind: ""\nmetadata:\n  name: a\n'],
    ['a scalar document', 'hello\n'],
    ['a list document', '- a\n- b\n'],
  ])('skips an object with %s', (_what, doc) => {
    const manifest = `${doc}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n`;
    expect(names(parseManifest(manifest))).toEqual(['ConfigMap/kept']);
  });

  it('treats an empty namespace as unset', () => {
    const [o] = parseManifest('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ""\n');
    expect(o).toBeDefined();
    expect(Object.keys(o!)).not.toContain('namespace');
  });

  it('ignores annotations that are not a map', () => {
    const [o] = parseManifest('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations: [x]\n');
    expect(o?.annotations).toStrictEqual({});
  });
});

describe('inventoryOf', () => {
  it('puts namespaced objects without a namespace into the release namespace', async () => {
    const entries = await inventoryOf(parseManifest(HELM_MANIFEST), 'demo', resolver);
    expect(entries).toStrictEqual([
      { apiVersion: 'v1', kind: 'ServiceAccount', namespace: 'demo', name: 'web' },
      { apiVersion: 'v1', kind: 'Service', namespace: 'other', name: 'web' },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', namespace: '', name: 'web-reader' },
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'demo', name: 'web' },
    ]);
  });

  it('keeps an explicit namespace on a namespaced object', async () => {
    const objects = parseManifest('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: explicit\n');
    expect(await inventoryOf(objects, 'demo', resolver)).toStrictEqual([
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'explicit', name: 'a' },
    ]);
  });

  it('drops a namespace written on a cluster-scoped object (the API server ignores it too)', async () => {
    const objects = parseManifest('apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  namespace: demo\n');
    expect(await inventoryOf(objects, 'demo', resolver)).toStrictEqual([
      { apiVersion: 'v1', kind: 'Namespace', namespace: '', name: 'team' },
    ]);
  });

  it('asks the resolver about each object by apiVersion and kind, in order', async () => {
    const asked: string[] = [];
    await inventoryOf(parseManifest(HELM_MANIFEST), 'demo', (apiVersion, kind) => {
      asked.push(`${apiVersion} ${kind}`);
      return Promise.resolve(true);
    });
    expect(asked).toEqual(['v1 ServiceAccount', 'v1 Service', 'rbac.authorization.k8s.io/v1 ClusterRole', 'apps/v1 Deployment']);
  });

  it('keeps the manifest order even when the resolver answers out of order', async () => {
    const objects = parseManifest(HELM_MANIFEST);
    const slowFirst = async (_apiVersion: string, kind: string): Promise<boolean> => {
      await new Promise((r) => setTimeout(r, kind === 'ServiceAccount' ? 20 : 0));
      return kind !== 'ClusterRole';
    };
    expect((await inventoryOf(objects, 'demo', slowFirst)).map((e) => e.kind)).toEqual([
      'ServiceAccount',
      'Service',
      'ClusterRole',
      'Deployment',
    ]);
  });

  it('carries no annotations or body: the inventory never holds rendered content', async () => {
    const objects = parseManifest(
      'apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  annotations: {a: b}\nstringData:\n  password: s3cret\n',
    );
    const entries = await inventoryOf(objects, 'demo', resolver);
    expect(JSON.stringify(entries)).not.toContain('s3cret');
    expect(Object.keys(entries[0]!).sort()).toEqual(['apiVersion', 'kind', 'name', 'namespace']);
  });

  it('is empty for no objects', async () => {
    expect(await inventoryOf([], 'demo', resolver)).toEqual([]);
  });

  it('passes a resolver failure on', async () => {
    const objects = parseManifest('apiVersion: example.com/v1\nkind: Unknown\nmetadata:\n  name: a\n');
    await expect(inventoryOf(objects, 'demo', () => Promise.reject(new Error('no mapping for example.com/v1 Unknown')))).rejects.toThrow(
      'no mapping',
    );
  });
});
