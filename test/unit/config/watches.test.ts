import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create } from 'tar';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadChartInfo } from '../../../src/config/chart.js';
import { closestName } from '../../../src/config/closest-name.js';
import { expandEnv } from '../../../src/config/env-expansion.js';
import type { Watch } from '../../../src/config/watch.js';
import { loadWatches, parseWatches } from '../../../src/config/watches.js';
import { WatchesError } from '../../../src/config/watches-problems.js';

let tmp: string;

beforeEach(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'watches-test-'));
  await makeChart('helm-charts/nginx', 'nginx');
  await makeChart('helm-charts/memcached', 'memcached');
});

afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function makeChart(dir: string, name: string): Promise<string> {
  const root = join(tmp, dir);
  await mkdir(join(root, 'templates'), { recursive: true });
  await writeFile(join(root, 'Chart.yaml'), `apiVersion: v2\nname: ${name}\nversion: 0.1.0\nappVersion: "1.0"\n`);
  await writeFile(join(root, 'values.yaml'), 'replicaCount: 1\n');
  await writeFile(join(root, 'templates', 'deployment.yaml'), 'kind: Deployment\n');
  return root;
}

/** Parses `text` as `<tmp>/watches.yaml`, reporting the file as "watches.yaml". */
function parse(text: string, env: NodeJS.ProcessEnv = {}): Promise<Watch[]> {
  return parseWatches(text, { file: 'watches.yaml', env, baseDir: tmp });
}

async function problemsOf(text: string, env: NodeJS.ProcessEnv = {}): Promise<WatchesError> {
  try {
    await parse(text, env);
  } catch (err) {
    if (err instanceof WatchesError) return err;
    throw err;
  }
  throw new Error('expected a WatchesError');
}

async function messagesOf(text: string, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  return (await problemsOf(text, env)).problems.map((p) => p.message);
}

const lines = (...l: string[]): string => `${l.join('\n')}\n`;

const NGINX = ['- group: example.com', '  version: v1alpha1', '  kind: Nginx', '  chart: helm-charts/nginx'];

describe('parseWatches: valid files', () => {
  it('reads a realistic multi-entry file', async () => {
    await mkdir(join(tmp, 'archives'));
    await create({ gzip: true, file: join(tmp, 'archives', 'memcached-0.1.0.tgz'), cwd: join(tmp, 'helm-charts'), portable: true }, [
      'memcached',
    ]);
    const text = lines(
      '# Use the helm-charts/ directory for charts',
      '- group: cache.example.com',
      '  version: v1alpha1',
      '  kind: Memcached',
      '  chart: archives/memcached-0.1.0.tgz',
      '  watchDependentResources: false',
      '  reconcilePeriod: 1m30s',
      '  maxConcurrentReconciles: 4',
      '  dryRunOption: server',
      '  confineToNamespace: true',
      '  overrideValues:',
      '    image.repository: ${RELATED_IMAGE_MEMCACHED}',
      '    image.tag: "$TAG"',
      '    replicaCount: 3',
      '    debug: true',
      '    version: 1.10',
      '    proxy.http: $UNSET_PROXY',
      '  selector:',
      '    matchLabels:',
      '      shard: a',
      '    matchExpressions:',
      '      - {key: env, operator: In, values: [prod, dev]}',
      '      - {key: legacy, operator: DoesNotExist}',
      '',
      ...NGINX,
      '- version: v1',
      '  kind: ConfigMapWrapper',
      '  chart: ./helm-charts/nginx/',
      '  dryRunOption: none',
      '  reconcilePeriod: "0"',
    );
    const watches = await parse(text, { RELATED_IMAGE_MEMCACHED: 'quay.io/memcached', TAG: '1.6' });
    expect(watches).toHaveLength(3);
    const [memcached, nginx, core] = watches;
    expect(memcached).toEqual({
      group: 'cache.example.com',
      version: 'v1alpha1',
      kind: 'Memcached',
      chart: await loadChartInfo(join(tmp, 'archives', 'memcached-0.1.0.tgz')),
      watchDependentResources: false,
      overrideValues: {
        'image.repository': 'quay.io/memcached',
        'image.tag': '1.6',
        replicaCount: '3',
        debug: 'true',
        version: '1.10',
        'proxy.http': '',
      },
      selector: {
        matchLabels: { shard: 'a' },
        matchExpressions: [
          { key: 'env', operator: 'In', values: ['prod', 'dev'] },
          { key: 'legacy', operator: 'DoesNotExist' },
        ],
      },
      labelSelector: 'env in (dev,prod),!legacy,shard=a',
      reconcilePeriodMs: 90_000,
      maxConcurrentReconciles: 4,
      dryRunOption: 'server',
      confineToNamespace: true,
      allowClusterScoped: [],
      sensitiveValues: [],
      allowSchemaRefs: false,
      source: { file: 'watches.yaml', index: 0, line: 2 },
    });
    expect(memcached?.chart.format).toBe('archive');
    expect(nginx).toMatchObject({
      group: 'example.com',
      kind: 'Nginx',
      chart: { format: 'directory', name: 'nginx', path: join(tmp, 'helm-charts', 'nginx') },
      watchDependentResources: true,
      overrideValues: {},
      labelSelector: '',
      dryRunOption: 'client',
      source: { index: 1, line: 25 },
    });
    expect(nginx).not.toHaveProperty('selector');
    expect(nginx).not.toHaveProperty('reconcilePeriodMs');
    expect(nginx).not.toHaveProperty('maxConcurrentReconciles');
    expect(core).toMatchObject({ group: '', version: 'v1', dryRunOption: 'client', source: { index: 2, line: 29 } });
    expect(core?.reconcilePeriodMs).toBeUndefined();
    expect(core?.chart.digest).toBe(nginx?.chart.digest);
  });

  it('accepts empty optional values and the client dry-run spellings', async () => {
    const watches = await parse(
      lines(
        '- version: v1alpha1',
        '  kind: Nginx',
        '  chart: helm-charts/nginx',
        '  group:',
        '  selector:',
        '  overrideValues: {}',
        '  dryRunOption: ""',
        '  reconcilePeriod:',
        '  maxConcurrentReconciles:',
        '  watchDependentResources:',
      ),
    );
    expect(watches[0]).toMatchObject({
      group: '',
      overrideValues: {},
      labelSelector: '',
      dryRunOption: 'client',
      watchDependentResources: true,
    });
  });

  it('resolves charts from the watches file directory, not the working directory', async () => {
    await mkdir(join(tmp, 'config'));
    await writeFile(join(tmp, 'config', 'watches.yaml'), lines(...NGINX).replace('helm-charts/nginx', '../helm-charts/nginx'));
    const watches = await loadWatches(join(tmp, 'config', 'watches.yaml'), {});
    expect(watches[0]?.chart.path).toBe(join(tmp, 'helm-charts', 'nginx'));
    expect(watches[0]?.source.file).toBe(join(tmp, 'config', 'watches.yaml'));
    const viaParse = await parseWatches(lines(...NGINX), { file: join(tmp, 'watches.yaml'), env: {} });
    expect(viaParse[0]?.chart.path).toBe(join(tmp, 'helm-charts', 'nginx'));
  });

  it('uses process.env when no env is given', async () => {
    process.env['WATCHES_TEST_IMAGE'] = 'img:1';
    try {
      const watches = await parseWatches(lines(...NGINX, '  overrideValues:', '    image: $WATCHES_TEST_IMAGE'), {
        file: 'watches.yaml',
        baseDir: tmp,
      });
      expect(watches[0]?.overrideValues).toEqual({ image: 'img:1' });
    } finally {
      delete process.env['WATCHES_TEST_IMAGE'];
    }
  });

  it('follows YAML anchors and aliases', async () => {
    const watches = await parse(
      lines(
        ...NGINX,
        '  overrideValues: &ov',
        '    a: b',
        '- group: example.com',
        '  version: v1',
        '  kind: Other',
        '  chart: helm-charts/nginx',
        '  overrideValues: *ov',
      ),
    );
    expect(watches[1]?.overrideValues).toEqual({ a: 'b' });
  });
});

describe('parseWatches: file-level problems', () => {
  it.each([
    ['an empty file', ''],
    ['a comment-only file', '# nothing here\n'],
    ['an empty list', '[]\n'],
  ])('rejects %s with "no watches defined"', async (_, text) => {
    const err = await problemsOf(text);
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]?.reason).toContain('no watches defined');
    expect(err.message.split('\n')[0]).toBe('invalid watches file watches.yaml: 1 problem');
  });

  it('explains a map where a list belongs', async () => {
    const [message] = await messagesOf(lines('group: example.com', 'version: v1', 'kind: Nginx'));
    expect(message).toBe('watches.yaml:1:1: expected a list of watches (each entry starting with "- "), got a map');
  });

  it('reports YAML syntax errors with their position', async () => {
    const err = await problemsOf(lines(...NGINX, '  overrideValues: {a: b', '- kind: X'));
    expect(err.problems[0]?.line).toBe(6);
    expect(err.problems[0]?.message).toMatch(/^watches\.yaml:6:1: /);
    expect(err.problems[0]?.message).not.toContain('\n');
  });

  it('treats duplicate keys as errors', async () => {
    const messages = await messagesOf(lines(...NGINX, '  kind: Other'));
    expect(messages).toEqual(['watches.yaml:5:3: Map keys must be unique']);
  });

  it('rejects entries that are not maps', async () => {
    const messages = await messagesOf(lines(...NGINX, '- helm-charts/nginx'));
    expect(messages).toEqual([
      'watches.yaml:5:3: entry 1: entry must be a map with group, version, kind and chart; expected a map, got string "helm-charts/nginx"',
    ]);
  });

  it('rejects empty entries and dangling aliases', async () => {
    const messages = await messagesOf(lines(...NGINX, '-', '- *nowhere'));
    expect(messages).toEqual([
      'watches.yaml:5:2: entry 1: entry must be a map with group, version, kind and chart; expected a map, got null',
      'watches.yaml:6:3: entry 2: entry must be a map with group, version, kind and chart; alias refers to an unknown anchor',
    ]);
  });

  it('reports an unreadable file', async () => {
    const missing = join(tmp, 'missing.yaml');
    await expect(loadWatches(missing)).rejects.toThrow(WatchesError);
    await expect(loadWatches(missing)).rejects.toThrow(`${missing}: cannot read watches file`);
  });
});

describe('parseWatches: entry problems', () => {
  it('suggests the closest known field for an unknown one', async () => {
    const messages = await messagesOf(lines(...NGINX, '  overideValues:', '    a: b', '  labelSelector: {}', '  frobnicate: 1'));
    expect(messages).toEqual([
      'watches.yaml:5:3: entry 0 (example.com/v1alpha1, Kind=Nginx): unknown field "overideValues" (did you mean "overrideValues"?)',
      'watches.yaml:7:3: entry 0 (example.com/v1alpha1, Kind=Nginx): unknown field "labelSelector" (did you mean "selector"?)',
      expect.stringContaining('unknown field "frobnicate"; known fields: group, version, kind, chart,'),
    ]);
    const err = await problemsOf(lines(...NGINX, '  overideValues: {}'));
    expect(err).toMatchObject({ file: 'watches.yaml', line: 5, column: 3, entry: 0, field: 'overideValues' });
  });

  it('names file, line, column, entry, GVK and field for a bad duration', async () => {
    const messages = await messagesOf(
      lines('- group: example.com', '  version: v1alpha1', '  kind: Nginx', '  chart: helm-charts/nginx', '  reconcilePeriod: 5 minutes'),
    );
    expect(messages).toEqual([
      'watches.yaml:5:20: entry 0 (example.com/v1alpha1, Kind=Nginx): field "reconcilePeriod": invalid duration "5 minutes": ' +
        'expected a number followed by a unit (ns, us, ms, s, m, h), e.g. "30s" or "1m30s" (unknown unit " minutes")',
    ]);
  });

  it('requires version, kind and chart', async () => {
    const messages = await messagesOf(
      lines('- group: example.com', '  watchDependentResources: true', '- version: ""', '  kind: ""', '  chart: ""'),
    );
    expect(messages).toEqual([
      'watches.yaml:1:3: entry 0: field "version": required field is missing',
      'watches.yaml:1:3: entry 0: field "kind": required field is missing',
      'watches.yaml:1:3: entry 0: field "chart": required field is missing',
      'watches.yaml:3:12: entry 1: field "version": must not be empty',
      'watches.yaml:4:9: entry 1: field "kind": must not be empty',
      'watches.yaml:5:10: entry 1: field "chart": must not be empty',
    ]);
  });

  it('checks group, version and kind syntax', async () => {
    const messages = await messagesOf(
      lines(
        '- group: Example_com',
        '  version: 1.0',
        '  kind: my-app',
        '  chart: helm-charts/nginx',
        '- group: example.com',
        '  version: V1',
        '  kind: nginx',
        '  chart: helm-charts/nginx',
      ),
    );
    expect(messages).toEqual([
      expect.stringMatching(
        /^watches\.yaml:1:10: entry 0 \(Kind=my-app\): field "group": group "Example_com" must be empty \(the core group\) or a DNS subdomain/,
      ),
      'watches.yaml:2:12: entry 0 (Kind=my-app): field "version": expected a string, got number 1.0',
      'watches.yaml:3:9: entry 0 (Kind=my-app): field "kind": kind "my-app" must start with an upper-case letter and contain only letters and digits (e.g. "Myapp")',
      expect.stringMatching(
        /^watches\.yaml:6:12: entry 1 \(example\.com\/V1, Kind=nginx\): field "version": version "V1" must be a DNS label/,
      ),
      expect.stringContaining(
        'field "kind": kind "nginx" must start with an upper-case letter and contain only letters and digits (e.g. "Nginx")',
      ),
    ]);
  });

  it('checks the types of the optional fields', async () => {
    const messages = await messagesOf(
      lines(
        ...NGINX,
        '  watchDependentResources: "yes"',
        '  reconcilePeriod: 30',
        '  maxConcurrentReconciles: 0',
        '  dryRunOption: Server',
        '  overrideValues: [a]',
        '  selector: app=nginx',
      ),
    );
    expect(messages).toEqual([
      'watches.yaml:5:28: entry 0 (example.com/v1alpha1, Kind=Nginx): field "watchDependentResources": expected true or false, got string "yes"',
      'watches.yaml:6:20: entry 0 (example.com/v1alpha1, Kind=Nginx): field "reconcilePeriod": expected a duration string such as "30s" or "1m30s", got number 30',
      'watches.yaml:7:28: entry 0 (example.com/v1alpha1, Kind=Nginx): field "maxConcurrentReconciles": expected a whole number of at least 1, got number 0',
      'watches.yaml:8:17: entry 0 (example.com/v1alpha1, Kind=Nginx): field "dryRunOption": expected one of "", "client", "none", "server", got string "Server" (did you mean "server"?)',
      'watches.yaml:9:19: entry 0 (example.com/v1alpha1, Kind=Nginx): field "overrideValues": expected a map of value paths to strings, got a list',
      'watches.yaml:10:13: entry 0 (example.com/v1alpha1, Kind=Nginx): field "selector": must be a map with matchLabels and/or matchExpressions, got string "app=nginx"',
    ]);
  });

  it.each([
    ['1.5', 'got number 1.5'],
    ['"2"', 'got string "2"'],
    ['-1', 'got number -1'],
  ])('rejects maxConcurrentReconciles: %s', async (value, detail) => {
    const [message] = await messagesOf(lines(...NGINX, `  maxConcurrentReconciles: ${value}`));
    expect(message).toContain(detail);
  });

  it('reads the tenancy fields: ServiceAccount identity and namespace confinement', async () => {
    const [w] = await parse(
      lines(
        ...NGINX,
        '  serviceAccountName: tenant-deployer',
        '  confineToNamespace: true',
        '  allowClusterScoped: [Namespace, ClusterRole.rbac.authorization.k8s.io]',
      ),
    );
    expect(w).toMatchObject({
      serviceAccountName: 'tenant-deployer',
      confineToNamespace: true,
      allowClusterScoped: ['Namespace', 'ClusterRole.rbac.authorization.k8s.io'],
    });
    const [plain] = await parse(lines(...NGINX));
    expect(plain).toMatchObject({ confineToNamespace: false, allowClusterScoped: [] });
    expect(plain).not.toHaveProperty('serviceAccountName');
  });

  it('reads sensitiveValues: dotted value paths', async () => {
    const [w] = await parse(lines(...NGINX, '  sensitiveValues: [auth.password, tls]'));
    expect(w?.sensitiveValues).toEqual(['auth.password', 'tls']);
    expect((await parse(lines(...NGINX)))[0]?.sensitiveValues).toEqual([]);
  });

  it('reports bad sensitiveValues with their position', async () => {
    expect(await messagesOf(lines(...NGINX, '  sensitiveValues: [auth..password, 3]'))).toEqual([
      'watches.yaml:5:21: entry 0 (example.com/v1alpha1, Kind=Nginx): field "sensitiveValues[0]": expected a value path such as "auth.password" (keys joined by "."), got string "auth..password"',
      'watches.yaml:5:37: entry 0 (example.com/v1alpha1, Kind=Nginx): field "sensitiveValues[1]": expected a value path such as "auth.password" (keys joined by "."), got number 3',
    ]);
    expect(await messagesOf(lines(...NGINX, '  sensitiveValues: password'))).toEqual([
      'watches.yaml:5:20: entry 0 (example.com/v1alpha1, Kind=Nginx): field "sensitiveValues": expected a list of value paths such as "auth.password", got string "password"',
    ]);
  });

  it('reports bad tenancy fields with their position', async () => {
    expect(
      await messagesOf(
        lines(...NGINX, '  serviceAccountName: Tenant_SA', '  confineToNamespace: "yes"', '  allowClusterScoped: [clusterrole, 3]'),
      ),
    ).toEqual([
      `watches.yaml:5:23: entry 0 (example.com/v1alpha1, Kind=Nginx): field "serviceAccountName": "Tenant_SA" is not a ServiceAccount name: lower-case letters, digits, '-' and '.'`,
      'watches.yaml:6:23: entry 0 (example.com/v1alpha1, Kind=Nginx): field "confineToNamespace": expected true or false, got string "yes"',
      'watches.yaml:7:24: entry 0 (example.com/v1alpha1, Kind=Nginx): field "allowClusterScoped[0]": expected "Kind" (core group) or "Kind.group", got string "clusterrole"',
      'watches.yaml:7:37: entry 0 (example.com/v1alpha1, Kind=Nginx): field "allowClusterScoped[1]": expected "Kind" (core group) or "Kind.group", got number 3',
    ]);
    expect(await messagesOf(lines(...NGINX, '  allowClusterScoped: [Namespace]'))).toEqual([
      'watches.yaml:5:23: entry 0 (example.com/v1alpha1, Kind=Nginx): field "allowClusterScoped": has no effect without confineToNamespace: true',
    ]);
  });

  it('allowKinds: the kinds helm may write for the watch, strictly validated; absent means any', async () => {
    expect((await parse(lines(...NGINX, '  allowKinds: [Deployment.apps, Service, ConfigMap]')))[0]).toMatchObject({
      allowKinds: ['Deployment.apps', 'Service', 'ConfigMap'],
    });
    expect((await parse(lines(...NGINX)))[0]).not.toHaveProperty('allowKinds');
    expect(await messagesOf(lines(...NGINX, '  allowKinds: [deployment, 3]'))).toEqual([
      'watches.yaml:5:16: entry 0 (example.com/v1alpha1, Kind=Nginx): field "allowKinds[0]": expected "Kind" (core group) or "Kind.group", got string "deployment"',
      'watches.yaml:5:28: entry 0 (example.com/v1alpha1, Kind=Nginx): field "allowKinds[1]": expected "Kind" (core group) or "Kind.group", got number 3',
    ]);
    expect(await messagesOf(lines(...NGINX, '  allowKinds: []'))).toEqual([
      'watches.yaml:5:15: entry 0 (example.com/v1alpha1, Kind=Nginx): field "allowKinds": an empty list would refuse every object of every release; list the kinds the chart renders, or remove the key',
    ]);
  });

  it('adoptReleases (the operator-sdk migration switch) is off unless set to true, and strictly a boolean', async () => {
    expect((await parse(lines(...NGINX, '  adoptReleases: true')))[0]).toMatchObject({ adoptReleases: true });
    expect((await parse(lines(...NGINX)))[0]).not.toHaveProperty('adoptReleases');
    expect((await parse(lines(...NGINX, '  adoptReleases: false')))[0]).not.toHaveProperty('adoptReleases');
    expect(await messagesOf(lines(...NGINX, '  adoptReleases: "yes"'))).toEqual([
      'watches.yaml:5:18: entry 0 (example.com/v1alpha1, Kind=Nginx): field "adoptReleases": expected true or false, got string "yes"',
    ]);
    expect(await messagesOf(lines(...NGINX, '  adoptRelease: true'))).toEqual([
      expect.stringContaining('unknown field "adoptRelease" (did you mean "adoptReleases"?)'),
    ]);
  });

  it('dryRunOption: server with confineToNamespace: true makes the pre-flight a server dry run', async () => {
    const [w] = await parse(lines(...NGINX, '  confineToNamespace: true', '  dryRunOption: server'));
    expect(w).toMatchObject({ confineToNamespace: true, dryRunOption: 'server' });
  });

  it.each([
    ['absent', []],
    ['false', ['  confineToNamespace: false']],
  ])('refuses dryRunOption: server with confineToNamespace %s, at its line, saying why', async (_, confine) => {
    const err = await problemsOf(lines(...NGINX, ...confine, '  dryRunOption: server'));
    const line = 5 + confine.length;
    expect(err.problems.map((p) => p.message)).toEqual([
      `watches.yaml:${line}:17: entry 0 (example.com/v1alpha1, Kind=Nginx): field "dryRunOption": server has no effect without confineToNamespace: true: this operator decides upgrades by a fingerprint of the chart and values, not by a dry-run render, so the only dry run is the confineToNamespace pre-flight render; set confineToNamespace: true or remove dryRunOption`,
    ]);
    expect(err).toMatchObject({ file: 'watches.yaml', line, column: 17, entry: 0, field: 'dryRunOption' });
  });

  it('a malformed confineToNamespace is reported once, not again through dryRunOption', async () => {
    expect(await messagesOf(lines(...NGINX, '  confineToNamespace: "yes"', '  dryRunOption: server'))).toEqual([
      'watches.yaml:5:23: entry 0 (example.com/v1alpha1, Kind=Nginx): field "confineToNamespace": expected true or false, got string "yes"',
    ]);
  });

  it.each(['""', 'client', 'none'])('accepts dryRunOption: %s with or without confineToNamespace (the offline render)', async (option) => {
    const [plain] = await parse(lines(...NGINX, `  dryRunOption: ${option}`));
    expect(plain).toMatchObject({ confineToNamespace: false, dryRunOption: 'client' });
    const [confined] = await parse(lines(...NGINX, '  confineToNamespace: true', `  dryRunOption: ${option}`));
    expect(confined).toMatchObject({ confineToNamespace: true, dryRunOption: 'client' });
  });

  it('points selector problems at the offending node', async () => {
    const messages = await messagesOf(
      lines(
        ...NGINX,
        '  selector:',
        '    matchExpressions:',
        '      - key: env',
        '        operator: in',
        '        values: [prod]',
        '      - key: tier',
        '        operator: Exists',
        '        values: [x]',
      ),
    );
    expect(messages).toEqual([
      expect.stringMatching(
        /^watches\.yaml:8:19: entry 0 \(.*\): field "selector\.matchExpressions\[0\]\.operator": unknown operator string "in".*\(did you mean "In"\?\)$/,
      ),
      'watches.yaml:12:17: entry 0 (example.com/v1alpha1, Kind=Nginx): field "selector.matchExpressions[1].values": operator Exists takes no values',
    ]);
  });

  it('rejects nested maps, lists, nulls and Go templates in overrideValues', async () => {
    const messages = await messagesOf(
      lines(
        ...NGINX,
        '  overrideValues:',
        '    image:',
        '      tag: v1',
        '    args: [a, b]',
        '    empty:',
        '    tpl: \'{{ ("$IMAGE" | split ":")._0 }}\'',
        '    bad..key: x',
      ),
    );
    const prefix = 'entry 0 (example.com/v1alpha1, Kind=Nginx): field';
    expect(messages).toEqual([
      `watches.yaml:7:7: ${prefix} "overrideValues.image": nested maps are not supported; flatten them into dotted keys such as "image.tag"`,
      `watches.yaml:8:11: ${prefix} "overrideValues.args": lists are not supported; use indexed keys such as "args[0]"`,
      `watches.yaml:9:11: ${prefix} "overrideValues.empty": value is empty (null); write '' for an empty string`,
      `watches.yaml:10:10: ${prefix} "overrideValues.tpl": Go templates in overrideValues are not supported; use $VAR expansion (e.g. "$IMAGE") instead`,
      expect.stringMatching(/^watches\.yaml:11:5: .*field "overrideValues": key "bad\.\.key" is not a value path/),
    ]);
  });

  it('refuses overrideValues keys a hostile path would loop or allocate on, at their line', async () => {
    const messages = await messagesOf(lines(...NGINX, '  overrideValues:', '    "a[": x', '    a[4294967294]: x', '    a[-1]: x'));
    const prefix = 'entry 0 (example.com/v1alpha1, Kind=Nginx): field "overrideValues"';
    expect(messages).toEqual([
      `watches.yaml:6:5: ${prefix}: key "a[" is not a value path ("[" at character 2 is not closed by "]"): use dotted names with optional [index], e.g. "image.tag" or "args[0]"`,
      `watches.yaml:7:5: ${prefix}: key "a[4294967294]" is not a value path (index "4294967294" at character 3 is larger than 65536): use dotted names with optional [index], e.g. "image.tag" or "args[0]"`,
      `watches.yaml:8:5: ${prefix}: key "a[-1]" is not a value path (index "-1" at character 3 is not a number from 0 to 65536): use dotted names with optional [index], e.g. "image.tag" or "args[0]"`,
    ]);
  });

  it('accepts --set-string style keys', async () => {
    const watches = await parse(lines(...NGINX, '  overrideValues:', '    args[0]: a', '    a.b[1].c: d', '    dotted\\.name: x'));
    expect(Object.keys(watches[0]?.overrideValues ?? {})).toEqual(['args[0]', 'a.b[1].c', 'dotted\\.name']);
  });

  it('rejects a duplicate GVK, naming both entries and lines', async () => {
    const messages = await messagesOf(lines(...NGINX, ...NGINX));
    expect(messages).toEqual([
      'watches.yaml:7:9: entry 1 (example.com/v1alpha1, Kind=Nginx): field "kind": duplicate GVK example.com/v1alpha1, Kind=Nginx: also defined by entry 0 (line 1)',
    ]);
  });

  it('rejects the same group and kind at another version', async () => {
    const messages = await messagesOf(lines(...NGINX, ...NGINX.map((l) => l.replace('v1alpha1', 'v1beta1'))));
    expect(messages).toEqual([
      expect.stringMatching(
        /^watches\.yaml:7:9: entry 1 .*kind Nginx of group "example\.com" is already watched at version v1alpha1 by entry 0 \(line 1\)/,
      ),
    ]);
  });

  it('reports charts that are missing or not charts', async () => {
    await mkdir(join(tmp, 'not-a-chart'));
    await writeFile(join(tmp, 'file.txt'), 'x');
    const messages = await messagesOf(
      lines(
        ...NGINX.map((l) => l.replace('helm-charts/nginx', 'helm-charts/missing')),
        ...NGINX.map((l) => l.replace('Nginx', 'A').replace('helm-charts/nginx', 'not-a-chart')),
        ...NGINX.map((l) => l.replace('Nginx', 'B').replace('helm-charts/nginx', 'file.txt')),
      ),
    );
    expect(messages).toEqual([
      `watches.yaml:4:10: entry 0 (example.com/v1alpha1, Kind=Nginx): field "chart": chart ${JSON.stringify(join(tmp, 'helm-charts/missing'))} does not exist`,
      `watches.yaml:8:10: entry 1 (example.com/v1alpha1, Kind=A): field "chart": chart directory ${JSON.stringify(join(tmp, 'not-a-chart'))} has no Chart.yaml`,
      expect.stringMatching(
        /^watches\.yaml:12:10: entry 2 .*field "chart": not a chart: .*file\.txt" is neither a chart directory nor a gzipped chart archive/,
      ),
    ]);
  });

  it('collects every problem across entries, in file order', async () => {
    const text = lines(
      '- group: example.com', //           1
      '  version: v1alpha1', //            2
      '  kind: Nginx', //                  3
      '  chart: helm-charts/nope', //      4  chart missing
      '  reconcilePeriod: soon', //        5  bad duration
      '  maxConcurrentReconciles: 0', //   6  not positive
      '- group: example.com', //           7
      '  version: v1alpha1', //            8
      '  kind: Nginx', //                  9  duplicate GVK
      '  chart: helm-charts/nginx', //     10
      '  overideValues: {}', //            11 unknown field
      '  dryRunOption: always', //         12 bad option
      '- kind: lower', //                  13 bad kind; missing version and chart
    );
    const err = await problemsOf(text);
    expect(err.problems.map((p) => [p.line, p.entry, p.field])).toEqual([
      [4, 0, 'chart'],
      [5, 0, 'reconcilePeriod'],
      [6, 0, 'maxConcurrentReconciles'],
      [9, 1, 'kind'],
      [11, 1, 'overideValues'],
      [12, 1, 'dryRunOption'],
      [13, 2, 'version'], // at the entry (13:3): missing
      [13, 2, 'chart'], // at the entry (13:3): missing
      [13, 2, 'kind'], // at the value (13:9)
    ]);
    const messageLines = err.message.split('\n');
    expect(messageLines[0]).toBe('invalid watches file watches.yaml: 9 problems');
    expect(messageLines.slice(1)).toEqual(err.problems.map((p) => p.message));
    expect(err).toMatchObject({ file: 'watches.yaml', line: 4, column: 10, entry: 0, field: 'chart' });
  });
});

describe('expandEnv (Go os.ExpandEnv semantics)', () => {
  const env = { IMAGE: 'quay.io/x:1', A: 'a', EMPTY: '' };
  it.each([
    ['$IMAGE', 'quay.io/x:1'],
    ['${IMAGE}', 'quay.io/x:1'],
    ['pre-${A}-post', 'pre-a-post'],
    ['$A$A', 'aa'],
    ['$A.b', 'a.b'],
    ['$UNSET', ''],
    ['x${UNSET}y', 'xy'],
    ['$EMPTY', ''],
    ['$$', ''], // `$$` is the special variable "$", not an escape
    ['cost: 5$', 'cost: 5$'], // trailing $ stays
    ['a $ b', 'a $ b'], // $ without a name stays
    ['${}', ''], // bad syntax is eaten
    ['${A', 'A'], // unclosed: "${" eaten
    ['$1', ''],
    ['${A:-default}', ''], // no shell defaults: the name is "A:-default"
    ['no vars', 'no vars'],
  ])('%s -> %j', (input, output) => {
    expect(expandEnv(input, env)).toBe(output);
  });
});

describe('closestName', () => {
  const known = ['group', 'version', 'kind', 'chart', 'overrideValues', 'selector', 'reconcilePeriod', 'maxConcurrentReconciles'];
  it.each([
    ['overideValues', 'overrideValues'],
    ['Kind', 'kind'],
    ['reconcile_period', 'reconcilePeriod'],
    ['maxConcurrentReconcile', 'maxConcurrentReconciles'],
    ['labelSelector', 'selector'],
    ['versoin', 'version'],
  ])('%s -> %s', (word, expected) => {
    expect(closestName(word, known)).toBe(expected);
  });

  it('stays quiet when nothing is close', () => {
    expect(closestName('frobnicate', known)).toBeUndefined();
    expect(closestName('x', known)).toBeUndefined();
  });
});
