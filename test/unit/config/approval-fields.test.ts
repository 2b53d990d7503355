import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseWatches } from '../../../src/config/watches.js';
import { WatchesError } from '../../../src/config/watches-problems.js';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'approval-fields-'));
  await mkdir(join(tmp, 'chart', 'templates'), { recursive: true });
  await writeFile(join(tmp, 'chart', 'Chart.yaml'), 'apiVersion: v2\nname: app\nversion: 0.1.0\n');
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const entry = (...extra: string[]): string =>
  ['- group: example.com', '  version: v1', '  kind: App', '  chart: chart', ...extra].join('\n');
const parse = (text: string) => parseWatches(text, { file: 'watches.yaml', env: {}, baseDir: tmp });
const problems = async (text: string): Promise<string[]> => {
  try {
    await parse(text);
  } catch (err) {
    if (err instanceof WatchesError) return err.problems.map((p) => p.message);
    throw err;
  }
  throw new Error('expected a WatchesError');
};

describe('watches.yaml approval and approvedBy', () => {
  it('are left out by default: approval never, approved by the platform', async () => {
    const [w] = await parse(entry());
    expect(w?.approval).toBeUndefined();
    expect(w?.approvedBy).toBeUndefined();
  });

  it('reads each choice', async () => {
    const [w] = await parse(entry('  approval: risky', '  approvedBy: cr'));
    expect(w).toMatchObject({ approval: 'risky', approvedBy: 'cr' });
    const [always] = await parse(entry('  approval: always'));
    expect(always?.approval).toBe('always');
  });

  it('reports a wrong value at its line, with the choices', async () => {
    const [message] = await problems(entry('  approval: sometimes'));
    expect(message).toMatch(/watches\.yaml:5/);
    expect(message).toMatch(/approval.*expected "never".*"risky".*"always"/);
  });

  it('reports approvedBy without an approval that holds anything', async () => {
    const [message] = await problems(entry('  approvedBy: cr'));
    expect(message).toMatch(/approvedBy.*has no effect without approval: risky or approval: always/);
  });
});
