/**
 * The redteam's scaffolded configuration: the watch entry `create api` writes for a chart, made by
 * create api's own code (its chart analysis and its watches.yaml template) with the real helm.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { inject } from 'vitest';
import { parse } from 'yaml';
import { readHelmYaml } from '../../../src/config/helm-yaml.js';
import { ChartHelm } from '../../../src/helm/chart-helm.js';
import { chartRbac } from '../../../src/scaffold/create-api.js';
import { scaffoldLibrary } from '../../../src/scaffold/library.js';
import { apiNames } from '../../../src/scaffold/names.js';
import { watchEntry } from '../../../src/scaffold/templates/api.js';

export interface ScaffoldedWatch {
  readonly allowKinds?: readonly string[];
}

/** The entry `create api --helm-chart <chart>` adds to watches.yaml (its GVK aside). */
export async function scaffoldedWatch(chart: string): Promise<ScaffoldedWatch> {
  const helm = new ChartHelm({ binary: inject('helmBin') });
  const valuesYaml = await readFile(path.join(chart, 'values.yaml'), 'utf8').catch(() => '');
  const values = readHelmYaml(valuesYaml) ?? {};
  const { allowKinds } = await chartRbac({}, { helm, library: scaffoldLibrary }, chart, values);
  const names = apiNames({ group: 'scaffolded', version: 'v1', kind: 'Scaffolded' }, 'example.com');
  const [entry] = parse(watchEntry(names, path.basename(chart), allowKinds)) as ScaffoldedWatch[];
  return entry ?? {};
}

/** Its tenancy fields in flow-mapping syntax. */
export const scaffoldedFields = (w: ScaffoldedWatch): string[] =>
  w.allowKinds === undefined ? [] : [`allowKinds: [${w.allowKinds.join(', ')}]`];
