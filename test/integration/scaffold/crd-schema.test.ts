/**
 * The generated schemas against the real API server: the CRD is accepted (structural, defaults
 * valid), a CR violating the chart's schema is rejected naming the field, defaults are applied,
 * unknown fields under open objects are kept, and the typed status accepts what the operator writes.
 */
import { readFileSync } from 'node:fs';
import {
  ApiException,
  ApiextensionsV1Api,
  CustomObjectsApi,
  PatchStrategy,
  loadYaml,
  setHeaderOptions,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { specSchemaFromValues, specSchemaFromValuesSchema, statusSchema, type OpenApiSchema } from '../../../src/scaffold/crd-schema.js';
import { createNamespace, testKubeConfig, uniqueName, waitFor } from '../../support/kube.js';

const chartFile = (name: string): string => readFileSync(new URL(`../../../helm-charts/nginx/${name}`, import.meta.url), 'utf8');

const fixtureSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  definitions: {
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    node: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/definitions/node' } } } },
  },
  properties: {
    replicaCount: { type: 'integer', minimum: 1, default: 1 },
    mode: { type: 'string', enum: ['standalone', 'replication'], default: 'standalone' },
    service: { type: 'object', properties: { port: { $ref: '#/definitions/port', default: 8080 }, type: { type: 'string' } } },
    tree: { $ref: '#/definitions/node' },
    anything: { oneOf: [{ type: 'string' }, { type: 'object' }] },
    intOrString: { type: ['integer', 'string'] },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
  },
};

function crd(group: string, plural: string, kind: string, spec: OpenApiSchema): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object', properties: { spec, status: statusSchema() } } },
        },
      ],
    },
  };
}

describe('generated CRD schemas on the API server', () => {
  let kc: KubeConfig;
  let custom: CustomObjectsApi;
  let ext: ApiextensionsV1Api;
  let ns: { name: string; remove: () => Promise<void> };
  const group = `${uniqueName('schema')}.example.com`;
  const crdNames: string[] = [];

  async function install(plural: string, kind: string, spec: OpenApiSchema): Promise<void> {
    // Through YAML, as a user applies the generated file: client-node's models name the
    // x-kubernetes-* extensions x_kubernetes_*, and silently drop the JSON spelling.
    const body = loadYaml<V1CustomResourceDefinition>(stringify(crd(group, plural, kind, spec)));
    await ext.createCustomResourceDefinition({ body });
    crdNames.push(`${plural}.${group}`);
    await waitFor(`CRD ${plural} established`, async () => {
      const got = await ext.readCustomResourceDefinition({ name: `${plural}.${group}` });
      const nonStructural = got.status?.conditions?.find((c) => c.type === 'NonStructuralSchema' && c.status === 'True');
      if (nonStructural !== undefined) throw new Error(`non-structural: ${nonStructural.message ?? ''}`);
      return got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
    });
    // Established can precede the discovery and storage set-up of the new resource by a moment.
    await waitFor(`${plural} served`, async () => {
      await custom.listNamespacedCustomObject({ group, version: 'v1alpha1', namespace: ns.name, plural });
      return true;
    });
  }

  const create = (plural: string, kind: string, name: string, spec: unknown) =>
    custom.createNamespacedCustomObject({
      group,
      version: 'v1alpha1',
      namespace: ns.name,
      plural,
      body: { apiVersion: `${group}/v1alpha1`, kind, metadata: { name }, spec },
    }) as Promise<{ spec: Record<string, unknown> }>;

  async function rejection(promise: Promise<unknown>): Promise<string> {
    try {
      await promise;
    } catch (err) {
      if (err instanceof ApiException) return String(err.body);
      throw err;
    }
    throw new Error('the API server accepted it');
  }

  beforeAll(async () => {
    kc = testKubeConfig();
    custom = kc.makeApiClient(CustomObjectsApi);
    ext = kc.makeApiClient(ApiextensionsV1Api);
    ns = await createNamespace(kc, 'crd-schema');
  });

  afterAll(async () => {
    await ns.remove();
    for (const name of crdNames) await ext.deleteCustomResourceDefinition({ name }).catch(() => undefined);
  });

  it("accepts the sample chart's schema, rejects a violation naming the field, keeps open objects open", async () => {
    const { schema } = specSchemaFromValuesSchema(JSON.parse(chartFile('values.schema.json')), { values: parse(chartFile('values.yaml')) });
    await install('nginxes', 'Nginx', schema);
    const ok = await create('nginxes', 'Nginx', 'ok', {
      ...(parse(chartFile('values.yaml')) as object),
      global: { anything: { goes: 1 } },
    });
    expect(ok.spec.global).toEqual({ anything: { goes: 1 } });
    const body = await rejection(create('nginxes', 'Nginx', 'bad', { image: { pullPolicy: 'Sometimes' }, replicaCount: 1000 }));
    expect(body).toContain('spec.image.pullPolicy');
    expect(body).toContain('spec.replicaCount');
    // A null deletes the chart's value in helm: it must reach helm rather than be pruned.
    const nulls = await create('nginxes', 'Nginx', 'nulls', { image: { repository: 'nginx', tag: null } });
    expect(nulls.spec.image).toEqual({ repository: 'nginx', tag: null });
  });

  it('applies defaults, follows $refs and cycles, and accepts int-or-string and open unions', async () => {
    const { schema } = specSchemaFromValuesSchema(fixtureSchema, { values: {} });
    await install('fixtures', 'Fixture', schema);
    const cr = await create('fixtures', 'Fixture', 'defaults', {
      service: {},
      tree: { name: 'a', children: [{ name: 'b', children: [{ name: 'c', extra: true }] }] },
      anything: { free: 'form' },
      intOrString: 'ten',
      labels: { 'app.kubernetes.io/name': 'x' },
    });
    expect(cr.spec).toMatchObject({ replicaCount: 1, mode: 'standalone', service: { port: 8080 }, anything: { free: 'form' } });
    expect(cr.spec.tree).toEqual({ name: 'a', children: [{ name: 'b', children: [{ name: 'c', extra: true }] }] });
    const body = await rejection(create('fixtures', 'Fixture', 'bad', { service: { port: 70000 }, intOrString: 1.5, labels: { a: 1 } }));
    expect(body).toContain('spec.service.port');
    expect(body).toContain('spec.intOrString');
    expect(body).toContain('spec.labels.a');
  });

  it('accepts a schema inferred from values.yaml, and the status the operator writes', async () => {
    const { schema } = specSchemaFromValues(parse(chartFile('values.yaml')));
    await install('inferreds', 'Inferred', schema);
    const values = parse(chartFile('values.yaml')) as Record<string, unknown>;
    await create('inferreds', 'Inferred', 'sample', {
      ...values,
      notInValues: { a: [1, 'b'] },
      nodeSelector: { 'kubernetes.io/os': 'linux' },
    });
    const status = {
      observedGeneration: 1,
      conditions: [
        { type: 'Deployed', status: 'True', reason: 'InstallSuccessful', message: 'notes', lastTransitionTime: new Date().toISOString() },
      ],
      deployedRelease: { name: 'sample', namespace: ns.name, revision: 1, chart: 'nginx', chartVersion: '0.1.0', appVersion: '1.27.3' },
      inventory: [{ apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns.name, name: 'sample-nginx' }],
      failedAttempts: { fingerprint: 'abc', count: 2 },
      futureField: { kept: true },
    };
    const patched = (await custom.patchNamespacedCustomObjectStatus(
      { group, version: 'v1alpha1', namespace: ns.name, plural: 'inferreds', name: 'sample', body: { status } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as { status: unknown };
    expect(patched.status).toEqual(status);
  });
});
