/**
 * The judge is OLM's code: the generated bundle passes OLM's own validators (operator-framework/api
 * and operator-registry, built by hack/tools.sh olm-validate) and ours; each deliberately broken
 * bundle fails in both, for the same reason. opm accepts a file-based catalog holding the bundle.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateBundle, type BundleFiles } from '../../../src/bundle/validate.js';
import {
  asBundleFiles,
  brokenBundle,
  brokenCases,
  DEPRECATED_API_MESSAGES,
  deprecatedApiBundle,
  generateFixture,
} from '../../support/bundle-fixture.js';

const tools = async (): Promise<{ validate: string; opm: string }> => {
  const dir = (await execa('bash', ['hack/tools.sh', 'path', 'olm-validate'])).stdout.trim();
  await execa('bash', ['hack/tools.sh', 'olm-validate']);
  return { validate: join(dir, 'olm-validate'), opm: join(dir, 'opm') };
};

let bin: { validate: string; opm: string };
let work: string;

beforeAll(async () => {
  bin = await tools();
  work = await mkdtemp(join(tmpdir(), 'bundle-olm-'));
}, 900_000);
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function writeBundle(name: string, b: BundleFiles): Promise<string> {
  const dir = join(work, name);
  for (const f of b.files) {
    await mkdir(dirname(join(dir, f.path)), { recursive: true });
    await writeFile(join(dir, f.path), f.text);
  }
  return dir;
}

interface OlmReport {
  passed: boolean;
  outputs: { type: string; source: string; message: string }[];
}

async function olmValidate(dir: string, ...flags: string[]): Promise<{ exitCode: number; report: OlmReport }> {
  const r = await execa(bin.validate, [...flags, dir], { reject: false });
  return { exitCode: r.exitCode ?? -1, report: JSON.parse(r.stdout) as OlmReport };
}

describe("OLM's validators", () => {
  it('accept the generated bundle: every always-on check and suite=operatorframework', async () => {
    const dir = await writeBundle('good', asBundleFiles(generateFixture()));
    const r = await olmValidate(dir, '--select-optional', 'suite=operatorframework');
    expect(r.report.outputs.filter((o) => o.type === 'error')).toEqual([]);
    expect(r.exitCode).toBe(0);
  });

  it.each(brokenCases)('and ours reject $name, for the same reason', async (c) => {
    const b = brokenBundle(c);
    const ours = validateBundle(b).filter((f) => f.level === 'error');
    expect(ours.some((f) => f.check === c.ours.check)).toBe(true);
    const r = await olmValidate(await writeBundle(c.name.replace(/\W+/g, '-'), b));
    expect(r.exitCode).toBe(1);
    expect(
      r.report.outputs
        .filter((o) => o.type === 'error')
        .map((o) => o.message)
        .join('\n'),
    ).toMatch(c.olm);
  });
});

describe("OLM's deprecated-API check (suite=operatorframework)", () => {
  it.each([
    { minKube: '1.24.0', object: 'warning' },
    { minKube: '1.28.0', object: 'error' },
  ])(
    'says what ours says for minKubeVersion $minKube: the removed object is a $object, the CSV rule a warning',
    async ({ minKube, object }) => {
      const b = deprecatedApiBundle(minKube);
      const r = await olmValidate(await writeBundle(`deprecated-${minKube}`, b), '--select-optional', 'suite=operatorframework');
      const olm = r.report.outputs
        .filter((o) => o.source === 'alpha-deprecated-apis')
        .map((o) => ({ level: o.type, message: o.message.replace(/^(Warning|Error): Value [^:]+: /, '') })); // OLM's prefix names the level and the CSV
      const ours = validateBundle(b, { selectOptional: 'suite=operatorframework' })
        .filter((f) => f.check === 'alpha-deprecated-apis')
        .map((f) => ({ level: f.level, message: f.message }));
      expect(ours).toContainEqual({ level: object, message: DEPRECATED_API_MESSAGES.object });
      expect(ours.find((f) => DEPRECATED_API_MESSAGES.rule.test(f.message))?.level).toBe('warning');
      expect(new Set(olm.map((o) => JSON.stringify(o)))).toEqual(new Set(ours.map((o) => JSON.stringify(o))));
    },
  );
});

describe('opm', () => {
  it('renders the bundle into a file-based catalog that opm validate accepts', async () => {
    const dir = await writeBundle('catalog-src', asBundleFiles(generateFixture()));
    const rendered = await execa(bin.opm, ['render', dir, '--output', 'yaml']);
    expect(rendered.stdout).toContain('schema: olm.bundle');
    const catalog = join(work, 'catalog', 'demo-operator');
    await mkdir(catalog, { recursive: true });
    const header = [
      '---',
      'schema: olm.package',
      'name: demo-operator',
      'defaultChannel: alpha',
      '---',
      'schema: olm.channel',
      'package: demo-operator',
      'name: alpha',
      'entries:',
      '  - name: demo-operator.v0.1.0',
      '',
    ].join('\n');
    await writeFile(join(catalog, 'catalog.yaml'), `${header}${rendered.stdout}\n`);
    await execa(bin.opm, ['validate', join(work, 'catalog')]);
  });
});
