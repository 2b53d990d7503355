import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HelmClient } from '../../../src/helm/index.js';
import { parseManifest, renderedBody } from '../../../src/reconciler/objects/inventory.js';
import { createNamespace, testKubeConfig } from '../../support/kube.js';
import { fixtureChart } from '../../support/operator.js';

const run = promisify(execFile);

/**
 * Differential: the yaml11 chart spells values the YAML 1.1 way (octal modes, yes/no/on/off,
 * hex, underscores, merge keys, duplicate keys). The real helm installs it; what the API server
 * stored is what helm sent. What this project reads from the release's manifest (`helm get
 * manifest`, through the reader the operator repairs drift with) must be the same, field by field.
 * Read as YAML 1.2, half of these rows fail: defaultMode 400 instead of 256, `no` a string, ….
 */
type Row = [what: string, kind: 'Deployment' | 'ConfigMap', path: (string | number)[], helm: unknown];
const POD = ['spec', 'template', 'spec'];
const ROWS: Row[] = [
  ['octal 0400 (a read-only mount)', 'Deployment', [...POD, 'volumes', 0, 'configMap', 'defaultMode'], 256],
  ['octal 0755', 'Deployment', [...POD, 'volumes', 1, 'secret', 'defaultMode'], 493],
  ['binary 0b110100100', 'Deployment', [...POD, 'volumes', 0, 'configMap', 'items', 0, 'mode'], 420],
  ['0o octal', 'Deployment', ['spec', 'revisionHistoryLimit'], 10],
  ['hex 0x258', 'Deployment', ['spec', 'progressDeadlineSeconds'], 600],
  ['hex 0X2D', 'Deployment', [...POD, 'terminationGracePeriodSeconds'], 45],
  ['underscores 1_0', 'Deployment', ['spec', 'minReadySeconds'], 10],
  ['no', 'Deployment', [...POD, 'enableServiceLinks'], false],
  ['Off', 'Deployment', [...POD, 'automountServiceAccountToken'], false],
  ['YES', 'Deployment', [...POD, 'shareProcessNamespace'], true],
  ['yes (optional)', 'Deployment', [...POD, 'volumes', 1, 'secret', 'optional'], true],
  ['Y', 'Deployment', [...POD, 'containers', 0, 'stdin'], true],
  ['on', 'Deployment', [...POD, 'containers', 0, 'tty'], true],
  ['y', 'Deployment', [...POD, 'containers', 0, 'volumeMounts', 0, 'readOnly'], true],
  [
    'a merge key and an alias',
    'Deployment',
    ['spec', 'template', 'metadata', 'labels'],
    { 'app.kubernetes.io/name': 'yaml11', 'app.kubernetes.io/instance': 'y11', tier: 'web' },
  ],
  [
    'strings YAML 1.1 keeps, an `on` key, merge order, duplicate keys',
    'ConfigMap',
    ['data'],
    {
      settings: 'read-only',
      sexagesimal: '1:20',
      date: '2001-12-14',
      quoted: '0400',
      true: 'key-is-true',
      before: 'merged',
      after: 'explicit',
      only: 'merged',
      twice: 'second',
    },
  ],
];

const at = (value: unknown, p: readonly (string | number)[]): unknown =>
  p.reduce<unknown>((v, k) => (v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined), value);

const binaries = [
  { major: 4 as const, bin: inject('helmBin') },
  { major: 3 as const, bin: inject('helm3Bin') },
].filter((b) => b.bin !== '' && existsSync(b.bin));

describe.each(binaries)('YAML 1.1 in a manifest, as helm v$major sends it and the operator reads it', ({ major, bin }) => {
  const kubeconfig = inject('kubeconfigPath');
  let ns: { name: string; remove: () => Promise<void> };
  let work: string;
  const live = new Map<string, unknown>();
  const parsed = new Map<string, unknown>();

  beforeAll(async () => {
    ns = await createNamespace(testKubeConfig(), `yaml11-v${major}`);
    work = await mkdtemp(path.join(tmpdir(), 'yaml11-'));
    const helm = new HelmClient({ binary: bin, kubeconfig, tmpDir: work });
    await helm.install({ release: 'y11', namespace: ns.name, chart: fixtureChart('yaml11'), values: {} });
    const manifest = (
      await run(bin, ['get', 'manifest', 'y11', '--namespace', ns.name], {
        env: { ...process.env, KUBECONFIG: kubeconfig },
        timeout: 60_000,
      })
    ).stdout;
    for (const o of parseManifest(manifest)) parsed.set(o.kind, renderedBody(o));
    for (const [kind, name] of [
      ['Deployment', 'y11-app'],
      ['ConfigMap', 'y11-config'],
    ] as const) {
      const out = await run(inject('kubectlBin'), ['--kubeconfig', kubeconfig, '-n', ns.name, 'get', kind, name, '-o', 'json'], {
        timeout: 30_000,
      });
      live.set(kind, JSON.parse(out.stdout));
    }
  });
  afterAll(async () => {
    await ns.remove();
    await rm(work, { recursive: true, force: true });
  });

  it.each(ROWS)('%s: what helm sent equals what the operator reads', (_what, kind, p, helm) => {
    expect({ stored: at(live.get(kind), p), read: at(parsed.get(kind), p) }).toEqual({ stored: helm, read: helm });
  });

  it('~ is null: read as null, which the API server drops', () => {
    expect(at(parsed.get('Deployment'), [...POD, 'nodeSelector'])).toBeNull();
    expect(at(live.get('Deployment'), [...POD, 'nodeSelector'])).toBeUndefined();
  });
});
