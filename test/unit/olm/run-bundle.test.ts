import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { bundleSource, catalogYaml, csvProgress, csvsNotGoneMessage } from '../../../src/olm/bundle.js';
import { chooseInstallMode, parseInstallMode } from '../../../src/olm/install-mode.js';
import { checkVersion, formatTable } from '../../../src/olm/olm.js';

const modes = (...supported: string[]): { type: string; supported: boolean }[] =>
  ['AllNamespaces', 'OwnNamespace', 'SingleNamespace', 'MultiNamespace'].map((type) => ({ type, supported: supported.includes(type) }));

describe('install modes (operator-sdk --install-mode)', () => {
  it('parses InstallModeType[=ns1,ns2] into OperatorGroup targets', () => {
    expect(parseInstallMode('AllNamespaces', 'demo')).toEqual({ type: 'AllNamespaces' });
    expect(parseInstallMode('OwnNamespace', 'demo')).toEqual({ type: 'OwnNamespace', targetNamespaces: ['demo'] });
    expect(parseInstallMode('SingleNamespace=other', 'demo')).toEqual({ type: 'SingleNamespace', targetNamespaces: ['other'] });
    expect(parseInstallMode('MultiNamespace=a, b', 'demo')).toEqual({ type: 'MultiNamespace', targetNamespaces: ['a', 'b'] });
  });

  it('refuses malformed modes with what they need', () => {
    expect(() => parseInstallMode('Everything', 'demo')).toThrow(/must be one of AllNamespaces, OwnNamespace/);
    expect(() => parseInstallMode('OwnNamespace=x', 'demo')).toThrow(/takes no namespaces/);
    expect(() => parseInstallMode('SingleNamespace=demo', 'demo')).toThrow(/that is OwnNamespace/);
    expect(() => parseInstallMode('MultiNamespace=a', 'demo')).toThrow(/two or more/);
  });

  it('defaults to AllNamespaces when supported, else OwnNamespace; refuses what the CSV does not support', () => {
    expect(chooseInstallMode(modes('AllNamespaces', 'OwnNamespace'), 'demo')).toEqual({ type: 'AllNamespaces' });
    expect(chooseInstallMode(modes('OwnNamespace'), 'demo')).toEqual({ type: 'OwnNamespace', targetNamespaces: ['demo'] });
    expect(() => chooseInstallMode(modes('SingleNamespace'), 'demo')).toThrow(
      /does not support install mode OwnNamespace \(it supports: SingleNamespace\); choose one with --install-mode/,
    );
    expect(() => chooseInstallMode(modes('OwnNamespace'), 'demo', 'AllNamespaces')).toThrow(/does not support install mode AllNamespaces/);
  });
});

describe('run bundle input', () => {
  it('tells a missing directory, a non-bundle directory and an image reference apart', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'bundle-src-'));
    try {
      expect(() => bundleSource(path.join(dir, 'nope'))).toThrow(/bundle directory .*nope does not exist/);
      expect(() => bundleSource('./bundle-missing')).toThrow(/does not exist/);
      expect(() => bundleSource('bundle-missing')).toThrow(/does not exist/);
      expect(() => bundleSource(dir)).toThrow(/is not a bundle directory: it has no metadata\/annotations\.yaml/);
      await writeFile(path.join(dir, 'file'), '');
      expect(() => bundleSource(path.join(dir, 'file'))).toThrow(/is a file/);
      await mkdir(path.join(dir, 'metadata'));
      await writeFile(path.join(dir, 'metadata', 'annotations.yaml'), 'annotations: {}\n');
      expect(bundleSource(dir)).toEqual({ kind: 'directory', ref: dir });
      expect(bundleSource('127.0.0.1:5000/op-bundle:v0.1.0')).toEqual({ kind: 'image', ref: '127.0.0.1:5000/op-bundle:v0.1.0' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('puts the bundle into a one-channel catalog', () => {
    const docs = parseAllDocuments(
      catalogYaml({ name: 'p.v1.0.0', packageName: 'p', blob: { schema: 'olm.bundle', name: 'p.v1.0.0', package: 'p' } }),
    ).map((d) => d.toJS() as unknown);
    expect(docs).toEqual([
      { schema: 'olm.package', name: 'p', defaultChannel: 'helm-operator-run-bundle' },
      { schema: 'olm.channel', package: 'p', name: 'helm-operator-run-bundle', entries: [{ name: 'p.v1.0.0' }] },
      { schema: 'olm.bundle', name: 'p.v1.0.0', package: 'p' },
    ]);
  });
});

describe('olm install --version', () => {
  it('accepts the pinned version with or without v, and latest; names the pinned one otherwise', () => {
    expect(() => {
      checkVersion(undefined, 'v0.33.0');
    }).not.toThrow();
    expect(() => {
      checkVersion('0.33.0', 'v0.33.0');
    }).not.toThrow();
    expect(() => {
      checkVersion('latest', 'v0.33.0');
    }).not.toThrow();
    expect(() => {
      checkVersion('0.28.0', 'v0.33.0');
    }).toThrow(/--version v0\.33\.0/);
  });

  it('formats status as aligned columns', () => {
    expect(
      formatTable([
        ['NAME', 'STATUS'],
        ['olm-operator', 'Running'],
      ]),
    ).toBe('NAME          STATUS\nolm-operator  Running');
  });
});

describe('cleanup: what holds a CSV that is not gone in time', () => {
  it("names each CSV, its deletion and finalizers, and where OLM's operator logs", () => {
    const held = {
      metadata: {
        name: 'nginx-operator.v0.0.1',
        deletionTimestamp: new Date('2026-11-25T17:50:00Z'),
        finalizers: ['operators.coreos.com/csv-cleanup'],
      },
    };
    const msg = csvsNotGoneMessage([held], 120_000, '/cache/olm/abc/olm-operator.log');
    expect(msg).toMatch(
      /^ClusterServiceVersions were not gone within 120s:\n {2}nginx-operator\.v0\.0\.1: being deleted since .*2026.*, held by finalizer operators\.coreos\.com\/csv-cleanup\n/,
    );
    expect(msg).toContain(
      "OLM's olm-operator removes its finalizer once the CSV's cluster roles and bindings are gone; its log: /cache/olm/abc/olm-operator.log",
    );
  });

  it('says a CSV was never deleted, and names no OLM log where OLM runs in the cluster', () => {
    const msg = csvsNotGoneMessage([{ metadata: { name: 'a.v1' } }], 60_000, undefined);
    expect(msg).toBe('ClusterServiceVersions were not gone within 60s:\n  a.v1: not being deleted');
  });
});

describe('waiting for a CSV (run bundle, run bundle-upgrade)', () => {
  it('ends on Succeeded, fails at once on a Failed OLM does not leave, and waits through RequirementsNotMet', () => {
    expect(csvProgress({ phase: 'Succeeded' })).toBe('succeeded');
    expect(csvProgress(undefined)).toBe('waiting');
    expect(csvProgress({ phase: 'Installing', reason: 'InstallWaiting' })).toBe('waiting');
    // A replacing CSV, while the ServiceAccount is still the replaced one's: OLM goes on from there.
    expect(csvProgress({ phase: 'Failed', reason: 'RequirementsNotMet', message: 'requirements no longer met' })).toBe('waiting');
    expect(
      csvProgress({ phase: 'Failed', reason: 'UnsupportedOperatorGroup', message: 'OwnNamespace InstallModeType not supported' }),
    ).toEqual({
      failed: 'UnsupportedOperatorGroup OwnNamespace InstallModeType not supported',
    });
    expect(csvProgress({ phase: 'Failed' })).toEqual({ failed: 'no reason given' });
  });
});
