/**
 * `create api` on a chart written the way bitnami's are (bitnami's common library vendored,
 * extraDeploy rendered through common.tplvalues.render, values rendered with tpl): its output and
 * the scaffolded README name the values through which CR authors write templates or objects, what
 * the generated ClusterRole then lends them, and the remedy. Real helm renders the chart.
 */
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCreateApi } from '../../../src/scaffold/commands.js';
import { fixtureChart } from '../../support/operator.js';
import { initFilesOnly } from '../../support/scaffold.js';

describe('create api on a chart whose values CR authors can write templates through', () => {
  let root: string;
  let output: string;
  let readme: string;

  beforeAll(async () => {
    root = await initFilesOnly('tenancy');
    output = await runCreateApi({
      root,
      helmBinary: inject('helmBin'),
      force: false,
      dryRun: false,
      group: 'apps',
      version: 'v1',
      kind: 'Extras',
      helmChart: fixtureChart('tenant-extras'),
    });
    readme = await readFile(path.join(root, 'README.md'), 'utf8');
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('prints each such value, the generated RBAC it reaches, and the remedy', () => {
    const tenancy = output.split('\n').filter((l) => l.startsWith('note: Tenancy: '));
    expect(tenancy).toHaveLength(3);
    expect(tenancy[0]).toContain('through 5 value(s) of tenant-extras');
    expect(tenancy[0]).toContain('extraDeploy: a list of objects, rendered with tpl (templates/extra-list.yaml)');
    expect(tenancy[0]).toContain('commonAnnotations: rendered with tpl (templates/configmap.yaml)');
    expect(tenancy[0]).toContain('metrics.extraManifests: a list of objects');
    // The chart renders ConfigMaps with its defaults: the watch's allowKinds, which the gateway holds
    // such values to whatever role.yaml grants (ConfigMaps, and Secrets for helm's records).
    expect(tenancy[1]).toContain(
      "objects of the kinds the watch's allowKinds lists (ConfigMap; the helm gateway refuses any other) in every namespace",
    );
    expect(tenancy[2]).toContain('--default-service-account <name>');
  });

  it("writes the same into the README's Tenancy section, once, replaced on a --force re-run", async () => {
    const section = readme.slice(readme.indexOf('## Tenancy'));
    expect(section).toContain(
      '- **Extras** (`helm-charts/tenant-extras`): CR authors can write templates or whole objects through 5 value(s)',
    );
    expect(section).toContain('--default-service-account');
    expect(section).toContain('+kubebuilder:scaffold:tenancy');
    await runCreateApi({
      root,
      helmBinary: inject('helmBin'),
      force: true,
      dryRun: false,
      group: 'apps',
      version: 'v1',
      kind: 'Extras',
      helmChart: fixtureChart('tenant-extras'),
    });
    const again = await readFile(path.join(root, 'README.md'), 'utf8');
    expect(again.split('- **Extras**')).toHaveLength(2);
  });
});
