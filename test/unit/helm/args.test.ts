import { describe, expect, it } from 'vitest';
import {
  formatGoDuration,
  formatLabels,
  historyArgs,
  installArgs,
  metadataArgs,
  rollbackArgs,
  serverDryRunArgs,
  statusArgs,
  templateArgs,
  uninstallArgs,
  upgradeArgs,
  versionArgs,
  withConnectionArgs,
} from '../../../src/helm/args.js';

const base = { release: 'web', namespace: 'demo', chart: '/charts/nginx', valuesFile: '/tmp/v/values.json', timeoutMs: 300_000 };

describe('formatGoDuration', () => {
  it.each([
    [300_000, '5m0s'],
    [30_000, '30s'],
    [90_000, '1m30s'],
    [3_600_000, '1h0m0s'],
    [3_723_000, '1h2m3s'],
    [1500, '1500ms'],
    [0.5, '1ms'],
  ])('%d ms → %s', (ms, expected) => {
    expect(formatGoDuration(ms)).toBe(expected);
  });

  it('rejects non-positive and non-finite values', () => {
    expect(() => formatGoDuration(0)).toThrow(RangeError);
    expect(() => formatGoDuration(-1)).toThrow(RangeError);
    expect(() => formatGoDuration(Number.NaN)).toThrow(RangeError);
  });
});

describe('formatLabels', () => {
  it('sorts keys and joins k=v with commas', () => {
    expect(formatLabels({ 'helm.example.com/owner-uid': 'abc-123', app: 'web', empty: '' })).toBe(
      'app=web,empty=,helm.example.com/owner-uid=abc-123',
    );
  });

  it.each([['name'], ['owner'], ['status'], ['version'], ['createdAt'], ['modifiedAt']])('rejects helm-reserved key %s', (key) => {
    expect(() => formatLabels({ [key]: 'x' })).toThrow(/reserved/);
  });

  it('rejects what --labels would split or Kubernetes would refuse', () => {
    expect(() => formatLabels({ a: 'b,c=d' })).toThrow(TypeError);
    expect(() => formatLabels({ 'a=b': 'c' })).toThrow(TypeError);
    expect(() => formatLabels({ a: 'x'.repeat(64) })).toThrow(TypeError);
    expect(() => formatLabels({ '': 'x' })).toThrow(TypeError);
  });
});

describe('installArgs', () => {
  it('v4: flags, then -- and the positionals; no --wait by default', () => {
    expect(installArgs(base, 4)).toEqual([
      'install',
      '--namespace',
      'demo',
      '--values',
      '/tmp/v/values.json',
      '--output',
      'json',
      '--disable-openapi-validation',
      '--timeout',
      '5m0s',
      '--',
      'web',
      '/charts/nginx',
    ]);
  });

  it("skips helm's client-side OpenAPI check on install and upgrade, in v3 and v4", () => {
    for (const major of [3, 4] as const) {
      expect(installArgs(base, major)).toContain('--disable-openapi-validation');
      expect(upgradeArgs({ ...base, force: false }, major)).toContain('--disable-openapi-validation');
      expect(upgradeArgs({ ...base, force: true }, major)).toContain('--disable-openapi-validation');
    }
  });

  it('v3 and v4 spell --wait differently (v4 takes a strategy and needs =)', () => {
    expect(installArgs({ ...base, wait: true }, 3)).toContain('--wait');
    expect(installArgs({ ...base, skipCrds: true }, 4)).toContain('--skip-crds');
    expect(installArgs(base, 4)).not.toContain('--skip-crds');
    expect(installArgs({ ...base, wait: true }, 4)).toContain('--wait=legacy');
    expect(installArgs({ ...base, wait: true }, 4)).not.toContain('--wait');
  });

  it('install: --force-conflicts on v4 when asked (objects that exist with the release annotations), never on v3', () => {
    expect(installArgs({ ...base, forceConflicts: true }, 4)).toContain('--force-conflicts');
    expect(installArgs(base, 4)).not.toContain('--force-conflicts');
    expect(installArgs({ ...base, forceConflicts: true }, 3)).not.toContain('--force-conflicts');
  });

  it("v4 waits for readiness with the legacy waiter, never kstatus's watcher, which holds a custom resource it cannot read until --timeout (ADR 0076)", () => {
    for (const args of [
      installArgs({ ...base, wait: true }, 4),
      upgradeArgs({ ...base, wait: true }, 4),
      rollbackArgs({ release: 'web', namespace: 'demo', timeoutMs: 60_000, wait: true }, 4),
    ]) {
      expect(args).toContain('--wait=legacy');
      expect(args.some((a) => a === '--wait=watcher' || a === '--wait')).toBe(false);
    }
    // Without it, nothing waits but hooks (v4's hookOnly default): what the reconciler runs.
    for (const args of [
      installArgs(base, 4),
      upgradeArgs(base, 4),
      rollbackArgs({ release: 'web', namespace: 'demo', timeoutMs: 60_000 }, 4),
    ]) {
      expect(args.some((a) => a.startsWith('--wait') || a === '--rollback-on-failure' || a === '--atomic')).toBe(false);
    }
  });

  it('adds labels and the description', () => {
    const args = installArgs({ ...base, labels: { b: '2', a: '1' }, description: '-x from CR' }, 3);
    expect(args).toEqual(expect.arrayContaining(['--labels', 'a=1,b=2', '--description=-x from CR']));
    expect(args.indexOf('--labels')).toBeLessThan(args.indexOf('--'));
  });

  it('never passes --set', () => {
    for (const major of [3, 4] as const) {
      expect(installArgs({ ...base, labels: { a: 'b' }, wait: true }, major).some((a) => a.startsWith('--set'))).toBe(false);
      expect(upgradeArgs({ ...base, force: true }, major).some((a) => a.startsWith('--set'))).toBe(false);
    }
  });

  it('keeps a dash-leading release name positional', () => {
    expect(installArgs({ ...base, release: '--kubeconfig=/etc/x' }, 4).slice(-3)).toEqual(['--', '--kubeconfig=/etc/x', '/charts/nginx']);
  });
});

describe('upgradeArgs', () => {
  it('v3: --reset-values, --force', () => {
    expect(upgradeArgs({ ...base, force: true, historyMax: 5, timeoutMs: 90_000 }, 3)).toEqual([
      'upgrade',
      '--namespace',
      'demo',
      '--values',
      '/tmp/v/values.json',
      '--output',
      'json',
      '--disable-openapi-validation',
      '--timeout',
      '1m30s',
      '--reset-values',
      '--force',
      '--history-max',
      '5',
      '--',
      'web',
      '/charts/nginx',
    ]);
  });

  it('v4: --force-replace with client-side apply, --wait=legacy', () => {
    const args = upgradeArgs({ ...base, force: true, wait: true }, 4);
    expect(args).toContain('--force-replace');
    // helm 4 refuses --force-replace together with server-side apply (its default).
    expect(args).toContain('--server-side=false');
    expect(args).not.toContain('--server-side=true');
    expect(args).not.toContain('--force-conflicts');
    expect(args).not.toContain('--force');
    expect(args).toContain('--wait=legacy');
    expect(args).toContain('--reset-values');
    expect(args).not.toContain('--install');
  });

  it('v4: server-side apply always (a client-side release moves over), --force-conflicts when asked', () => {
    expect(upgradeArgs(base, 4).filter((a) => a.startsWith('--server-side') || a.startsWith('--force'))).toEqual(['--server-side=true']);
    expect(
      upgradeArgs({ ...base, forceConflicts: true }, 4).filter((a) => a.startsWith('--server-side') || a.startsWith('--force')),
    ).toEqual(['--server-side=true', '--force-conflicts']);
    // The flags come before the terminator.
    const args = upgradeArgs({ ...base, forceConflicts: true }, 4);
    expect(args.indexOf('--force-conflicts')).toBeLessThan(args.indexOf('--'));
    // helm 3 has no server-side apply.
    expect(upgradeArgs({ ...base, forceConflicts: true }, 3).some((a) => a.startsWith('--server-side') || a === '--force-conflicts')).toBe(
      false,
    );
  });

  it('rejects a bad historyMax', () => {
    expect(() => upgradeArgs({ ...base, historyMax: -1 }, 4)).toThrow(RangeError);
  });
});

describe('uninstallArgs', () => {
  it.each([
    [3, ['uninstall', '--namespace', 'demo', '--timeout', '5m0s', '--', 'web']],
    // helm 4 gives the cause of a failed uninstall only in its debug log.
    [4, ['uninstall', '--namespace', 'demo', '--timeout', '5m0s', '--debug', '--', 'web']],
  ] as const)('v%d default', (major, expected) => {
    expect(uninstallArgs({ release: 'web', namespace: 'demo', timeoutMs: 300_000 }, major)).toEqual(expected);
  });

  it('more releases of the namespace go after the first, as positionals', () => {
    expect(uninstallArgs({ release: 'web', also: ['-x', 'db'], namespace: 'demo', timeoutMs: 300_000 }, 3)).toEqual([
      'uninstall',
      '--namespace',
      'demo',
      '--timeout',
      '5m0s',
      '--',
      'web',
      '-x',
      'db',
    ]);
  });

  it('wait and keepHistory', () => {
    const o = { release: 'web', namespace: 'demo', timeoutMs: 60_000, wait: true, keepHistory: true };
    expect(uninstallArgs(o, 3)).toEqual(['uninstall', '--namespace', 'demo', '--timeout', '1m0s', '--wait', '--keep-history', '--', 'web']);
    expect(uninstallArgs(o, 4)).toEqual([
      'uninstall',
      '--namespace',
      'demo',
      '--timeout',
      '1m0s',
      '--debug',
      '--wait=watcher',
      '--keep-history',
      '--',
      'web',
    ]);
  });
});

describe('rollbackArgs', () => {
  const o = { release: 'web', namespace: 'demo', timeoutMs: 300_000 };
  it('previous revision by default, explicit revision when given', () => {
    expect(rollbackArgs(o, 3)).toEqual(['rollback', '--namespace', 'demo', '--timeout', '5m0s', '--', 'web']);
    expect(rollbackArgs(o, 4)).toEqual(['rollback', '--namespace', 'demo', '--timeout', '5m0s', '--server-side=true', '--', 'web']);
    expect(rollbackArgs({ ...o, revision: 3 }, 4).slice(-3)).toEqual(['--', 'web', '3']);
    expect(rollbackArgs({ ...o, revision: 0 }, 4).slice(-2)).toEqual(['--', 'web']);
  });

  it('force per version', () => {
    expect(rollbackArgs({ ...o, force: true }, 3)).toContain('--force');
    // v4: never a client-side replace, which would leave the release on client-side apply.
    expect(rollbackArgs({ ...o, force: true }, 4)).toEqual([
      'rollback',
      '--namespace',
      'demo',
      '--timeout',
      '5m0s',
      '--server-side=true',
      '--force-conflicts',
      '--',
      'web',
    ]);
    expect(rollbackArgs({ ...o, force: true }, 3)).not.toContain('--server-side=false');
    expect(rollbackArgs({ ...o, force: true }, 4)).not.toContain('--force');
  });
});

describe('read verbs', () => {
  it('status, get metadata, history, template, version', () => {
    expect(statusArgs({ release: 'web', namespace: 'demo' })).toEqual(['status', '--namespace', 'demo', '--output', 'json', '--', 'web']);
    expect(metadataArgs({ release: 'web', namespace: 'demo', revision: 2 })).toEqual([
      'get',
      'metadata',
      '--namespace',
      'demo',
      '--output',
      'json',
      '--revision',
      '2',
      '--',
      'web',
    ]);
    expect(historyArgs({ release: 'web', namespace: 'demo', max: 3 })).toEqual([
      'history',
      '--namespace',
      'demo',
      '--output',
      'json',
      '--max',
      '3',
      '--',
      'web',
    ]);
    expect(historyArgs({ release: 'web', namespace: 'demo' })).not.toContain('--max');
    expect(templateArgs({ ...base, kubeVersion: '1.34.0', apiVersions: ['monitoring.coreos.com/v1'], includeCrds: true })).toEqual([
      'template',
      '--namespace',
      'demo',
      '--values',
      '/tmp/v/values.json',
      '--kube-version',
      '1.34.0',
      '--api-versions',
      'monitoring.coreos.com/v1',
      '--include-crds',
      '--',
      'web',
      '/charts/nginx',
    ]);
    expect(versionArgs()).toEqual(['version', '--template', '{{.Version}}']);
  });
});

describe('withConnectionArgs', () => {
  it('inserts context and impersonation after the subcommand words', () => {
    const conn = { kubeContext: 'prod', impersonate: 'system:serviceaccount:ops:helm' };
    expect(withConnectionArgs(metadataArgs({ release: 'web', namespace: 'demo' }), conn)).toEqual([
      'get',
      'metadata',
      '--kube-context',
      'prod',
      '--kube-as-user',
      'system:serviceaccount:ops:helm',
      '--namespace',
      'demo',
      '--output',
      'json',
      '--',
      'web',
    ]);
    expect(withConnectionArgs(['status', '--', 'web'], {})).toEqual(['status', '--', 'web']);
  });
});

describe('serverDryRunArgs', () => {
  const opts = { release: 'web', namespace: 'demo', chart: '/charts/nginx', valuesFile: '/tmp/v/values.json' };

  it('upgrade --install --dry-run=server, JSON out, the values as the real upgrade sets them', () => {
    expect(serverDryRunArgs(opts)).toEqual([
      'upgrade',
      '--install',
      '--dry-run=server',
      '--namespace',
      'demo',
      '--values',
      '/tmp/v/values.json',
      '--output',
      'json',
      '--disable-openapi-validation',
      '--reset-values',
      '--',
      'web',
      '/charts/nginx',
    ]);
  });

  it('has nothing of a real run: no labels, wait, force, timeout, history or namespace creation, no client dry run', () => {
    const args = serverDryRunArgs(opts);
    for (const flag of [
      '--labels',
      '--wait',
      '--wait=watcher',
      '--force',
      '--force-replace',
      '--timeout',
      '--history-max',
      '--create-namespace',
      '--atomic',
      '--rollback-on-failure',
      '--set',
      '--hide-secret',
    ]) {
      expect(args).not.toContain(flag);
    }
    expect(args.filter((a) => a.startsWith('--dry-run'))).toEqual(['--dry-run=server']);
  });

  it('keeps a dash-leading release name positional', () => {
    expect(serverDryRunArgs({ ...opts, release: '-x' }).slice(-3)).toEqual(['--', '-x', '/charts/nginx']);
  });

  it('takes the identity and context of the real install, before any flag', () => {
    expect(
      withConnectionArgs(serverDryRunArgs(opts), { kubeContext: 'prod', impersonate: 'system:serviceaccount:demo:deployer' }).slice(0, 7),
    ).toEqual([
      'upgrade',
      '--kube-context',
      'prod',
      '--kube-as-user',
      'system:serviceaccount:demo:deployer',
      '--install',
      '--dry-run=server',
    ]);
  });
});
