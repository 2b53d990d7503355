/**
 * Issue 32 item 8, the operator author's mistakes a tenant would profit from: a chart with a
 * symlink out of its directory (helm follows it: /etc/passwd reached a ConfigMap) and a
 * values.schema.json whose `$ref` helm fetches at every install. The operator must refuse such a
 * chart when it loads watches.yaml, naming the file, and start nothing.
 */
import { cp, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { spawnOperator, watchesFile } from '../integration/production/support.js';
import { againstEachConfiguration, attack, EXTRAS_CHART, watchFieldsOf } from './support/target.js';

/** A copy of the tenant-extras chart with `change` applied to it, in a temp dir. */
async function unsafeChart(change: (dir: string) => Promise<void>): Promise<{ dir: string; remove: () => Promise<void> }> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'redteam-chart-'));
  const dir = path.join(root, 'tenant-extras');
  await cp(EXTRAS_CHART, dir, { recursive: true });
  await change(dir);
  return { dir, remove: () => rm(root, { recursive: true, force: true }) };
}

againstEachConfiguration('unsafe charts at load', (target, config) => {
  /** Runs an operator on `chart` alone; expects it to exit non-zero, saying `mention`, before it starts any controller. */
  const refusedAtLoad = async (chart: string, mention: RegExp): Promise<void> => {
    const w = await watchesFile(
      `- {group: ${config.extras.group}, version: v1, kind: UnsafeExtras, chart: ${chart}, ${(await watchFieldsOf(config, chart)).join(', ')}}\n`,
    );
    const p = spawnOperator({ watchesFile: w.file, namespace: target.tenancy.a });
    try {
      const started = p
        .waitForLog('the controllers to start', (l) => l.msg === 'All controllers started and synced', 90_000)
        .then(
          () => 'started' as const,
          () => 'exited' as const,
        );
      const first = await Promise.race([started, p.exited.then(() => 'exited' as const)]);
      expect(first, `the operator loaded the unsafe chart; its output:\n${p.dump().slice(-2000)}`).toBe('exited');
      expect((await p.exited).code).not.toBe(0);
      expect(p.dump()).toMatch(mention);
    } finally {
      await p.stop(10_000);
      await w.remove();
    }
  };

  attack(target, { id: '8a', title: 'a chart holding a symlink to /etc/passwd', kind: 'load' }, async () => {
    const chart = await unsafeChart(async (dir) => {
      await symlink('/etc/passwd', path.join(dir, 'passwd'));
      await writeFile(
        path.join(dir, 'templates', 'passwd.yaml'),
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-passwd}\ndata:\n  passwd: {{ .Files.Get "passwd" | quote }}\n',
      );
    });
    try {
      await refusedAtLoad(chart.dir, /passwd/);
    } finally {
      await chart.remove();
    }
  });

  attack(target, { id: '8c', title: 'a chart whose values.schema.json $refs file:///etc/passwd', kind: 'load' }, async () => {
    const chart = await unsafeChart(async (dir) => {
      await writeFile(
        path.join(dir, 'values.schema.json'),
        JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', $ref: 'file:///etc/passwd' }),
      );
    });
    try {
      await refusedAtLoad(chart.dir, /values\.schema\.json/);
    } finally {
      await chart.remove();
    }
  });
});
