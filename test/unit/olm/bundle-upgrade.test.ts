import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CHANNEL, catalogYaml } from '../../../src/olm/bundle.js';
import { upgradedCatalog, upgradeRegistryName } from '../../../src/olm/bundle-upgrade.js';

const bundle = (v: string): { name: string; packageName: string; blob: Record<string, unknown> } => ({
  name: `demo.v${v}`,
  packageName: 'demo',
  blob: { schema: 'olm.bundle', name: `demo.v${v}`, package: 'demo', image: `example.com/demo-bundle:v${v}`, properties: [] },
});
const docs = (text: string): Record<string, unknown>[] => parseAllDocuments(text).map((d) => d.toJS() as Record<string, unknown>);

describe('upgradedCatalog: the run bundle catalog with the next version', () => {
  const installed = docs(catalogYaml(bundle('0.0.1')));

  it('adds the bundle to the channel as the upgrade from the installed CSV, beside the installed bundle', () => {
    const next = docs(upgradedCatalog(installed, bundle('0.0.2'), 'demo.v0.0.1'));
    expect(next.find((d) => d.schema === 'olm.channel')).toEqual({
      schema: 'olm.channel',
      package: 'demo',
      name: CHANNEL,
      entries: [{ name: 'demo.v0.0.1' }, { name: 'demo.v0.0.2', replaces: 'demo.v0.0.1' }],
    });
    expect(next.filter((d) => d.schema === 'olm.bundle').map((d) => d.name)).toEqual(['demo.v0.0.1', 'demo.v0.0.2']);
    // Upgrading again from 0.0.2 chains the edges; the same bundle twice is not duplicated.
    const third = docs(upgradedCatalog(docs(upgradedCatalog(next, bundle('0.0.3'), 'demo.v0.0.2')), bundle('0.0.3'), 'demo.v0.0.2'));
    expect((third.find((d) => d.schema === 'olm.channel')?.entries as { name: string }[]).map((e) => e.name)).toEqual([
      'demo.v0.0.1',
      'demo.v0.0.2',
      'demo.v0.0.3',
    ]);
    expect(third.filter((d) => d.schema === 'olm.bundle')).toHaveLength(3);
  });

  it('refuses a catalog without the installed CSV or the package’s channel', () => {
    expect(() => upgradedCatalog(installed, bundle('0.0.2'), 'demo.v0.0.0')).toThrow(
      /does not hold the installed demo.v0.0.0: run cleanup demo, then run bundle/,
    );
    expect(() => upgradedCatalog(installed, { ...bundle('0.0.2'), packageName: 'other' }, 'demo.v0.0.1')).toThrow(
      /has no channel of package other/,
    );
  });
});

describe("upgradeRegistryName: the registry pod of an upgrade, beside run bundle's", () => {
  it('is the CatalogSource name and the version of the new bundle, a valid pod name', () => {
    expect(upgradeRegistryName('demo', 'demo.v0.0.2')).toBe('demo-catalog-v0.0.2');
    expect(upgradeRegistryName('demo', 'Other_Name+1')).toBe('demo-catalog-other-name-1');
    expect(upgradeRegistryName('demo', `demo.v1.0.0-${'x'.repeat(300)}`)).toHaveLength(253);
  });
});
