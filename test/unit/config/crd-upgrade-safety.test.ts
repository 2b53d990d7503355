import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { readHelmYaml } from '../../../src/config/helm-yaml.js';
import { specSchemaFromValuesSchema, statusSchema, type OpenApiSchema } from '../../../src/scaffold/crd-schema.js';
import { crdUpgradeSafety, formatUnsafeChanges, schemaUpgradeSafety, type UnsafeChange } from '../../../src/config/crd-upgrade-safety.js';
import { apiNames } from '../../../src/scaffold/names.js';
import { crd } from '../../../src/scaffold/templates/api.js';

const obj = (properties: Record<string, OpenApiSchema>, extra: OpenApiSchema = {}): OpenApiSchema => ({
  type: 'object',
  properties,
  ...extra,
});
const changes = (old: OpenApiSchema, next: OpenApiSchema): string[] =>
  schemaUpgradeSafety(old, next).map((c) => `${c.path} ${c.check}: ${c.message}`);

describe('schemaUpgradeSafety: the OLM v1 checks on one schema', () => {
  it('passes what cannot break an object: equal schemas, descriptions, new optional fields, wider enums and bounds, dropped required', () => {
    const old = obj(
      { mode: { type: 'string', enum: ['a', 'b'] }, n: { type: 'integer', minimum: 2, maximum: 5 }, s: { type: 'string', pattern: '^x' } },
      { required: ['mode'] },
    );
    expect(changes(old, old)).toEqual([]);
    const next = obj(
      {
        mode: { type: 'string', enum: ['a', 'b', 'c'], description: 'now documented' },
        n: { type: 'integer', minimum: 1, maximum: 9 },
        s: { type: 'string' },
        added: { type: 'string' },
      },
      { description: 'the spec' },
    );
    expect(changes(old, next)).toEqual([]);
  });

  it('refuses a removed field, at its path only (not its children)', () => {
    const old = obj({ keep: { type: 'string' }, gone: obj({ a: { type: 'string' }, b: { type: 'string' } }) });
    expect(changes(old, obj({ keep: { type: 'string' } }))).toEqual(['.gone NoExistingFieldRemoved: removed']);
  });

  it('refuses a type change, int-or-string and untyped counted as types', () => {
    expect(changes(obj({ port: { type: 'integer' } }), obj({ port: { type: 'string' } }))).toEqual([
      '.port Type: type changed from integer to string',
    ]);
    expect(changes(obj({ port: { 'x-kubernetes-int-or-string': true } }), obj({ port: { type: 'integer' } }))).toEqual([
      '.port Type: type changed from int-or-string to integer',
    ]);
  });

  it('refuses enum values removed and an enum added where there was none', () => {
    expect(changes(obj({ m: { type: 'string', enum: ['a', 'b'] } }), obj({ m: { type: 'string', enum: ['b'] } }))).toEqual([
      '.m Enum: enum values ["a"] removed',
    ]);
    expect(changes(obj({ m: { type: 'string' } }), obj({ m: { type: 'string', enum: ['b'] } }))).toEqual([
      '.m Enum: enum ["b"] added where any value was allowed',
    ]);
  });

  it('refuses a new required field without a default, at the field; one with a default passes', () => {
    const old = { type: 'array', items: obj({ name: { type: 'string' }, team: { type: 'string' } }) } satisfies OpenApiSchema;
    const next = {
      type: 'array',
      items: obj({ name: { type: 'string' }, team: { type: 'string', default: 'ops' } }, { required: ['name', 'team'] }),
    } satisfies OpenApiSchema;
    expect(changes(obj({ users: old }), obj({ users: next }))).toEqual([
      '.users[*].name Required: now required, without a default',
      '.users[*].team Default: default "ops" added',
    ]);
  });

  it('refuses defaults added, changed or removed (the API server applies them to stored objects)', () => {
    const at = (d?: number): OpenApiSchema => obj({ n: { type: 'integer', ...(d === undefined ? {} : { default: d }) } });
    expect(changes(at(), at(1))).toEqual(['.n Default: default 1 added']);
    expect(changes(at(1), at(2))).toEqual(['.n Default: default changed from 1 to 2']);
    expect(changes(at(1), at())).toEqual(['.n Default: default 1 removed']);
  });

  it('refuses stricter bounds of each kind, and a bound where there was none', () => {
    const s = (extra: OpenApiSchema): OpenApiSchema => obj({ f: { type: 'string', ...extra } });
    expect(changes(s({ minLength: 1 }), s({ minLength: 2 }))).toEqual(['.f Minimum: minLength increased from 1 to 2']);
    expect(changes(s({ maxLength: 9 }), s({ maxLength: 8 }))).toEqual(['.f Maximum: maxLength decreased from 9 to 8']);
    expect(changes(s({}), s({ maxLength: 8 }))).toEqual(['.f Maximum: maxLength 8 added where there was no bound']);
    const a = (extra: OpenApiSchema): OpenApiSchema => obj({ l: { type: 'array', items: { type: 'string' }, ...extra } });
    expect(changes(a({ minItems: 0 }), a({ minItems: 1 }))).toEqual(['.l Minimum: minItems increased from 0 to 1']);
  });

  it('refuses a new or changed pattern or format, nullable dropped, unknown fields no longer kept', () => {
    expect(changes(obj({ s: { type: 'string' } }), obj({ s: { type: 'string', pattern: '^a' } }))).toEqual([
      '.s Pattern: pattern "^a" added',
    ]);
    expect(changes(obj({ s: { type: 'string', format: 'date' } }), obj({ s: { type: 'string', format: 'uri' } }))).toEqual([
      '.s Format: format changed from "date" to "uri"',
    ]);
    expect(changes(obj({ s: { type: 'string', nullable: true } }), obj({ s: { type: 'string' } }))).toEqual([
      '.s Nullable: no longer nullable: a null is now pruned',
    ]);
    expect(changes(obj({ o: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }), obj({ o: { type: 'object' } }))).toEqual([
      '.o PreserveUnknownFields: no longer keeps unknown fields: the API server now prunes them',
    ]);
  });

  it('refuses what no check knows, as OLM does; map values and list items are compared too', () => {
    expect(changes(obj({ n: { type: 'number', multipleOf: 2 } }), obj({ n: { type: 'number', multipleOf: 3 } }))).toEqual([
      '.n Unknown: multipleOf changed: unknown change, refusing to determine that it is safe',
    ]);
    expect(
      changes(
        obj({ m: { type: 'object', additionalProperties: { type: 'string' } } }),
        obj({ m: { type: 'object', additionalProperties: { type: 'integer' } } }),
      ),
    ).toEqual(['.m.* Type: type changed from string to integer']);
    expect(changes(obj({ 'odd.key': { type: 'string' } }), obj({}))).toEqual(['["odd.key"] NoExistingFieldRemoved: removed']);
  });
});

const names = apiNames({ group: 'apps', version: 'v1alpha1', kind: 'Shop' }, 'example.com');
const crdOf = (spec: OpenApiSchema, over: { version?: string; scope?: string } = {}): unknown => {
  const n = over.version === undefined ? names : { ...names, version: over.version };
  const doc = parseAllDocuments(
    crd({ names: n, chartName: 'shop', spec, status: statusSchema(), schemaSource: 'test', warnings: [], shortNames: [] }),
  )
    .map((d) => d.toJS() as Record<string, unknown> | null)
    .find((d) => d?.kind === 'CustomResourceDefinition') as { spec: { scope: string } };
  if (over.scope !== undefined) doc.spec.scope = over.scope;
  return doc;
};

describe('crdUpgradeSafety: two CRD documents', () => {
  it('refuses a scope change and a stored version removed; a version only the new CRD has is not compared', () => {
    const spec = obj({ a: { type: 'string' } });
    expect(crdUpgradeSafety(crdOf(spec), crdOf(spec, { scope: 'Cluster' }))).toEqual([
      { path: '.', check: 'NoScopeChange', message: 'scope changed from Namespaced to Cluster' },
    ]);
    expect(crdUpgradeSafety(crdOf(spec), crdOf(obj({}), { version: 'v1beta1' }))).toEqual([
      { version: 'v1alpha1', path: '.', check: 'NoStoredVersionRemoved', message: 'stored version v1alpha1 removed' },
    ]);
  });

  it('names each field under .spec with its version, one line each', () => {
    const found = crdUpgradeSafety(crdOf(obj({ a: { type: 'string' }, b: { type: 'integer' } })), crdOf(obj({ b: { type: 'string' } })));
    expect(formatUnsafeChanges(found)).toBe(
      ['  v1alpha1 .spec.a: removed (NoExistingFieldRemoved)', '  v1alpha1 .spec.b: type changed from integer to string (Type)'].join('\n'),
    );
  });
});

/** The CRD create api writes for a chart's values.schema.json and values.yaml. */
const chartCrd = (schemaFile: string, valuesFile: string): unknown =>
  crdOf(
    specSchemaFromValuesSchema(JSON.parse(readFileSync(schemaFile, 'utf8')), { values: readHelmYaml(readFileSync(valuesFile, 'utf8')) })
      .schema,
  );
const fixture = (rel: string): string => new URL(`../../fixtures/${rel}`, import.meta.url).pathname;
const lines = (found: readonly UnsafeChange[]): string[] => found.map((c) => `${c.path} ${c.check}`);

describe('on real charts: ours in three versions, and hashicorp/vault-helm', () => {
  const ours = (v: string): unknown =>
    chartCrd(fixture(`charts/chart-update/${v}/values.schema.json`), fixture(`charts/chart-update/${v}/values.yaml`));
  const vault = (v: string): unknown =>
    chartCrd(fixture(`values-schemas/vault-helm/${v}.values.schema.json`), fixture(`values-schemas/vault-helm/${v}.values.yaml`));

  it('chart-update v1 → v2 is compatible; v2 → v3 names every breaking field', () => {
    expect(crdUpgradeSafety(ours('v1'), ours('v2'))).toEqual([]);
    expect(lines(crdUpgradeSafety(ours('v2'), ours('v3'))).sort()).toEqual(
      [
        '.spec.labels NoExistingFieldRemoved',
        '.spec.mode Enum',
        '.spec.port Type',
        '.spec.timeout Minimum',
        '.spec.users[*].name Required',
      ].sort(),
    );
  });

  it('vault-helm v0.28.0 → v0.28.1 is compatible; v0.28.1 → v0.29.0 removed server.configAnnotation', () => {
    expect(crdUpgradeSafety(vault('v0.28.0'), vault('v0.28.1'))).toEqual([]);
    expect(crdUpgradeSafety(vault('v0.28.1'), vault('v0.29.0'))).toEqual([
      { version: 'v1alpha1', path: '.spec.server.configAnnotation', check: 'NoExistingFieldRemoved', message: 'removed' },
    ]);
  });
});
