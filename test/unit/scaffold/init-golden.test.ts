/**
 * Golden files of `helm-operator init`: every file it writes, byte for byte, for a project installing
 * the runtime from the registry and one with a vendored runtime. The golden files were captured from
 * the TypeScript-string templates before they became files (src/scaffold/templates/files/), so a
 * template edit shows as a diff here. After a deliberate change: `npx vitest run --project unit
 * test/unit/scaffold/init-golden.test.ts -u`, then review the diff of test/fixtures/scaffold-init/.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { initPlan } from '../../../src/scaffold/init.js';
import type { ProjectInputs } from '../../../src/scaffold/templates/project.js';

const GOLDEN = path.resolve(import.meta.dirname, '../../fixtures/scaffold-init');
const SUFFIX = '.golden';
const runtime = { runtimePackage: 'helm-operator-ts', runtimeVersion: '0.1.0', runtimeDependency: '0.1.0', nodeVersion: '24.21.0' };
const cases: Record<string, ProjectInputs> = {
  registry: { ...runtime, projectName: 'demo', domain: 'example.com' },
  vendored: {
    ...runtime,
    runtimeDependency: 'file:vendor/helm-operator-ts-0.1.0.tgz',
    projectName: 'memcached-operator',
    domain: 'my.domain',
  },
};

const goldenPaths = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).slice(0, -SUFFIX.length))
    .sort();

describe.each(Object.entries(cases))('init (%s)', (name, inputs) => {
  const plan = initPlan(inputs);

  it('writes exactly the files of its golden directory', () => {
    expect(plan.map((op) => op.path).sort()).toEqual(goldenPaths(path.join(GOLDEN, name)));
  });

  it.each(plan.map((op) => [op.path, op] as const))('writes %s byte for byte as its golden file', async (file, op) => {
    expect(op.op).toBe('create');
    if (op.op !== 'create') return;
    await expect(String(op.body)).toMatchFileSnapshot(path.join(GOLDEN, name, `${file}${SUFFIX}`));
  });
});
