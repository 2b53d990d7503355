import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  HelmOutputError,
  parseDryRunManifest,
  parseHelmVersion,
  parseHistoryJson,
  parseJsonOutput,
  parseMetadataJson,
  parseReleaseJson,
  uninstalledRelease,
} from '../../../src/helm/parse.js';
import { jsonDigest } from '../../../src/util/canonical-json.js';

/**
 * Real output of each binary (fixtures/helm-<version>-*.json), captured with the memory storage
 * driver seeded with release "web" (revision 1 superseded, revision 2 deployed, values
 * `{password: s3cret}`) and a client-side dry-run install of a one-ConfigMap chart.
 */
const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const has = (name: string): boolean => existsSync(new URL(`./fixtures/${name}`, import.meta.url));

describe.each(['helm-v4.1.4', 'helm-v3.21.4'])('%s JSON', (v) => {
  const present = has(`${v}-status.json`);

  it.skipIf(!present)('status: everything but the chart, and of the values only their digest', () => {
    const rel = parseReleaseJson(fixture(`${v}-status.json`), 'status');
    expect(rel).toEqual({
      valuesDigest: jsonDigest({ password: 's3cret' }),
      name: 'web',
      namespace: 'ns1',
      revision: 2,
      status: 'deployed',
      notes: 'hello',
      manifest: 'a: 2\n',
      deleteHooks: false,
      description: 'Upgrade complete',
      firstDeployed: '2026-01-01T00:00:00Z',
      lastDeployed: '2026-01-02T00:00:00Z',
    });
    expect(fixture(`${v}-status.json`)).toContain('s3cret'); // helm prints the values…
    expect(JSON.stringify(rel)).not.toContain('s3cret'); // …we drop them
  });

  // v4: a client-side dry run (pending-install); v3 needs a cluster even for that, so a real install.
  it.skipIf(!has(`${v}-install.json`))('install: chart metadata', () => {
    const rel = parseReleaseJson(fixture(`${v}-install.json`), 'install');
    expect(rel.chart).toEqual({ name: 'tiny', version: '0.1.0', appVersion: '1.0.0' });
    expect(rel).toMatchObject({ name: 'rel', namespace: 'ns1', revision: 1, notes: 'Hello from rel\n' });
    expect(['pending-install', 'deployed']).toContain(rel.status);
    expect(rel.manifest).toContain('kind: ConfigMap');
    expect(fixture(`${v}-install.json`)).toContain('"config":{"greeting":"hi"}');
    expect(Object.keys(rel)).not.toContain('config');
    expect(rel.valuesDigest).toBe(jsonDigest({ greeting: 'hi' }));
  });

  it.skipIf(!present)('values helm leaves out (empty: `omitempty`) have the digest of no values', () => {
    const doc = JSON.parse(fixture(`${v}-status.json`)) as Record<string, unknown>;
    delete doc.config;
    expect(parseReleaseJson(JSON.stringify(doc), 'status').valuesDigest).toBe(jsonDigest({}));
  });

  it.skipIf(!present)('get metadata', () => {
    expect(parseMetadataJson(fixture(`${v}-metadata.json`), 'get metadata')).toEqual({
      revision: 2,
      chart: { name: 'tiny', version: '0.2.0' },
    });
  });

  it.skipIf(!present)('history', () => {
    expect(parseHistoryJson(fixture(`${v}-history.json`), 'history')).toEqual([
      {
        revision: 1,
        status: 'superseded',
        chart: 'tiny-0.1.0',
        appVersion: '1.0.0',
        description: 'Install complete',
        updated: '2026-01-01T00:00:00Z',
      },
      {
        revision: 2,
        status: 'deployed',
        chart: 'tiny-0.2.0',
        appVersion: '',
        description: 'Upgrade complete',
        updated: '2026-01-02T00:00:00Z',
      },
    ]);
  });
});

/**
 * `helm upgrade --install --dry-run=server -o json` and `helm template` of
 * test/fixtures/charts/lookup-gate (values `{marker: absent, password: s3cret}`, namespace ns1, on a
 * real cluster), captured from each binary: the same render, so the same text.
 */
describe.each(['helm-v4.1.4', 'helm-v3.21.4'])('%s server dry run', (v) => {
  it.skipIf(!has(`${v}-dry-run-server.json`))('lays the manifest and the hooks out exactly as helm template prints them', () => {
    const json = fixture(`${v}-dry-run-server.json`);
    const manifest = parseDryRunManifest(json, 'dry-run');
    expect(manifest).toBe(fixture(`${v}-template.txt`));
    expect(manifest).toContain(
      '# Source: lookup-gate/templates/hook.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rel-pre-hook',
    );
    expect(json).toContain('s3cret'); // helm prints the values…
    expect(manifest).not.toContain('s3cret'); // …the render does not carry them
  });
});

describe('parseDryRunManifest', () => {
  it('no hooks, an empty manifest, a hook without a path', () => {
    expect(parseDryRunManifest('{"manifest":"---\\n# Source: c/templates/a.yaml\\na: 1\\n\\n"}', 'x')).toBe(
      '---\n# Source: c/templates/a.yaml\na: 1\n',
    );
    expect(parseDryRunManifest('{"hooks":[]}', 'x')).toBe('\n');
    expect(parseDryRunManifest('{"manifest":"a: 1","hooks":[{"manifest":"b: 2"}]}', 'x')).toBe('a: 1\n---\n# Source: \nb: 2\n');
  });

  it('rejects what helm does not print', () => {
    expect(() => parseDryRunManifest('Release "x" does not exist. Installing it now.', 'x')).toThrow(HelmOutputError);
    expect(() => parseDryRunManifest('[]', 'x')).toThrow(/not a JSON object/);
    expect(() => parseDryRunManifest('{"manifest":3}', 'x')).toThrow(/"manifest" is not a string/);
    expect(() => parseDryRunManifest('{"hooks":{}}', 'x')).toThrow(/"hooks" is not a list/);
    expect(() => parseDryRunManifest('{"hooks":["a"]}', 'x')).toThrow(/hooks\[0\]: not an object/);
    expect(() => parseDryRunManifest('{"hooks":[{"path":"p","manifest":1}]}', 'x')).toThrow(/"manifest" is not a string/);
  });
});

describe('helm 4 extras from a real cluster', () => {
  it('status -o json also prints the live resources (info.resources); they are ignored', () => {
    const text = fixture('helm-v4.1.4-status-with-resources.json');
    expect(text).toContain('"resources":{"v1/ConfigMap"');
    const rel = parseReleaseJson(text, 'status');
    expect(rel).toMatchObject({ name: 'rel', namespace: 'ns1', revision: 1, status: 'deployed' });
    expect(Object.keys(rel)).not.toContain('resources');
  });

  it('get metadata prints the storage labels; only the user ones are kept', () => {
    expect(parseMetadataJson(fixture('helm-v4.1.4-metadata-with-labels.json'), 'get metadata')).toEqual({
      revision: 1,
      chart: { name: 'tiny', version: '0.1.0', appVersion: '1.0.0' },
      labels: { team: 'a', tier: 'web' },
    });
  });
});

describe('validators reject what helm does not print', () => {
  it('non-JSON, wrong types, missing fields', () => {
    expect(() => parseReleaseJson('Release "x" has been upgraded.', 'upgrade')).toThrow(HelmOutputError);
    expect(() => parseReleaseJson('[]', 'status')).toThrow(/not a JSON object/);
    expect(() => parseReleaseJson('{"name":"x","namespace":"n","version":1}', 'status')).toThrow(/missing "info"/);
    expect(() => parseReleaseJson('{"name":"x","namespace":"n","version":"1","info":{"status":"deployed"}}', 'status')).toThrow(/revision/);
    expect(() => parseReleaseJson('{"name":"x","namespace":"n","version":1,"info":{"status":3}}', 'status')).toThrow(
      /"status" is not a string/,
    );
    expect(() => parseHistoryJson('{}', 'history')).toThrow(/array/);
    expect(() => parseMetadataJson('{"revision":1,"chart":"c"}', 'get metadata')).toThrow(/missing "version"/);
  });

  it('maps an unknown status to unknown and defaults omitted strings', () => {
    const rel = parseReleaseJson('{"name":"x","namespace":"n","version":1,"info":{"status":"brand-new"}}', 'status');
    expect(rel).toEqual({
      name: 'x',
      namespace: 'n',
      revision: 1,
      status: 'unknown',
      notes: '',
      manifest: '',
      deleteHooks: false,
      description: '',
      valuesDigest: jsonDigest({}),
    });
  });

  it('tells whether a hook runs on uninstall from hooks[].events', () => {
    const doc = (hooks: unknown): string => JSON.stringify({ name: 'x', namespace: 'n', version: 1, info: { status: 'deployed' }, hooks });
    expect(parseReleaseJson(doc([{ name: 'a', events: ['pre-install', 'post-upgrade'] }, { name: 'b' }]), 'status').deleteHooks).toBe(
      false,
    );
    expect(
      parseReleaseJson(
        doc([
          { name: 'a', events: ['pre-install'] },
          { name: 'b', events: ['post-delete'] },
        ]),
        'status',
      ).deleteHooks,
    ).toBe(true);
    expect(parseReleaseJson(doc([{ name: 'a', events: ['pre-delete'] }]), 'install').deleteHooks).toBe(true);
    expect(() => parseReleaseJson(doc({ events: ['pre-delete'] }), 'status')).toThrow(/"hooks" is not a list/);
    expect(() => parseReleaseJson(doc([{ events: 'pre-delete' }]), 'status')).toThrow(/hooks\[0\]: "events" is not a list/);
  });

  it('skips a line printed before the JSON document', () => {
    expect(parseJsonOutput('WARNING: something\n{"a":1}\n', 'x')).toEqual({ a: 1 });
  });
});

describe('parseHelmVersion', () => {
  it.each([
    ['v4.1.4', { major: 4, semver: '4.1.4' }],
    ['v3.21.4\n', { major: 3, semver: '3.21.4' }],
    ['v3.13.0', { major: 3, semver: '3.13.0' }],
    ['v4.0.0-rc.1', { major: 4, semver: '4.0.0-rc.1' }],
    ['v4.1.4+g05fa379', { major: 4, semver: '4.1.4' }],
  ])('%s', (out, expected) => {
    expect(parseHelmVersion(out)).toEqual(expected);
  });

  it('rejects old, unknown and garbage versions', () => {
    expect(() => parseHelmVersion('v3.12.3')).toThrow(/too old: need >= 3.13.0/);
    expect(() => parseHelmVersion('v2.17.0')).toThrow(/not supported/);
    expect(() => parseHelmVersion('v5.0.0')).toThrow(/not supported/);
    expect(() => parseHelmVersion('hello')).toThrow(/cannot parse/);
  });
});

describe('uninstalledRelease', () => {
  it('reads the release from the line helm 3 and 4 print as each release is gone', () => {
    expect(uninstalledRelease('release "web-1" uninstalled')).toBe('web-1');
    expect(uninstalledRelease('release "web-1" uninstalled\r')).toBe('web-1');
  });

  it('ignores every other line', () => {
    expect(uninstalledRelease('These resources were kept due to the resource policy:')).toBeUndefined();
    expect(uninstalledRelease('[ConfigMap] keep-me')).toBeUndefined();
    expect(uninstalledRelease('release "web" uninstalled, mostly')).toBeUndefined();
    expect(uninstalledRelease('')).toBeUndefined();
  });
});
