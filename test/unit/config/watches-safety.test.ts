/**
 * watches.yaml refuses charts helm would make read outside themselves: a symbolic link out of the
 * chart directory (helm follows it), and a values.schema.json `$ref` to another document (helm
 * fetches it at every install and upgrade) unless the watch sets `allowSchemaRefs: true`; and a
 * reconcilePeriod under the floor.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Watch } from '../../../src/config/watch.js';
import { parseWatches } from '../../../src/config/watches.js';
import { WatchesError } from '../../../src/config/watches-problems.js';

let tmp: string;
let chart: string;

beforeEach(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'watches-safety-'));
  chart = join(tmp, 'helm-charts', 'app');
  await mkdir(join(chart, 'templates'), { recursive: true });
  await writeFile(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: app\nversion: 0.1.0\n');
  await writeFile(join(chart, 'templates', 'cm.yaml'), 'kind: ConfigMap\n');
});

afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const ENTRY = ['- group: example.com', '  version: v1alpha1', '  kind: App', '  chart: helm-charts/app'];
const text = (...extra: string[]): string => `${[...ENTRY, ...extra].join('\n')}\n`;
const parse = (t: string): Promise<Watch[]> => parseWatches(t, { file: 'watches.yaml', env: {}, baseDir: tmp });

async function messagesOf(t: string): Promise<string[]> {
  try {
    await parse(t);
  } catch (err) {
    if (err instanceof WatchesError) return err.problems.map((p) => p.message);
    throw err;
  }
  throw new Error('expected a WatchesError');
}

describe('watches.yaml: symbolic links in a chart directory', () => {
  it('refuses a template linked to /etc/passwd, with the watch file:line, the file and the target', async () => {
    await symlink('/etc/passwd', join(chart, 'templates', 'x.yaml'));
    expect(await messagesOf(text())).toEqual([
      `watches.yaml:4:10: entry 0 (example.com/v1alpha1, Kind=App): field "chart": chart ${JSON.stringify(chart)}: "templates/x.yaml" is a symbolic link to "/etc/passwd", which resolves outside the chart directory (to "/etc/passwd"); helm would read that file into the release, so the chart is refused: copy the file into the chart instead of linking it`,
    ]);
  });

  it('accepts a link that stays inside the chart', async () => {
    await mkdir(join(chart, 'files'));
    await writeFile(join(chart, 'files', 'a.conf'), 'a\n');
    await symlink('../files/a.conf', join(chart, 'templates', 'a.conf'));
    await expect(parse(text())).resolves.toHaveLength(1);
  });
});

describe('watches.yaml: values.schema.json references', () => {
  const withRef = (ref: string): string =>
    JSON.stringify({
      type: 'object',
      properties: { image: { $ref: ref }, local: { $ref: '#/definitions/l' } },
      definitions: { l: { type: 'string' } },
    });

  it.each(['https://schemas.example.com/image.json', 'file:///etc/passwd', 'defs.json#/image'])(
    'refuses a chart whose schema refers to %s',
    async (ref) => {
      await writeFile(join(chart, 'values.schema.json'), withRef(ref));
      const [message, ...rest] = await messagesOf(text());
      expect(rest).toEqual([]);
      expect(message).toBe(
        `watches.yaml:4:10: entry 0 (example.com/v1alpha1, Kind=App): field "chart": chart ${JSON.stringify(chart)}: helm would fetch, at every install and upgrade, what its values schema references outside itself: $ref ${JSON.stringify(ref)} in values.schema.json; inline those definitions into the schema, or set allowSchemaRefs: true to let helm fetch them`,
      );
    },
  );

  it('refuses a subchart schema reference too', async () => {
    await mkdir(join(chart, 'charts', 'db'), { recursive: true });
    await writeFile(join(chart, 'charts', 'db', 'Chart.yaml'), 'name: db\nversion: 1.0.0\n');
    await writeFile(join(chart, 'charts', 'db', 'values.schema.json'), withRef('http://10.0.0.1/x.json'));
    expect((await messagesOf(text())).join('\n')).toContain('$ref "http://10.0.0.1/x.json" in charts/db/values.schema.json');
  });

  it('accepts them with allowSchemaRefs: true, and a schema without outside references without it', async () => {
    await writeFile(join(chart, 'values.schema.json'), withRef('https://schemas.example.com/image.json'));
    const [allowed] = await parse(text('  allowSchemaRefs: true'));
    expect(allowed?.allowSchemaRefs).toBe(true);
    expect(allowed?.chart.schemaRefs).toHaveLength(1);
    await writeFile(join(chart, 'values.schema.json'), withRef('#/definitions/l'));
    const [plain] = await parse(text());
    expect(plain?.allowSchemaRefs).toBe(false);
  });

  it('validates allowSchemaRefs strictly', async () => {
    expect(await messagesOf(text('  allowSchemaRefs: "yes"'))).toEqual([
      'watches.yaml:5:20: entry 0 (example.com/v1alpha1, Kind=App): field "allowSchemaRefs": expected true or false, got string "yes"',
    ]);
    expect((await messagesOf(text('  allowSchemaRef: true'))).join('\n')).toContain(
      'unknown field "allowSchemaRef" (did you mean "allowSchemaRefs"?)',
    );
  });
});

describe('watches.yaml: reconcilePeriod floor', () => {
  it('refuses a period under 1s with file:line, and keeps 1s and 0 (the operator default)', async () => {
    expect(await messagesOf(text('  reconcilePeriod: 1ms'))).toEqual([
      'watches.yaml:5:20: entry 0 (example.com/v1alpha1, Kind=App): field "reconcilePeriod": "1ms" is shorter than the 1s floor: every CR would be reconciled in a busy loop',
    ]);
    expect((await parse(text('  reconcilePeriod: 1s')))[0]?.reconcilePeriodMs).toBe(1_000);
    expect((await parse(text('  reconcilePeriod: "0"')))[0]).not.toHaveProperty('reconcilePeriodMs');
  });
});
