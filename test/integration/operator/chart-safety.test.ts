/**
 * The real `helm-operator run` refuses, at start and with the watches.yaml file:line, a watch
 * whose chart would make helm read outside it: a symbolic link out of the chart directory (helm
 * follows it: a `.Files.Get` of a link to /etc/passwd put the host's file into a ConfigMap), a
 * values.schema.json `$ref` helm would fetch at every install, and a reconcile period that would
 * spin. A CR of the kind already waits in the cluster: with the refusal gone, the operator would
 * start and the host's /etc/passwd would reach its ConfigMap, which the first test watches for.
 */
import { readFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, type TestKind } from '../../support/operator.js';
import { startOperatorProcess, waitForExit } from '../../support/process.js';

const LEAKY: TestKind = { group: 'chartfs.example.com', version: 'v1', kind: 'Leaky', plural: 'leakies' };

describe('helm-operator run: charts that would read outside themselves', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  let dir = '';
  let ns: Awaited<ReturnType<typeof createNamespace>>;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'chart-safety-'));
    await ensureCrd(kc, LEAKY);
    ns = await createNamespace(kc, 'chart-safety');
    await new CRs(kc, LEAKY).create(ns.name, 'victim', {});
  });
  afterAll(async () => {
    await ns.remove();
    await rm(dir, { recursive: true, force: true });
  });

  /** A chart that puts every file of `files/` into a ConfigMap, as charts exposing `.Files.Glob` do. */
  async function chart(name: string, files: Record<string, string> = {}): Promise<string> {
    const root = path.join(dir, name);
    await mkdir(path.join(root, 'templates'), { recursive: true });
    await mkdir(path.join(root, 'files'), { recursive: true });
    await writeFile(path.join(root, 'Chart.yaml'), `apiVersion: v2\nname: ${name}\nversion: 0.1.0\n`);
    await writeFile(
      path.join(root, 'templates', 'cm.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-files\ndata:\n{{ (.Files.Glob "files/*").AsConfig | indent 2 }}\n',
    );
    for (const [file, text] of Object.entries(files)) await writeFile(path.join(root, file), text);
    return root;
  }

  async function watches(name: string, chartDir: string, ...extra: string[]): Promise<string> {
    const file = path.join(dir, `${name}.yaml`);
    await writeFile(
      file,
      [`- group: ${LEAKY.group}`, `  version: ${LEAKY.version}`, `  kind: ${LEAKY.kind}`, `  chart: ${chartDir}`, ...extra, ''].join('\n'),
    );
    return file;
  }

  const run = (file: string, ...flags: string[]) =>
    startOperatorProcess(['run', '--watches-file', file, '--helm-binary', inject('helmBin'), ...flags], { WATCH_NAMESPACE: ns.name });

  it('refuses a chart whose files/ entry links to /etc/passwd: exits naming the watch, the file and the target; no ConfigMap gets the host file', async () => {
    const root = await chart('leaky');
    await symlink('/etc/passwd', path.join(root, 'files', 'passwd'));
    const file = await watches('leaky', root);
    const passwd = (await readFile('/etc/passwd', 'utf8')).split('\n')[0] ?? '';
    const leaked = async (): Promise<boolean> =>
      (await core.listNamespacedConfigMap({ namespace: ns.name })).items.some((cm) =>
        Object.values(cm.data ?? {}).some((v) => v.includes(passwd)),
      );
    const p = run(file);
    let exited = false;
    void p.exited.then(() => (exited = true));
    // Whichever comes first: the process exits (refused), or the host file reaches the cluster.
    const outcome = await waitFor(
      'the operator to exit or /etc/passwd to reach a ConfigMap',
      async () => (exited ? 'exited' : (await leaked()) ? 'leaked' : undefined),
      {
        timeoutMs: 60_000,
      },
    ).finally(() => {
      if (!exited) p.crash();
    });
    expect(outcome).toBe('exited');
    expect((await p.exited).code).not.toBe(0);
    expect(p.output()).toContain(
      `${file}:4:10: entry 0 (${LEAKY.group}/${LEAKY.version}, Kind=${LEAKY.kind}): field "chart": chart ${JSON.stringify(root)}: "files/passwd" is a symbolic link to "/etc/passwd", which resolves outside the chart directory`,
    );
    expect(p.output()).not.toMatch(/\n\s+at /); // a message, not a stack trace
    expect(await leaked()).toBe(false);
  });

  it('refuses a chart whose values.schema.json refers to another document (helm would fetch it at install)', async () => {
    const schema = JSON.stringify({ type: 'object', properties: { image: { $ref: 'http://169.254.169.254/latest/meta-data' } } });
    const root = await chart('schema-ref', { 'values.schema.json': schema });
    const file = await watches('schema-ref', root);
    const p = run(file);
    expect((await waitForExit(p)).code).not.toBe(0);
    expect(p.output()).toContain(
      `${file}:4:10: entry 0 (${LEAKY.group}/${LEAKY.version}, Kind=${LEAKY.kind}): field "chart": chart ${JSON.stringify(root)}: helm would fetch`,
    );
    expect(p.output()).toContain('$ref "http://169.254.169.254/latest/meta-data" in values.schema.json');
  });

  it('refuses a reconcilePeriod or --reconcile-period under the 1s floor', async () => {
    const file = await watches('tight', await chart('tight'), '  reconcilePeriod: 1ms');
    const p = run(file);
    expect((await waitForExit(p)).code).not.toBe(0);
    expect(p.output()).toContain(
      `${file}:5:20: entry 0 (${LEAKY.group}/${LEAKY.version}, Kind=${LEAKY.kind}): field "reconcilePeriod": "1ms" is shorter than the 1s floor`,
    );
    const flag = run(await watches('flag', await chart('flag')), '--reconcile-period', '1ms');
    expect((await waitForExit(flag)).code).not.toBe(0);
    expect(flag.output()).toContain('--reconcile-period 1ms is shorter than the 1s floor');
  });
});
