/**
 * The shipped alert rules against a real Prometheus (Debian's package, `hack/tools.sh prometheus`):
 * `promtool check rules` and `promtool test rules` (a case per alert, test/prometheus/), then a
 * Prometheus process on 127.0.0.1 scraping the operator as the ServiceMonitor does (HTTPS, the
 * bearer token of a ServiceAccount bound to metrics-reader) until a failed release shows in the
 * HelmOperatorReleaseFailed query.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { serviceAccountToken } from '../../support/deploy.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, fixtureChart, ROOT, type TestKind } from '../../support/operator.js';
import { freePort } from '../../support/process.js';
import { killAll, spawnOperator, watchEntry, watchesFile, type OperatorProcess } from './support.js';

const run = promisify(execFile);
const BREAKABLE: TestKind = { group: 'test.example.com', version: 'v1', kind: 'Breakable', plural: 'breakables' };

interface Rule {
  alert: string;
  expr: string;
}

describe('alert rules on a real Prometheus', () => {
  let promtool: string;
  let prometheus: string;
  let dir: string;
  let rules: Rule[];

  beforeAll(async () => {
    // Idempotent and locked: a no-op once the cache has it.
    await run('bash', [path.join(ROOT, 'hack/tools.sh'), 'prometheus'], { timeout: 300_000 });
    const bin = (await run('bash', [path.join(ROOT, 'hack/tools.sh'), 'path', 'prometheus'])).stdout.trim();
    promtool = path.join(bin, 'promtool');
    prometheus = path.join(bin, 'prometheus');
    dir = await mkdtemp(path.join(os.tmpdir(), 'alert-rules-'));
    const rule = parse(await readFile(path.join(ROOT, 'config/prometheus/alerts.yaml'), 'utf8')) as {
      spec: { groups: { rules: Rule[] }[] };
    };
    rules = rule.spec.groups.flatMap((g) => g.rules);
    await writeFile(path.join(dir, 'rules.yaml'), stringify(rule.spec));
    await copyFile(path.join(ROOT, 'test/prometheus/alerts.promtest.yaml'), path.join(dir, 'alerts.promtest.yaml'));
  }, 360_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('promtool check rules accepts the PrometheusRule of config/', { timeout: 60_000 }, async () => {
    const { stdout } = await run(promtool, ['check', 'rules', path.join(dir, 'rules.yaml')]);
    expect(stdout).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  it('promtool test rules passes, with a case for every alert', { timeout: 60_000 }, async () => {
    const cases = parse(await readFile(path.join(dir, 'alerts.promtest.yaml'), 'utf8')) as {
      tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    const firing = new Set(cases.tests.flatMap((t) => t.alert_rule_test.filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
    expect([...firing].sort()).toEqual(rules.map((r) => r.alert).sort());
    const { stdout } = await run(promtool, ['test', 'rules', path.join(dir, 'alerts.promtest.yaml')]);
    expect(stdout).toContain('SUCCESS');
  });

  describe('scraping the operator', () => {
    const kc = testKubeConfig();
    const crs = new CRs(kc, BREAKABLE);
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    let ns: Awaited<ReturnType<typeof createNamespace>>;
    let watches: Awaited<ReturnType<typeof watchesFile>>;
    let op: OperatorProcess;
    let prom: ChildProcess | undefined;
    let role: string;

    beforeAll(async () => {
      await ensureCrd(kc, BREAKABLE);
      ns = await createNamespace(kc, 'alert-rules');
      role = `${ns.name}-metrics-reader`;
      await rbac.createClusterRole({ body: { metadata: { name: role }, rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }] } });
      await kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace: ns.name, body: { metadata: { name: 'prometheus' } } });
      await rbac.createClusterRoleBinding({
        body: {
          metadata: { name: role },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
          subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: ns.name }],
        },
      });
      watches = await watchesFile(watchEntry(BREAKABLE, fixtureChart('breakable')));
      op = spawnOperator({ watchesFile: watches.file, namespace: ns.name, args: ['--metrics-secure', '--metrics-require-rbac'] });
    }, 120_000);
    afterAll(async () => {
      prom?.kill('SIGKILL');
      await killAll();
      await rbac.deleteClusterRoleBinding({ name: role }).catch(() => undefined);
      await rbac.deleteClusterRole({ name: role }).catch(() => undefined);
      await ns.remove();
      await watches.remove();
    });

    it(
      'a failed release shows in the HelmOperatorReleaseFailed query of a Prometheus scraping with a token',
      { timeout: 240_000 },
      async () => {
        const target = (await op.metricsUrl()).replace(/^http:\/\//, '');
        // The ServiceMonitor's bearerTokenFile: a token of a ServiceAccount bound to metrics-reader.
        await writeFile(path.join(dir, 'token'), await serviceAccountToken(kc, 3600, { name: 'prometheus', namespace: ns.name }), {
          mode: 0o600,
        });
        const config = {
          global: { scrape_interval: '1s', evaluation_interval: '1s' },
          rule_files: [path.join(dir, 'rules.yaml')],
          scrape_configs: [
            {
              job_name: 'helm-operator',
              scheme: 'https',
              authorization: { credentials_file: path.join(dir, 'token') },
              tls_config: { insecure_skip_verify: true },
              static_configs: [{ targets: [target] }],
            },
          ],
        };
        await writeFile(path.join(dir, 'prometheus.yml'), stringify(config));
        const port = await freePort();
        prom = spawn(
          prometheus,
          [
            `--config.file=${path.join(dir, 'prometheus.yml')}`,
            `--storage.tsdb.path=${path.join(dir, 'data')}`,
            `--web.listen-address=127.0.0.1:${port}`,
          ],
          {
            stdio: 'ignore',
          },
        );
        const query = async (q: string): Promise<{ metric: Record<string, string> }[]> => {
          const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(q)}`).catch(() => undefined);
          if (res?.status !== 200) return [];
          return ((await res.json()) as { data: { result: { metric: Record<string, string> }[] } }).data.result;
        };
        // The scrape succeeds: authenticated and authorized by the operator.
        await waitFor(
          'Prometheus to scrape the operator',
          async () => ((await query('up{job="helm-operator"} == 1')).length === 1 ? true : undefined),
          {
            timeoutMs: 120_000,
            intervalMs: 500,
          },
        );

        await crs.create(ns.name, 'bad-install', { configName: 'Not_A_Valid_Name' });
        await crs.waitForCondition(ns.name, 'bad-install', { type: 'ReleaseFailed', status: 'True', reason: 'InstallError' });
        const expr = rules.find((r) => r.alert === 'HelmOperatorReleaseFailed')?.expr ?? '';
        const found = await waitFor(
          'the failed release in the alert query',
          async () => {
            const result = await query(expr);
            return result.length > 0 ? result : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 500 },
        );
        expect(found.map((r) => r.metric)).toEqual([{ controller: 'breakable-controller', namespace: ns.name, name: 'bad-install' }]);
        // The alert itself is pending (it fires after its `for:`).
        const pending = await waitFor(
          'the pending alert',
          async () => {
            const a = await query('ALERTS{alertname="HelmOperatorReleaseFailed"}');
            return a.length > 0 ? a : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 500 },
        );
        expect(pending[0]?.metric).toMatchObject({ alertstate: 'pending', name: 'bad-install', namespace: ns.name });
      },
    );
  });
});
