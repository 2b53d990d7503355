import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { runGenerateBundle, type GenerateBundleFlags } from '../../../src/bundle/commands.js';
import { upgradeEdge } from '../../../src/bundle/upgrade-edge.js';
import { kustomizeOutput } from '../../support/bundle-fixture.js';

describe('upgradeEdge: which CSV a new bundle replaces', () => {
  const previous = (version: string, replaces?: string): { name: string; version: string; replaces?: string } => ({
    name: `demo.v${version}`,
    version,
    ...(replaces === undefined ? {} : { replaces }),
  });

  it('replaces an older version of the same package; none for the first bundle', () => {
    expect(upgradeEdge({ packageName: 'demo', version: '0.0.2', previous: previous('0.0.1') }).replaces).toBe('demo.v0.0.1');
    expect(upgradeEdge({ packageName: 'demo', version: '0.0.10', previous: previous('0.0.9') }).replaces).toBe('demo.v0.0.9');
    expect(upgradeEdge({ packageName: 'demo', version: '1.0.0', previous: previous('1.0.0-rc.1') }).replaces).toBe('demo.v1.0.0-rc.1');
    expect(upgradeEdge({ packageName: 'demo', version: '0.0.1' })).toEqual({ notes: [] });
  });

  it('keeps the edge when the same version is generated again, and the base CSV’s own replaces wins', () => {
    expect(upgradeEdge({ packageName: 'demo', version: '0.0.2', previous: previous('0.0.2', 'demo.v0.0.1') }).replaces).toBe('demo.v0.0.1');
    expect(upgradeEdge({ packageName: 'demo', version: '0.0.3', baseReplaces: 'demo.v0.0.1', previous: previous('0.0.2') }).replaces).toBe(
      'demo.v0.0.1',
    );
  });

  it('writes none, saying why, for a newer bundle or another package on disk', () => {
    expect(upgradeEdge({ packageName: 'demo', version: '0.0.1', previous: previous('0.0.2') })).toEqual({
      notes: [expect.stringContaining('held demo.v0.0.2, newer than 0.0.1') as unknown],
    });
    expect(upgradeEdge({ packageName: 'other', version: '0.0.2', previous: previous('0.0.1') }).replaces).toBeUndefined();
  });
});

describe('generate bundle over the previous bundle directory', () => {
  let root = '';
  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'bundle-edge-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const generate = (version: string): Promise<string> => {
    const flags: GenerateBundleFlags = {
      root,
      force: true,
      dryRun: false,
      input: kustomizeOutput()
        .map((o) => `---\n${stringify(o)}`)
        .join(''),
      inputName: '<stdin>',
      version,
      channels: ['alpha'],
      packageName: 'demo',
      useImageDigests: false,
      outputDir: 'bundle',
      builderVersion: '0.1.0',
      now: new Date(0),
    };
    return runGenerateBundle(flags);
  };
  const csvSpec = async (): Promise<Record<string, unknown>> =>
    (
      parse(await readFile(path.join(root, 'bundle/manifests/demo.clusterserviceversion.yaml'), 'utf8')) as {
        spec: Record<string, unknown>;
      }
    ).spec;

  it('0.0.1, then 0.0.2: the second CSV replaces the first; regenerating 0.0.2 keeps it', async () => {
    await generate('0.0.1');
    expect((await csvSpec()).replaces).toBeUndefined();
    expect(await generate('0.0.2')).toContain('note: replaces demo.v0.0.1: the previous bundle');
    expect(await csvSpec()).toMatchObject({ version: '0.0.2', replaces: 'demo.v0.0.1' });
    await generate('0.0.2');
    expect((await csvSpec()).replaces).toBe('demo.v0.0.1');
  });
});
