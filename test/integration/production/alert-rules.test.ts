/**
 * The shipped alert rules against a real Prometheus (Debian's package, `hack/tools.sh prometheus`):
 * `promtool check rules` and `promtool test rules` (a case per alert, test/prometheus/), then a
 * Prometheus process on 127.0.0.1 scraping the operator as the ServiceMonitor does (HTTPS, the
 * bearer token of a ServiceAccount bound to metrics-reader) while the operator is driven into a
 * failed release, a drift fight and a halted rollout: each shows in its alert's query.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { dashboardSvg } from '../../../hack/dashboard-svg.js';
import { serviceAccountToken } from '../../support/deploy.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, fixtureChart, ROOT, type TestKind } from '../../support/operator.js';
import { freePort } from '../../support/process.js';
import { killAll, spawnOperator, watchEntry, watchesFile, type OperatorProcess } from './support.js';

const run = promisify(execFile);
const BREAKABLE: TestKind = { group: 'test.example.com', version: 'v1', kind: 'Breakable', plural: 'breakables' };
const FLEET: TestKind = { group: 'alerts.example.com', version: 'v1', kind: 'AlertFleet', plural: 'alertfleets' };
/** A canary and one more CR: the smallest fleet whose rollout can halt with a CR left waiting. */
const FLEET_CRS = ['fleet-a', 'fleet-b'] as const;
const FLEET_ROLLOUT = '  rollout:\n    canary: 1\n    waveSize: 1\n    healthTimeout: 15s\n    stableFor: 1s\n';
const FIGHTER = 'alert-rules-fighter';

/** One ConfigMap; `fleet-v2` names it as the API server refuses, so its install or upgrade fails. */
async function writeFleetChart(root: string, version: 'fleet-v1' | 'fleet-v2'): Promise<void> {
  await mkdir(path.join(root, 'templates'), { recursive: true });
  await writeFile(path.join(root, 'Chart.yaml'), `apiVersion: v2\nname: fleet\nversion: ${version === 'fleet-v1' ? '0.1.0' : '0.2.0'}\n`);
  const name = version === 'fleet-v1' ? '{{ .Release.Name }}-config' : '{{ .Release.Name }}_Not_A_Valid_Name';
  await writeFile(
    path.join(root, 'templates', 'configmap.yaml'),
    `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  chart: ${version}\n`,
  );
}

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

  /**
   * The operator driven into each state an alert is about, scraped by one Prometheus; each
   * alert's own `expr` (from alerts.yaml) is evaluated through the HTTP query API, not its firing
   * state, which waits out `for:`.
   */
  describe('scraping the operator', () => {
    const kc = testKubeConfig();
    const crs = new CRs(kc, BREAKABLE);
    const fleets = new CRs(kc, FLEET);
    const core = kc.makeApiClient(CoreV1Api);
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    let ns: Awaited<ReturnType<typeof createNamespace>>;
    let watches: Awaited<ReturnType<typeof watchesFile>>;
    let op: OperatorProcess;
    let prom: ChildProcess | undefined;
    let port = 0;
    let role: string;

    const fleetWatch = (chart: string): string => watchEntry(FLEET, chart, FLEET_ROLLOUT);
    const query = async (q: string): Promise<{ metric: Record<string, string> }[]> => {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(q)}`).catch(() => undefined);
      if (res?.status !== 200) return [];
      return ((await res.json()) as { data: { result: { metric: Record<string, string> }[] } }).data.result;
    };
    /** The series the alert's own expression returns, once it returns any. */
    const alertSeries = async (alert: string): Promise<Record<string, string>[]> => {
      const expr = rules.find((r) => r.alert === alert)?.expr;
      if (expr === undefined) throw new Error(`no alert ${alert} in alerts.yaml`);
      const found = await waitFor(
        `the ${alert} query to return a series`,
        async () => {
          const result = await query(expr);
          return result.length > 0 ? result : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 500 },
      );
      return found.map((r) => r.metric);
    };

    beforeAll(async () => {
      await Promise.all([ensureCrd(kc, BREAKABLE), ensureCrd(kc, FLEET)]);
      ns = await createNamespace(kc, 'alert-rules');
      role = `${ns.name}-metrics-reader`;
      await rbac.createClusterRole({ body: { metadata: { name: role }, rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }] } });
      await core.createNamespacedServiceAccount({ namespace: ns.name, body: { metadata: { name: 'prometheus' } } });
      await rbac.createClusterRoleBinding({
        body: {
          metadata: { name: role },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
          subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: ns.name }],
        },
      });
      await writeFleetChart(path.join(dir, 'fleet-v1'), 'fleet-v1');
      await writeFleetChart(path.join(dir, 'fleet-v2'), 'fleet-v2');
      watches = await watchesFile(watchEntry(BREAKABLE, fixtureChart('breakable')) + fleetWatch(path.join(dir, 'fleet-v1')));
      // --watch-config: the rollout scenario switches the fleet's chart while the operator runs.
      op = spawnOperator({
        watchesFile: watches.file,
        namespace: ns.name,
        args: ['--metrics-secure', '--metrics-require-rbac', '--watch-config'],
      });

      // Its start (tsx compiling the operator) is slow on a loaded machine: wait longer than metricsUrl's default.
      await op.waitForLog('the metrics server', (l) => l.msg === 'Serving metrics server', 240_000);
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
      port = await freePort();
      prom = spawn(
        prometheus,
        [
          `--config.file=${path.join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${path.join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
        ],
        { stdio: 'ignore' },
      );
    }, 300_000);
    afterAll(async () => {
      // The picture in docs/production.md, from the states the scenarios left (hack/dashboard-svg.ts).
      const svg = process.env.DASHBOARD_SVG;
      if (svg !== undefined && port !== 0) await writeFile(svg, await dashboardSvg(`http://127.0.0.1:${port}`));
      prom?.kill('SIGKILL');
      await killAll();
      await rbac.deleteClusterRoleBinding({ name: role }).catch(() => undefined);
      await rbac.deleteClusterRole({ name: role }).catch(() => undefined);
      await ns.remove();
      await watches.remove();
    });

    it('Prometheus scrapes the operator with a ServiceAccount token', { timeout: 150_000 }, async () => {
      // The scrape succeeds: authenticated and authorized by the operator.
      await waitFor(
        'Prometheus to scrape the operator',
        async () => ((await query('up{job="helm-operator"} == 1')).length === 1 ? true : undefined),
        {
          timeoutMs: 120_000,
          intervalMs: 500,
        },
      );
    });

    it('a failed release shows in the HelmOperatorReleaseFailed query', { timeout: 240_000 }, async () => {
      await crs.create(ns.name, 'bad-install', { configName: 'Not_A_Valid_Name' });
      await crs.waitForCondition(ns.name, 'bad-install', { type: 'ReleaseFailed', status: 'True', reason: 'InstallError' });
      expect(await alertSeries('HelmOperatorReleaseFailed')).toEqual([
        { controller: 'breakable-controller', namespace: ns.name, name: 'bad-install' },
      ]);
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
    });

    it('a drift fight over a ConfigMap field shows in the HelmOperatorDriftConflict query', { timeout: 240_000 }, async () => {
      await crs.create(ns.name, 'fought', { configName: 'fought-config' });
      await crs.waitForCondition(ns.name, 'fought', { type: 'Deployed', status: 'True' });
      // Another controller that owns data.release: it writes its value back whenever the operator restores the chart's.
      const stop = new AbortController();
      const fighter = (async () => {
        for (const deadline = Date.now() + 120_000; !stop.signal.aborted && Date.now() < deadline;) {
          const live = await core.readNamespacedConfigMap({ namespace: ns.name, name: 'fought-config' }).catch(() => undefined);
          if (live !== undefined && live.data?.release !== FIGHTER) {
            await core
              .patchNamespacedConfigMap(
                { namespace: ns.name, name: 'fought-config', body: { data: { release: FIGHTER } }, fieldManager: FIGHTER },
                setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
              )
              .catch(() => undefined);
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      try {
        const cr = await crs.waitForCondition(ns.name, 'fought', { type: 'Drifted', status: 'True', reason: 'DriftConflict' });
        expect((cr.status as { driftFights?: { fields: unknown[] } }).driftFights?.fields).toEqual([
          expect.objectContaining({ kind: 'ConfigMap', name: 'fought-config', path: '/data/release', manager: FIGHTER, conflict: true }),
        ]);
      } finally {
        stop.abort();
        await fighter;
      }
      expect(await alertSeries('HelmOperatorDriftConflict')).toEqual([{ controller: 'breakable-controller', kind: 'ConfigMap' }]);
    });

    it('a canary that fails the new chart shows in the HelmOperatorRolloutHalted query', { timeout: 240_000 }, async () => {
      for (const name of FLEET_CRS) await fleets.create(ns.name, name, {});
      for (const name of FLEET_CRS) await fleets.waitForCondition(ns.name, name, { type: 'Ready', status: 'True' });
      expect(await query(rules.find((r) => r.alert === 'HelmOperatorRolloutHalted')?.expr ?? '')).toEqual([]);

      // The new chart: its ConfigMap's name is one the API server refuses, so the canary's upgrade fails.
      await watches.write(watchEntry(BREAKABLE, fixtureChart('breakable')) + fleetWatch(path.join(dir, 'fleet-v2')));
      const [canary, rest] = FLEET_CRS;
      await fleets.waitForCondition(ns.name, canary, { type: 'Rollout', status: 'False', reason: 'RolloutFailed' });
      await fleets.waitForCondition(ns.name, rest, { type: 'Rollout', status: 'False', reason: 'RolloutHalted' });
      expect(await alertSeries('HelmOperatorRolloutHalted')).toEqual([{ controller: 'alertfleet-controller' }]);
    });
  });
});
