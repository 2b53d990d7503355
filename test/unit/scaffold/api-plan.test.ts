import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { apiPlan } from '../../../src/scaffold/api-plan.js';
import { objectsOfManifest, resolveKinds } from '../../../src/scaffold/chart-kinds.js';
import { builtinResourceInfo } from '../../../src/scaffold/rbac.js';
import { apiNames } from '../../../src/scaffold/names.js';
import { upsertFramedAtMarker, type CreateOp, type InsertOp, type Plan } from '../../../src/machinery/index.js';

const names = apiNames({ group: 'cache', version: 'v1alpha1', kind: 'Memcached' }, 'example.com');
const inputs: Parameters<typeof apiPlan>[0] = {
  names,
  projectName: 'demo',
  listKindRoles: true,
  chartName: 'memcached',
  chartFiles: [
    { path: 'Chart.yaml', data: Buffer.from('name: memcached\n') },
    { path: 'charts/dep-1.0.0.tgz', data: Buffer.from([31, 139, 0]) },
  ],
  crd: {
    spec: { type: 'object', properties: { replicas: { type: 'integer', default: 1 } } },
    status: { type: 'object' },
    schemaSource: 'test',
    warnings: ['spec.x: dropped'],
    shortNames: ['mc'],
  },
  sample: 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\n',
  rbac: {
    rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'create'] }],
    unresolved: ['example.io/v1 Widget'],
    provenance: 'its default values',
  },
};
const plan = apiPlan(inputs);
const op = (p: string) => plan.find((o) => o.path === p && o.op === 'create') as CreateOp;
const inserts = plan.filter((o): o is InsertOp => o.op === 'insert');

describe('apiPlan', () => {
  it('saves the chart under helm-charts/<name>, binary files included', () => {
    expect(op('helm-charts/memcached/charts/dep-1.0.0.tgz').body).toEqual(Buffer.from([31, 139, 0]));
  });

  it('writes a CRD with the schema, status subresource, printer columns and short names', () => {
    const text = String(op('config/crd/bases/cache.example.com_memcacheds.yaml').body);
    expect(text).toMatch(/^# warning: spec\.x: dropped$/m);
    const crd = parseAllDocuments(text)[0]!.toJS() as {
      metadata: { name: string };
      spec: {
        names: { shortNames: string[] };
        scope: string;
        versions: {
          additionalPrinterColumns: { name: string }[];
          subresources: object;
          schema: { openAPIV3Schema: { properties: { spec: { properties: object } } } };
        }[];
      };
    };
    expect(crd.metadata.name).toBe('memcacheds.cache.example.com');
    expect(crd.spec.names.shortNames).toEqual(['mc']);
    expect(crd.spec.scope).toBe('Namespaced');
    const v = crd.spec.versions[0]!;
    expect(v.additionalPrinterColumns.map((c) => c.name)).toEqual(['Ready', 'Reason', 'Deployed', 'Revision', 'Chart', 'Age', 'Message']);
    expect(v.subresources).toEqual({ status: {} });
    expect(v.schema.openAPIV3Schema.properties.spec.properties).toEqual({ replicas: { type: 'integer', default: 1 } });
  });

  it('adds the watch, kustomization entries, PROJECT resource and RBAC rules at their markers', () => {
    expect(inserts.map((i) => `${i.path}@${i.marker}`)).toEqual([
      'watches.yaml@watch',
      'config/crd/kustomization.yaml@crdkustomizeresource',
      'config/samples/kustomization.yaml@manifestskustomizesamples',
      'config/rbac/kustomization.yaml@rbackustomizeroles',
      'config/rbac/role.yaml@rules',
      'PROJECT@resources',
    ]);
    const rbac = inserts.find((i) => i.marker === 'rules')!.fragment;
    expect(rbac).toContain('- apiGroups: ["cache.example.com"]\n  resources: ["memcacheds/finalizers"]\n  verbs: ["update"]');
    expect(rbac).toContain('- apiGroups: ["apps"]\n  resources: ["deployments"]\n  verbs: ["get", "create"]');
    expect(rbac).toContain('# Not resolved to a resource (add their rules by hand): example.io/v1 Widget');
    expect(rbac).not.toContain('*');
  });

  it("regenerates the kind's RBAC section in place when the chart's rules change (create api --force)", () => {
    const rbacOf = (verbs: string[]) =>
      apiPlan({ ...inputs, rbac: { ...inputs.rbac, rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs }] } }).find(
        (o): o is InsertOp => o.op === 'insert' && o.marker === 'rules',
      )!;
    const role = 'rules:\n# +kubebuilder:scaffold:rules\n';
    const first = rbacOf(['get']);
    const second = rbacOf(['get', 'create']);
    expect(first.framed).toBe(true);
    const once = upsertFramedAtMarker(role, 'role.yaml', 'rules', first.fragment);
    const twice = upsertFramedAtMarker(once, 'role.yaml', 'rules', second.fragment);
    expect(twice.match(/# --- Memcached/g)).toHaveLength(1);
    expect(twice).toContain('verbs: ["get", "create"]');
    expect(twice).not.toContain('verbs: ["get"]\n');
  });
});

describe("the kind's editor and viewer roles", () => {
  interface Role {
    kind: string;
    metadata: { name: string; labels: Record<string, string> };
    rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  }
  const role = (file: string): Role => parseAllDocuments(String(op(`config/rbac/${file}`).body))[0]!.toJS() as Role;
  const granted = (r: Role, resource: string): string[] =>
    r.rules.filter((x) => x.apiGroups.includes('cache.example.com') && x.resources.includes(resource)).flatMap((x) => x.verbs);

  it('writes <group>_<kind>_editor_role.yaml: every verb on the CRs, aggregated into edit and admin', () => {
    const editor = role('cache_memcached_editor_role.yaml');
    expect(editor.kind).toBe('ClusterRole');
    expect(editor.metadata.name).toBe('cache-memcached-editor-role');
    expect(editor.metadata.labels).toStrictEqual({
      'app.kubernetes.io/name': 'demo',
      'app.kubernetes.io/managed-by': 'kustomize',
      'rbac.authorization.k8s.io/aggregate-to-edit': 'true',
      'rbac.authorization.k8s.io/aggregate-to-admin': 'true',
    });
    expect(granted(editor, 'memcacheds').sort()).toStrictEqual(['create', 'delete', 'get', 'list', 'patch', 'update', 'watch']);
  });

  it('writes <group>_<kind>_viewer_role.yaml: get, list, watch, aggregated into view', () => {
    const viewer = role('cache_memcached_viewer_role.yaml');
    expect(viewer.metadata.name).toBe('cache-memcached-viewer-role');
    expect(viewer.metadata.labels['rbac.authorization.k8s.io/aggregate-to-view']).toBe('true');
    expect(Object.keys(viewer.metadata.labels).filter((l) => l.startsWith('rbac.'))).toStrictEqual([
      'rbac.authorization.k8s.io/aggregate-to-view',
    ]);
    expect(granted(viewer, 'memcacheds')).toStrictEqual(['get', 'list', 'watch']);
  });

  it('lets neither write status (the held plan digest is kept there), nor reach finalizers or any other resource', () => {
    for (const file of ['cache_memcached_editor_role.yaml', 'cache_memcached_viewer_role.yaml']) {
      const r = role(file);
      expect(granted(r, 'memcacheds/status'), file).toStrictEqual(['get']);
      expect(r.rules.flatMap((x) => x.resources).sort(), file).toStrictEqual(['memcacheds', 'memcacheds/status']);
      expect(
        r.rules.flatMap((x) => x.apiGroups),
        file,
      ).toStrictEqual(['cache.example.com', 'cache.example.com']);
    }
  });

  it('lists both in config/rbac/kustomization.yaml at its marker, or, in a project without the marker, writes them unlisted', () => {
    const listed = inserts.find((i) => i.marker === 'rbackustomizeroles')!;
    expect(listed.fragment).toBe('- cache_memcached_editor_role.yaml\n- cache_memcached_viewer_role.yaml\n');
    const unlisted = apiPlan({ ...inputs, listKindRoles: false });
    expect(unlisted.filter((o) => o.path === 'config/rbac/kustomization.yaml')).toStrictEqual([]);
    expect(unlisted.map((o) => o.path)).toContain('config/rbac/cache_memcached_editor_role.yaml');
  });

  it('names the files without the version (RBAC has none) and without a group when the group is empty', () => {
    const v1 = apiPlan({ ...inputs, names: apiNames({ group: 'cache', version: 'v1', kind: 'Memcached' }, 'example.com') });
    const body = (p: Plan, file: string): string => String((p.find((o) => o.path === file) as CreateOp).body);
    expect(body(v1, 'config/rbac/cache_memcached_editor_role.yaml')).toBe(body(plan, 'config/rbac/cache_memcached_editor_role.yaml'));
    const bare = apiPlan({ ...inputs, names: apiNames({ group: '', version: 'v1', kind: 'Memcached' }, 'example.com') });
    expect(bare.map((o) => o.path)).toEqual(
      expect.arrayContaining(['config/rbac/memcached_editor_role.yaml', 'config/rbac/memcached_viewer_role.yaml']),
    );
  });
});

describe('RBAC for kinds only other values render', () => {
  const ingress = { apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: ['get', 'list'] };
  const fragment = (grant: boolean): string =>
    apiPlan({
      ...inputs,
      rbac: {
        ...inputs.rbac,
        optional: [{ when: 'ingress.enabled=true', rules: [ingress], unresolved: [] }],
        grantOptional: grant,
        unrenderable: ['tls.enabled'],
      },
    }).find((o): o is InsertOp => o.op === 'insert' && o.marker === 'rules')!.fragment;

  it('writes them as commented rules naming the value that switches each on', () => {
    const text = fragment(false);
    expect(text).toContain(
      '# with ingress.enabled=true:\n# - apiGroups: ["networking.k8s.io"]\n#   resources: ["ingresses"]\n#   verbs: ["get", "list"]\n',
    );
    expect(text).toContain('create api --rbac=all-values grants them all');
    expect(text).toContain('# not rendered alone (needs other values too), so what it adds is unknown: tls.enabled=true');
    // Commented out: not a rule of the role.
    const role = parseAllDocuments(`rules:\n${text}`)[0]!.toJS() as { rules: { resources: string[] }[] };
    expect(role.rules.flatMap((r) => r.resources)).not.toContain('ingresses');
  });

  it('grants them with --rbac=all-values, still naming the value', () => {
    const text = fragment(true);
    expect(text).toContain('# with ingress.enabled=true:\n- apiGroups: ["networking.k8s.io"]\n  resources: ["ingresses"]\n');
    const role = parseAllDocuments(`rules:\n${text}`)[0]!.toJS() as { rules: { resources: string[] }[] };
    expect(role.rules.flatMap((r) => r.resources)).toContain('ingresses');
  });
});

describe('objectsOfManifest', () => {
  it('lists the objects of a rendered stream, unpacking Lists and skipping empty documents', () => {
    const manifest =
      '---\n# Source: x\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {namespace: other}\n';
    expect(objectsOfManifest(manifest)).toEqual([
      { apiVersion: 'v1', kind: 'ConfigMap' },
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'other' },
    ]);
  });
});

describe('resolveKinds without a cluster', () => {
  it("maps built-in kinds and the chart's own CRD kinds the same way a cluster would, and names what is left", async () => {
    const manifest = [
      'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.io}\nspec: {group: example.io, scope: Cluster, names: {kind: Widget, plural: widgets}}',
      'apiVersion: example.io/v1\nkind: Widget\nmetadata: {name: w}',
      'apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: m}',
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}',
    ].join('\n---\n');
    const objects = objectsOfManifest(manifest);
    expect(objects[0]?.defines).toEqual({ group: 'example.io', kind: 'Widget', resource: 'widgets', namespaced: false });
    const kinds = await resolveKinds(objects, undefined, builtinResourceInfo);
    expect(kinds.resolve('example.io/v1', 'Widget')).toEqual({ group: 'example.io', resource: 'widgets', namespaced: false });
    expect(kinds.resolve('apps/v1', 'Deployment')).toEqual({ group: 'apps', resource: 'deployments', namespaced: true });
    expect(kinds.resolve('monitoring.coreos.com/v1', 'ServiceMonitor')).toBeUndefined();
    expect(kinds.via).toBe("the built-in table of Kubernetes kinds and the chart's CRDs (no cluster to ask about the others)");
  });
});
