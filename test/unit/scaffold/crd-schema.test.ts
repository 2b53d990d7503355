import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { OWNED_KEYS } from '../../../src/reconciler/status/status.js';
import { RISKS } from '../../../src/reconciler/plan/upgrade-plan.js';
import {
  openSpecSchema,
  specSchemaFromValues,
  specSchemaFromValuesSchema,
  statusSchema,
  type OpenApiSchema,
  type SchemaConversion,
} from '../../../src/scaffold/crd-schema.js';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../../fixtures/values-schemas/${name}`, import.meta.url), 'utf8'));
const chartFile = (name: string): string => readFileSync(new URL(`../../../helm-charts/nginx/${name}`, import.meta.url), 'utf8');

const PRESERVE = 'x-kubernetes-preserve-unknown-fields';
const convert = (schema: unknown, values?: unknown): SchemaConversion =>
  specSchemaFromValuesSchema(schema, values === undefined ? {} : { values });
const prop = (s: OpenApiSchema, ...path: string[]): OpenApiSchema =>
  path.reduce<OpenApiSchema>((node, key) => (key === '[*]' ? node.items : node.properties?.[key]) ?? { description: `missing ${key}` }, s);
const matching = (re: RegExp): unknown => expect.stringMatching(re) as unknown;
const warningAt = (r: SchemaConversion, path: string): string =>
  r.warnings
    .filter((w) => w.path === path)
    .map((w) => w.message)
    .join('\n');

const FORBIDDEN = [
  '$ref',
  'definitions',
  '$defs',
  'patternProperties',
  'uniqueItems',
  'const',
  'if',
  'then',
  'else',
  'not',
  'allOf',
  'examples',
  'title',
  '$schema',
];

/** Kubernetes' structural schema rules, checked on our output (the integration test asks the API server). */
function assertStructural(node: OpenApiSchema, path = '.spec', inJunctor = false): void {
  assertNode(node, path, inJunctor);
  for (const [k, child] of Object.entries(node.properties ?? {})) assertStructural(child, `${path}.${k}`);
  if (node.additionalProperties !== undefined) assertStructural(node.additionalProperties, `${path}.*`);
  if (node.items !== undefined) assertStructural(node.items, `${path}[*]`);
  for (const branch of [...(node.oneOf ?? []), ...(node.anyOf ?? [])]) assertStructural(branch, path, true);
}

function assertNode(node: OpenApiSchema, path: string, inJunctor: boolean): void {
  if (inJunctor) {
    for (const k of ['type', 'description', 'default', 'additionalProperties', 'nullable', 'properties', 'items'])
      expect(node, path).not.toHaveProperty(k);
  } else {
    const typed = node.type !== undefined || node['x-kubernetes-int-or-string'] === true || node[PRESERVE] === true;
    expect(typed, `${path} has a type`).toBe(true);
  }
  expect(node.properties !== undefined && node.additionalProperties !== undefined, `${path}: properties and additionalProperties`).toBe(
    false,
  );
  for (const k of Object.keys(node)) expect(FORBIDDEN, `${path} keyword ${k}`).not.toContain(k);
  if (node.type === 'array') expect(node.items, `${path} has items`).toBeDefined();
}

describe('specSchemaFromValuesSchema: the sample chart', () => {
  const result = convert(JSON.parse(chartFile('values.schema.json')), parse(chartFile('values.yaml')));

  it('types every field, closes what the chart closes and keeps free-form objects open', () => {
    assertStructural(result.schema);
    expect(result.schema.type).toBe('object');
    expect(result.schema[PRESERVE]).toBeUndefined(); // additionalProperties: false at the top
    expect(prop(result.schema, 'replicaCount')).toMatchObject({ type: 'integer', minimum: 0, maximum: 100 });
    expect(prop(result.schema, 'image', 'pullPolicy')).toEqual({
      type: 'string',
      enum: ['Always', 'IfNotPresent', 'Never'],
      nullable: true,
    });
    expect(prop(result.schema, 'nameOverride')).toMatchObject({ type: 'string', maxLength: 63 });
    expect(prop(result.schema, 'podLabels')).toEqual({ type: 'object', additionalProperties: { type: 'string' }, nullable: true });
    expect(prop(result.schema, 'global')).toMatchObject({ type: 'object', [PRESERVE]: true });
    expect(prop(result.schema, 'ingress', 'hosts', '[*]', 'paths', '[*]', 'pathType').enum).toContain('Prefix');
  });

  it('drops required where values.yaml supplies the key, keeps it in list items', () => {
    expect(prop(result.schema, 'image').required).toBeUndefined(); // values.yaml sets image.repository
    expect(prop(result.schema, 'imagePullSecrets', '[*]').required).toEqual(['name']);
    expect(prop(result.schema, 'ingress', 'hosts', '[*]').required).toEqual(['host', 'paths']);
  });

  it('leaves number-or-string quantities open, with a warning naming the path', () => {
    expect(prop(result.schema, 'resources', 'requests').additionalProperties).toEqual({ [PRESERVE]: true });
    expect(warningAt(result, '.spec.resources.requests.*')).toMatch(/number or string/);
  });
});

describe('specSchemaFromValuesSchema: a bitnami-like schema', () => {
  const result = convert(fixture('bitnami-like.schema.json'), { auth: { username: 'user' }, replicaCount: 1 });

  it('converts types, enums, defaults, patterns and nullable type arrays', () => {
    assertStructural(result.schema);
    expect(prop(result.schema, 'architecture')).toEqual({
      description: 'Allowed values: `standalone` or `replication`',
      type: 'string',
      enum: ['standalone', 'replication'],
    });
    expect(prop(result.schema, 'auth', 'enabled')).toMatchObject({ type: 'boolean', default: true });
    expect(prop(result.schema, 'auth', 'existingSecret')).toEqual({ type: 'string', nullable: true });
    expect(prop(result.schema, 'persistence', 'size')).toMatchObject({
      type: 'string',
      default: '8Gi',
      pattern: '^\\d+(\\.\\d+)?(Ki|Mi|Gi|Ti)$',
    });
    expect(prop(result.schema, 'replicaCount')).toEqual({ type: 'integer', minimum: 1, default: 1, nullable: true });
    expect(prop(result.schema, 'resources')).toEqual({
      description: 'Container resource requests and limits',
      type: 'object',
      [PRESERVE]: true,
    });
  });

  it('keeps objects open unless additionalProperties is false: charts read keys their schema omits', () => {
    expect(result.schema[PRESERVE]).toBe(true);
    expect(prop(result.schema, 'auth')[PRESERVE]).toBe(true);
    expect(prop(result.schema, 'auth').properties).toHaveProperty('password');
  });

  it('turns uniqueItems of scalars into a set list, drops formats the API server reads differently', () => {
    expect(prop(result.schema, 'persistence', 'accessModes')).toMatchObject({ type: 'array', 'x-kubernetes-list-type': 'set' });
    expect(prop(result.schema, 'metrics', 'serviceMonitor', 'interval')).toEqual({ type: 'string' });
    expect(warningAt(result, '.spec.metrics.serviceMonitor.interval')).toMatch(/format duration .*ISO 8601/);
  });

  it('drops a required key that has a default or that values.yaml sets; ignores UI keywords as JSON Schema does', () => {
    expect(prop(result.schema, 'auth').required).toBeUndefined();
    const withoutValues = convert(fixture('bitnami-like.schema.json'));
    expect(prop(withoutValues.schema, 'auth').required).toBeUndefined();
    expect(warningAt(withoutValues, '.spec.auth')).toBe(''); // username has a default
    const keep = convert(fixture('bitnami-like.schema.json'), { auth: {} });
    expect(prop(keep.schema, 'auth').required).toBeUndefined();
    const needed = convert(
      { type: 'object', properties: { auth: { type: 'object', required: ['user'], properties: { user: { type: 'string' } } } } },
      { auth: {} },
    );
    expect(prop(needed.schema, 'auth').required).toEqual(['user']);
    expect(warningAt(result, '.spec.architecture')).toBe('');
    expect(JSON.stringify(result.schema)).not.toMatch(/"form"|"hidden"/);
  });
});

describe('specSchemaFromValuesSchema: $ref, definitions and allOf', () => {
  const result = convert(fixture('refs-and-definitions.schema.json'), {});

  it('inlines local refs into $defs, with sibling keywords and escaped pointers', () => {
    assertStructural(result.schema);
    expect(prop(result.schema, 'image')).toMatchObject({ type: 'object', required: ['repository'] });
    expect(prop(result.schema, 'image')[PRESERVE]).toBeUndefined();
    expect(prop(result.schema, 'image', 'pullPolicy')).toEqual({
      type: 'string',
      enum: ['Always', 'IfNotPresent', 'Never'],
      default: 'IfNotPresent',
    });
    expect(prop(result.schema, 'podLabels')).toEqual({
      description: 'Labels added to the pods',
      type: 'object',
      additionalProperties: { type: 'string' },
    });
    expect(prop(result.schema, 'slashed')).toEqual({ description: 'a key with a slash', type: 'string' });
    expect(prop(result.schema, 'readinessProbe', 'periodSeconds')).toEqual({ type: 'integer', minimum: 0, exclusiveMinimum: true });
  });

  it('merges allOf members', () => {
    expect(prop(result.schema, 'sidecar')).toMatchObject({ type: 'object', required: ['repository'] });
    expect(Object.keys(prop(result.schema, 'sidecar').properties ?? {}).sort()).toEqual(['port', 'pullPolicy', 'repository', 'tag']);
  });

  it('stops a recursive $ref with an open node and a warning, and leaves remote and dangling refs open', () => {
    expect(prop(result.schema, 'filter', 'op')).toEqual({ type: 'string', enum: ['and'] });
    expect(prop(result.schema, 'filter', 'args', '[*]')).toEqual({ [PRESERVE]: true });
    expect(warningAt(result, '.spec.filter.args[*]')).toMatch(/recursive \$ref #\/\$defs\/expression/);
    expect(prop(result.schema, 'remote')).toEqual({ [PRESERVE]: true });
    expect(warningAt(result, '.spec.remote')).toMatch(/names another document.*allowSchemaRefs: true/);
    expect(warningAt(result, '.spec.dangling')).toMatch(/points to nothing/);
    const malformed = convert({ type: 'object', properties: { x: { $ref: '#/definitions/100%' } } });
    expect(prop(malformed.schema, 'x')).toMatchObject({ [PRESERVE]: true });
    expect(warningAt(malformed, '.spec.x')).toMatch(/points to nothing/);
  });
});

describe('specSchemaFromValuesSchema: constructs a CRD cannot say', () => {
  // values.yaml without x: x is not something a user's null could delete, so not nullable.
  const at = (property: unknown, values: unknown = {}) => {
    const r = convert({ type: 'object', properties: { x: property } }, values);
    assertStructural(r.schema);
    return { schema: prop(r.schema, 'x'), warning: warningAt(r, '.spec.x'), all: r.warnings };
  };

  it('integer|string is int-or-string; integer|number is number; other unions are open', () => {
    expect(at({ type: ['integer', 'string'] }).schema).toEqual({ 'x-kubernetes-int-or-string': true });
    expect(at({ anyOf: [{ type: 'integer' }, { type: 'string' }] }).schema).toEqual({ 'x-kubernetes-int-or-string': true });
    expect(at({ type: ['integer', 'number'] }).schema).toEqual({ type: 'number' });
    expect(at({ type: ['boolean', 'string'] })).toMatchObject({ schema: { [PRESERVE]: true }, warning: matching(/boolean or string/) });
  });

  it('X or null becomes a nullable X, also through oneOf', () => {
    expect(at({ oneOf: [{ type: 'null' }, { type: 'object', properties: { a: { type: 'string' } } }] }).schema).toMatchObject({
      type: 'object',
      nullable: true,
      properties: { a: { type: 'string' } },
    });
    expect(at({ type: 'string', enum: ['a', null] }).schema).toEqual({ type: 'string', enum: ['a'], nullable: true });
  });

  it('keeps value-only oneOf branches beside a type, drops shaped ones with a warning', () => {
    expect(at({ type: 'string', oneOf: [{ pattern: '^a' }, { maxLength: 2 }] }).schema).toEqual({
      type: 'string',
      oneOf: [{ pattern: '^a' }, { maxLength: 2 }],
    });
    const shaped = at({
      oneOf: [
        { type: 'object', required: ['a'] },
        { type: 'object', required: ['b'] },
      ],
    });
    expect(shaped.schema).toEqual({ type: 'object', [PRESERVE]: true });
    expect(shaped.warning).toMatch(/oneOf alternatives/);
    expect(at({ anyOf: [{ type: 'string' }, { type: 'array' }] })).toMatchObject({
      schema: { [PRESERVE]: true },
      warning: matching(/array or string cannot be expressed/),
    });
  });

  it('patternProperties, if/then/else, not, tuples: open or unvalidated, with a warning', () => {
    expect(at({ type: 'object', patternProperties: { '^x-': { type: 'string' } } })).toMatchObject({
      schema: { type: 'object', [PRESERVE]: true },
      warning: matching(/patternProperties/),
    });
    expect(at({ type: 'object', properties: { a: { type: 'boolean' } }, if: {}, then: {} }).warning).toMatch(/if\/then\/else/);
    expect(at({ type: 'string', not: { enum: ['x'] } })).toMatchObject({ schema: { type: 'string' }, warning: matching(/not cannot/) });
    const tuple = convert({ type: 'object', properties: { x: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }] } } });
    expect(prop(tuple.schema, 'x', '[*]')).toEqual({ [PRESERVE]: true });
    expect(warningAt(tuple, '.spec.x[*]')).toMatch(/tuple/);
  });

  it('additionalProperties: false closes, true or a schema beside properties keeps extra keys', () => {
    expect(at({ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false }).schema).toEqual({
      type: 'object',
      properties: { a: { type: 'string' } },
    });
    expect(at({ type: 'object', additionalProperties: true }).schema).toEqual({ type: 'object', [PRESERVE]: true });
    const both = at({ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: { type: 'integer' } });
    expect(both.schema).toEqual({ type: 'object', properties: { a: { type: 'string' } }, [PRESERVE]: true });
    expect(both.warning).toMatch(/additionalProperties beside properties/);
  });

  it('converts draft-6 exclusive bounds, const, formats and RE2-incompatible patterns', () => {
    expect(at({ type: 'number', exclusiveMaximum: 1, minimum: 0 }).schema).toEqual({
      type: 'number',
      minimum: 0,
      maximum: 1,
      exclusiveMaximum: true,
    });
    expect(at({ type: 'integer', minimum: 5, exclusiveMinimum: 3 }).schema).toEqual({ type: 'integer', minimum: 5 });
    expect(at({ const: 'v1' }).schema).toEqual({ type: 'string', enum: ['v1'] });
    expect(at({ type: 'string', format: 'email' }).schema).toEqual({ type: 'string', format: 'email' });
    expect(at({ type: 'string', format: 'uri-reference' })).toMatchObject({
      schema: { type: 'string' },
      warning: matching(/uri-reference/),
    });
    expect(at({ type: 'string', pattern: '^(?!default$).*' })).toMatchObject({ schema: { type: 'string' }, warning: matching(/RE2/) });
    expect(at({ type: 'string', pattern: '([' }).schema).toEqual({ type: 'string' });
    expect(at({ type: 'string', pattern: '^a\\-b$', default: 'a-b' }).schema).toEqual({
      type: 'string',
      pattern: '^a\\-b$',
      default: 'a-b',
    });
  });

  it('drops defaults the API server would reject, or that disagree with values.yaml', () => {
    expect(at({ type: 'integer', minimum: 1, default: 0 })).toMatchObject({
      schema: { type: 'integer', minimum: 1 },
      warning: matching(/default 0 dropped/),
    });
    expect(at({ type: 'string', enum: ['a'], default: 'b' }).schema).not.toHaveProperty('default');
    expect(at({ type: 'object', additionalProperties: false, properties: { a: { type: 'string' } }, default: { b: 1 } }).warning).toMatch(
      /pruned/,
    );
    expect(at({ type: 'object', properties: { a: { type: 'string' } }, default: { b: 1 } }).schema.default).toEqual({ b: 1 });
    expect(at({ type: 'string', format: 'email', default: '' }).schema).not.toHaveProperty('default');
    expect(at({ type: 'string', default: null }).schema).toEqual({ type: 'string' });
    const disagree = convert({ type: 'object', properties: { tag: { type: 'string', default: 'latest' } } }, { tag: '1.0' });
    expect(prop(disagree.schema, 'tag')).toEqual({ type: 'string', nullable: true });
    expect(warningAt(disagree, '.spec.tag')).toMatch(/values.yaml sets "1.0"/);
  });

  it("accepts null where values.yaml has a value: a user's null deletes it in helm", () => {
    const schema = {
      type: 'object',
      properties: {
        tag: { type: 'string' },
        other: { type: 'string' },
        list: { type: 'array', items: { type: 'object', properties: { a: { type: 'string' } } } },
      },
    };
    const r = convert(schema, { tag: 'v1', other: null, list: [{ a: 'x' }] });
    expect(prop(r.schema, 'tag').nullable).toBe(true);
    expect(prop(r.schema, 'other').nullable).toBeUndefined();
    expect(prop(r.schema, 'list', '[*]', 'a').nullable).toBeUndefined(); // list items are replaced, never merged
    expect(prop(convert(schema).schema, 'other').nullable).toBe(true); // without values.yaml: any field may be set there
  });

  it('without values.yaml, required is only kept where helm merges nothing', () => {
    const r = convert({
      type: 'object',
      required: ['a'],
      properties: {
        a: { type: 'string' },
        list: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } },
      },
    });
    expect(r.schema.required).toBeUndefined();
    expect(warningAt(r, '.spec')).toMatch(/required a not enforced/);
    expect(prop(r.schema, 'list', '[*]').required).toEqual(['name']);
  });

  it('names odd keys in paths', () => {
    const r = convert({ type: 'object', properties: { 'app.kubernetes.io/name': { type: ['string', 'boolean'] } } });
    expect(r.warnings[0]?.path).toBe('.spec["app.kubernetes.io/name"]');
  });
});

describe('specSchemaFromValuesSchema: input it cannot read', () => {
  it.each([
    ['a string', 'not a schema'],
    ['null', null],
    ['an array', [1, 2]],
    ['a number', 42],
  ])('%s gives an open spec with a warning', (_what, input) => {
    const r = convert(input);
    expect(r.schema).toEqual(openSpecSchema());
    expect(r.warnings.length).toBeGreaterThan(0);
  });

  it('a non-object root gives an open spec; true and {} give it silently', () => {
    expect(convert({ type: 'string' })).toMatchObject({ schema: openSpecSchema(), warnings: [{ path: '.spec' }] });
    expect(convert(true)).toEqual({ schema: openSpecSchema(), warnings: [] });
    expect(convert({})).toEqual({ schema: openSpecSchema(), warnings: [] });
  });

  it('survives garbage in every keyword', () => {
    const garbage = {
      type: 'object',
      properties: {
        a: { type: 7, enum: 'x', items: 3, properties: [], required: 'a', minLength: -1, $ref: 5 },
        b: 'x',
        c: { allOf: 'x' },
        d: { oneOf: [1] },
      },
      required: [1, 'a'],
    };
    const r = convert(garbage);
    assertStructural(r.schema);
  });

  it('keeps a property named __proto__ as a property', () => {
    const r = convert(JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"},"a":{"type":"integer"}}}'), {});
    expect(Object.keys(r.schema.properties ?? {})).toEqual(['__proto__', 'a']);
    const inferred = specSchemaFromValues(JSON.parse('{"__proto__":{"x":1}}'));
    expect(Object.keys(inferred.schema.properties ?? {})).toEqual(['__proto__']);
  });

  it('never throws on random nesting of keywords and values', () => {
    let seed = 42;
    const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const keys = [
      'type',
      'properties',
      'items',
      'additionalProperties',
      'oneOf',
      'anyOf',
      'allOf',
      '$ref',
      'enum',
      'default',
      'required',
      'const',
      'pattern',
      'minimum',
      'format',
      'nullable',
      'patternProperties',
      'x',
    ];
    const leaves: unknown[] = [
      null,
      true,
      false,
      0,
      1.5,
      -1,
      'string',
      'object',
      '#',
      '#/definitions/a',
      '#/properties/x',
      [],
      {},
      ['string', 'null'],
      '[',
      'date-time',
    ];
    const gen = (depth: number): unknown => {
      if (depth === 0 || rand(4) === 0) return leaves[rand(leaves.length)];
      if (rand(5) === 0) return [gen(depth - 1), gen(depth - 1)];
      return Object.fromEntries(Array.from({ length: 1 + rand(4) }, () => [keys[rand(keys.length)] ?? 'x', gen(depth - 1)]));
    };
    for (let i = 0; i < 300; i++) {
      const schema = { definitions: { a: gen(4) }, ...(gen(5) as object) };
      const r = convert(schema, rand(2) === 0 ? undefined : gen(3));
      expect(r.schema.type).toBe('object');
      assertStructural(r.schema);
    }
  });

  it('a self-referencing root and deep $ref fan-out stay bounded', () => {
    const self = convert({ type: 'object', properties: { self: { $ref: '#' } } });
    expect(prop(self.schema, 'self', 'self')).toMatchObject({ [PRESERVE]: true });
    expect(warningAt(self, '.spec.self.self')).toMatch(/recursive \$ref #/);
    const defs: Record<string, unknown> = { d0: { type: 'string' } };
    for (let i = 1; i <= 20; i++)
      defs[`d${i}`] = { type: 'object', properties: { a: { $ref: `#/definitions/d${i - 1}` }, b: { $ref: `#/definitions/d${i - 1}` } } };
    const r = convert({ definitions: defs, type: 'object', properties: { root: { $ref: '#/definitions/d20' } } });
    expect(JSON.stringify(r.schema).length).toBeLessThan(5_000_000);
    expect(r.warnings.some((w) => /over 20000 nodes/.test(w.message))).toBe(true);
  });
});

describe('specSchemaFromValues', () => {
  const result = specSchemaFromValues(parse(chartFile('values.yaml')));

  it('types scalars from values.yaml and keeps every object open', () => {
    assertStructural(result.schema);
    expect(result.schema).toMatchObject({ type: 'object', [PRESERVE]: true });
    expect(prop(result.schema, 'replicaCount')).toEqual({ type: 'integer', nullable: true });
    expect(prop(result.schema, 'image')).toMatchObject({ type: 'object', [PRESERVE]: true });
    expect(prop(result.schema, 'image', 'repository')).toEqual({ type: 'string', nullable: true });
    expect(prop(result.schema, 'image', 'tag')).toEqual({ 'x-kubernetes-int-or-string': true, nullable: true });
    expect(prop(result.schema, 'serviceAccount', 'create')).toEqual({ type: 'boolean', nullable: true });
    expect(prop(result.schema, 'podAnnotations')).toEqual({ type: 'object', [PRESERVE]: true, nullable: true });
    expect(prop(result.schema, 'imagePullSecrets')).toEqual({ type: 'array', items: { [PRESERVE]: true }, nullable: true });
    expect(JSON.stringify(result.schema)).not.toMatch(/"required"|"enum"|"default"/);
    // Fields values.yaml sets accept null (a user's null deletes them in helm); list items are replaced, never merged.
    expect(prop(result.schema, 'ingress', 'hosts', '[*]').properties?.host).toEqual({ type: 'string' });
  });

  it('infers list items that agree, and opens those that do not', () => {
    const r = specSchemaFromValues({
      ports: [80, 443],
      ratios: [1, 0.5],
      mixed: ['a', 1],
      hosts: [
        { host: 'a', paths: ['/'] },
        { host: 'b', tls: true },
      ],
      weird: [{ a: 1 }, { a: 'x' }],
    });
    assertStructural(r.schema);
    expect(prop(r.schema, 'ports')).toEqual({ type: 'array', items: { type: 'integer' }, nullable: true });
    expect(prop(r.schema, 'ratios')).toEqual({ type: 'array', items: { type: 'number' }, nullable: true });
    expect(prop(r.schema, 'mixed', '[*]')).toEqual({ [PRESERVE]: true });
    expect(prop(r.schema, 'hosts', '[*]')).toMatchObject({ type: 'object', [PRESERVE]: true });
    expect(Object.keys(prop(r.schema, 'hosts', '[*]').properties ?? {}).sort()).toEqual(['host', 'paths', 'tls']);
    expect(prop(r.schema, 'weird', '[*]', 'a')).toEqual({ [PRESERVE]: true });
  });

  it('leaves null, {} and maps of user keys open', () => {
    const r = specSchemaFromValues({
      existingSecret: null,
      resources: {},
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      extraEnv: { A: 'b' },
    });
    for (const key of ['resources', 'nodeSelector', 'extraEnv'])
      expect(prop(r.schema, key)).toEqual({ type: 'object', [PRESERVE]: true, nullable: true });
    expect(prop(r.schema, 'existingSecret')).toEqual({ [PRESERVE]: true });
  });

  it('empty or odd values give an open spec', () => {
    expect(specSchemaFromValues(null)).toEqual({ schema: openSpecSchema(), warnings: [] });
    expect(specSchemaFromValues({})).toEqual({ schema: { type: 'object', properties: {}, [PRESERVE]: true }, warnings: [] });
    expect(specSchemaFromValues(['a'])).toMatchObject({ schema: openSpecSchema(), warnings: [{ path: '.spec' }] });
  });
});

describe('statusSchema and openSpecSchema', () => {
  it("types every field status.ts writes and stays open for a newer operator's fields", () => {
    const s = statusSchema();
    assertStructural(s);
    expect(s[PRESERVE]).toBe(true);
    expect(Object.keys(s.properties ?? {}).sort()).toEqual([...OWNED_KEYS].sort());
    expect(Object.keys(prop(s, 'conditions', '[*]').properties ?? {})).toEqual(
      expect.arrayContaining(['type', 'status', 'reason', 'message', 'lastTransitionTime']),
    );
    expect(Object.keys(prop(s, 'deployedRelease').properties ?? {}).sort()).toEqual([
      'appVersion',
      'chart',
      'chartVersion',
      'manifest',
      'name',
      'namespace',
      'revision',
    ]);
    expect(prop(s, 'deployedRelease', 'revision').type).toBe('integer');
    // Build-time code cannot import the reconciler: the plan's risks are listed twice, and must agree.
    expect(prop(s, 'plan', 'risks').items?.enum).toEqual([...RISKS]);
  });

  it("openSpecSchema is operator-sdk's", () => {
    expect(openSpecSchema()).toEqual({ type: 'object', [PRESERVE]: true });
  });
});
