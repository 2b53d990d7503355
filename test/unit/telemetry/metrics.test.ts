import { register as globalRegistry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { listenHttp, type HttpListener } from '../../../src/telemetry/health.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { metricsHandler, OperatorMetrics, RECONCILE_RESULTS } from '../../../src/telemetry/metrics.js';
import { sample } from '../../support/prometheus.js';

const fresh = () => new OperatorMetrics({ version: '1.2.3', processMetrics: false });

describe('OperatorMetrics', () => {
  it('uses a private registry, never the global one', async () => {
    const m = fresh();
    m.register('nginx-controller', 2);
    expect(await globalRegistry.metrics()).not.toContain('controller_runtime_reconcile_total');
    expect(await m.metrics()).toContain('controller_runtime_reconcile_total');
  });

  it("reads a rollout's progress when scraped, once for both rollout gauges, and forgets a stopped controller's", async () => {
    const m = fresh();
    let reads = 0;
    let onTarget = 1;
    m.rollout('c', () => {
      reads++;
      return { target: 'abc', chartVersion: '1.0.0', total: 3, onTarget, failed: 1, halted: true, paused: false };
    });
    m.rollout('idle', () => undefined);
    const text = await m.metrics();
    const base = { controller: 'c', fleet_revision: 'abc', chart_version: '1.0.0' };
    expect(sample(text, 'helm_operator_rollout_releases', { ...base, state: 'on_target' })).toBe(1);
    expect(sample(text, 'helm_operator_rollout_releases', { ...base, state: 'pending' })).toBe(1);
    expect(sample(text, 'helm_operator_rollout_halted', { controller: 'c' })).toBe(1);
    expect(text).not.toContain('controller="idle"');
    expect(reads).toBe(1);
    m.forgetController('c');
    onTarget = 2;
    expect(await m.metrics()).not.toContain('helm_operator_rollout_releases{');
  });

  it('exposes the self-tuned concurrency limit once set, and no such series when it is pinned', async () => {
    const m = fresh();
    expect(await m.metrics()).not.toContain('helm_operator_concurrency_limit');
    m.concurrencyLimit(2);
    m.concurrencyLimit(5);
    expect(sample(await m.metrics(), 'helm_operator_concurrency_limit', {})).toBe(5);
  });

  it('registers every controller-runtime and helm-operator metric name', async () => {
    const m = fresh();
    m.register('c', 1);
    m.workqueue('c');
    m.reconcileTime('c', 0.1);
    m.workqueue('c').queueDuration(0.01);
    m.workqueue('c').workDuration(0.01);
    m.leaderStatus('lease', true);
    m.helmExecution({ verb: 'install', outcome: 'success', durationMs: 10 });
    m.releaseState('c', 'ns', 'a', 'InSync');
    m.driftCorrected('c', 'Deployment');
    m.trackQueues(() => [['c', { unfinishedWorkSeconds: () => 0, longestRunningProcessorSeconds: () => 0 }]]);
    const names = new Set((await m.registry.getMetricsAsJSON()).map((x) => x.name));
    for (const name of [
      'controller_runtime_reconcile_total',
      'controller_runtime_reconcile_errors_total',
      'controller_runtime_terminal_reconcile_errors_total',
      'controller_runtime_reconcile_panics_total',
      'controller_runtime_reconcile_time_seconds',
      'controller_runtime_max_concurrent_reconciles',
      'controller_runtime_active_workers',
      'workqueue_depth',
      'workqueue_adds_total',
      'workqueue_queue_duration_seconds',
      'workqueue_work_duration_seconds',
      'workqueue_retries_total',
      'workqueue_unfinished_work_seconds',
      'workqueue_longest_running_processor_seconds',
      'leader_election_master_status',
      'helm_operator_helm_executions_total',
      'helm_operator_helm_execution_duration_seconds',
      'helm_operator_releases',
      'helm_operator_drift_corrections_total',
      'helm_operator_build_info',
    ]) {
      expect(names, name).toContain(name);
    }
  });

  it('starts every result label of reconcile_total at 0 and sets max_concurrent_reconciles on register', async () => {
    const m = fresh();
    m.register('nginx-controller', 4);
    const text = await m.metrics();
    for (const result of RECONCILE_RESULTS) {
      expect(sample(text, 'controller_runtime_reconcile_total', { controller: 'nginx-controller', result })).toBe(0);
    }
    expect(sample(text, 'controller_runtime_reconcile_errors_total', { controller: 'nginx-controller' })).toBe(0);
    expect(sample(text, 'controller_runtime_terminal_reconcile_errors_total', { controller: 'nginx-controller' })).toBe(0);
    expect(sample(text, 'controller_runtime_max_concurrent_reconciles', { controller: 'nginx-controller' })).toBe(4);
    expect(sample(text, 'controller_runtime_active_workers', { controller: 'nginx-controller' })).toBe(0);
    expect(sample(text, 'workqueue_depth', { name: 'nginx-controller' })).toBeUndefined(); // only once the queue exists
  });

  it('registering a controller again (a restart after a reload) keeps its counts', async () => {
    const m = fresh();
    m.register('c', 1);
    m.reconcileTotal('c', 'success');
    m.register('c', 3);
    const text = await m.metrics();
    expect(sample(text, 'controller_runtime_reconcile_total', { controller: 'c', result: 'success' })).toBe(1);
    expect(sample(text, 'controller_runtime_max_concurrent_reconciles', { controller: 'c' })).toBe(3);
  });

  it('counts reconciles, errors and their durations', async () => {
    const m = fresh();
    m.register('c', 1);
    m.reconcileTotal('c', 'success');
    m.reconcileTotal('c', 'success');
    m.reconcileTotal('c', 'error');
    m.reconcileError('c');
    m.terminalReconcileError('c');
    m.reconcileTime('c', 0.2);
    m.activeWorkers('c', 1);
    const text = await m.metrics();
    expect(sample(text, 'controller_runtime_reconcile_total', { controller: 'c', result: 'success' })).toBe(2);
    expect(sample(text, 'controller_runtime_reconcile_total', { controller: 'c', result: 'error' })).toBe(1);
    expect(sample(text, 'controller_runtime_reconcile_errors_total', { controller: 'c' })).toBe(1);
    expect(sample(text, 'controller_runtime_terminal_reconcile_errors_total', { controller: 'c' })).toBe(1);
    expect(sample(text, 'controller_runtime_reconcile_time_seconds_count', { controller: 'c' })).toBe(1);
    expect(sample(text, 'controller_runtime_reconcile_time_seconds_bucket', { controller: 'c', le: '0.2' })).toBe(1);
    expect(sample(text, 'controller_runtime_reconcile_time_seconds_bucket', { controller: 'c', le: '0.15' })).toBe(0);
    expect(sample(text, 'controller_runtime_active_workers', { controller: 'c' })).toBe(1);
  });

  it('labels workqueue series with name and controller, and reads unfinished work at scrape time', async () => {
    const m = fresh();
    const q = m.workqueue('c');
    expect(m.workqueue('c')).toBe(q);
    q.add();
    q.add();
    q.depth(1);
    q.retry();
    q.queueDuration(0.5);
    q.workDuration(2);
    let unfinished = 3;
    m.trackQueues(() => [['c', { unfinishedWorkSeconds: () => unfinished, longestRunningProcessorSeconds: () => 1.5 }]]);
    let text = await m.metrics();
    const labels = { name: 'c', controller: 'c' };
    expect(sample(text, 'workqueue_adds_total', labels)).toBe(2);
    expect(sample(text, 'workqueue_depth', labels)).toBe(1);
    expect(sample(text, 'workqueue_retries_total', labels)).toBe(1);
    expect(sample(text, 'workqueue_queue_duration_seconds_count', labels)).toBe(1);
    expect(sample(text, 'workqueue_work_duration_seconds_sum', labels)).toBe(2);
    expect(sample(text, 'workqueue_unfinished_work_seconds', labels)).toBe(3);
    expect(sample(text, 'workqueue_longest_running_processor_seconds', labels)).toBe(1.5);
    unfinished = 7;
    text = await m.metrics();
    expect(sample(text, 'workqueue_unfinished_work_seconds', labels)).toBe(7);
    m.trackQueues(() => []);
    expect(sample(await m.metrics(), 'workqueue_unfinished_work_seconds', labels)).toBeUndefined();
  });

  it('reads helm_operator_informer_objects from the informers at scrape time, by cache and kind', async () => {
    const m = fresh();
    let deployments = 3;
    m.trackInformers(() => [
      { cache: 'cr', kind: 'Nginx', objects: 10 },
      { cache: 'dependent', kind: 'Deployment', objects: deployments },
      // Two entries of one cache and kind (two API versions, say) add up.
      { cache: 'dependent', kind: 'Service', objects: 2 },
      { cache: 'dependent', kind: 'Service', objects: 1 },
    ]);
    let text = await m.metrics();
    expect(sample(text, 'helm_operator_informer_objects', { cache: 'cr', kind: 'Nginx' })).toBe(10);
    expect(sample(text, 'helm_operator_informer_objects', { cache: 'dependent', kind: 'Deployment' })).toBe(3);
    expect(sample(text, 'helm_operator_informer_objects', { cache: 'dependent', kind: 'Service' })).toBe(3);
    deployments = 1;
    text = await m.metrics();
    expect(sample(text, 'helm_operator_informer_objects', { cache: 'dependent', kind: 'Deployment' })).toBe(1);
    m.trackInformers(() => []);
    expect(sample(await m.metrics(), 'helm_operator_informer_objects', { cache: 'cr', kind: 'Nginx' })).toBeUndefined();
  });

  it('uses client-go workqueue buckets (10ns … 1000s)', async () => {
    const m = fresh();
    m.workqueue('c').workDuration(1);
    const text = await m.metrics();
    const les = [...text.matchAll(/workqueue_work_duration_seconds_bucket\{le="([^"]+)"/g)].map((x) => x[1]);
    expect(les).toEqual(['1e-8', '1e-7', '0.000001', '0.00001', '0.0001', '0.001', '0.01', '0.1', '1', '10', '100', '1000', '+Inf']);
  });

  it('counts helm executions by verb and outcome, with durations in seconds', async () => {
    const m = fresh();
    m.helmExecution({ verb: 'install', outcome: 'success', durationMs: 1500 });
    m.helmExecution({ verb: 'upgrade', outcome: 'error', durationMs: 200 });
    m.helmExecution({ verb: 'install', outcome: 'success', durationMs: 500 });
    const text = await m.metrics();
    expect(sample(text, 'helm_operator_helm_executions_total', { verb: 'install', outcome: 'success' })).toBe(2);
    expect(sample(text, 'helm_operator_helm_executions_total', { verb: 'upgrade', outcome: 'error' })).toBe(1);
    expect(sample(text, 'helm_operator_helm_execution_duration_seconds_sum', { verb: 'install' })).toBe(2);
  });

  it('computes helm_operator_releases from each CR’s latest state; a CR moves between labels and is forgotten on delete', async () => {
    const m = fresh();
    m.releaseState('c', 'ns', 'a', 'Absent');
    m.releaseState('c', 'ns', 'b', 'Absent');
    let text = await m.metrics();
    expect(sample(text, 'helm_operator_releases', { controller: 'c', state: 'Absent' })).toBe(2);
    m.releaseState('c', 'ns', 'a', 'InSync');
    m.releaseState('c', 'ns', 'b', 'InSync');
    m.releaseState('c', 'ns', 'b', 'InSync');
    text = await m.metrics();
    expect(sample(text, 'helm_operator_releases', { controller: 'c', state: 'InSync' })).toBe(2);
    expect(sample(text, 'helm_operator_releases', { controller: 'c', state: 'Absent' })).toBe(0);
    m.forget('c', 'ns', 'a');
    m.forget('c', 'ns', 'never-seen');
    text = await m.metrics();
    expect(sample(text, 'helm_operator_releases', { controller: 'c', state: 'InSync' })).toBe(1);
    // The same namespace/name under another controller is another CR.
    m.releaseState('d', 'ns', 'b', 'Locked');
    text = await m.metrics();
    expect(sample(text, 'helm_operator_releases', { controller: 'd', state: 'Locked' })).toBe(1);
    expect(sample(text, 'helm_operator_releases', { controller: 'c', state: 'InSync' })).toBe(1);
  });

  it("drops every series of a controller a reload stopped, and only that controller's", async () => {
    const m = fresh();
    m.releaseState('gone', 'ns', 'a', 'InSync');
    m.releaseState('kept', 'ns', 'a', 'InSync');
    m.forgetController('gone');
    const text = await m.metrics();
    expect(text).not.toMatch(/helm_operator_releases\{[^}]*controller="gone"/);
    expect(sample(text, 'helm_operator_releases', { controller: 'kept', state: 'InSync' })).toBe(1);
  });

  it('counts drift corrections by controller and kind', async () => {
    const m = fresh();
    m.driftCorrected('c', 'Deployment');
    m.driftCorrected('c', 'Deployment');
    m.driftCorrected('c', 'Service');
    const text = await m.metrics();
    expect(sample(text, 'helm_operator_drift_corrections_total', { controller: 'c', kind: 'Deployment' })).toBe(2);
    expect(sample(text, 'helm_operator_drift_corrections_total', { controller: 'c', kind: 'Service' })).toBe(1);
  });

  it('exposes build info and the leader election status', async () => {
    const m = fresh();
    m.leaderStatus('my-lease', false);
    let text = await m.metrics();
    expect(sample(text, 'helm_operator_build_info', { version: '1.2.3', node_version: process.version })).toBe(1);
    expect(sample(text, 'leader_election_master_status', { name: 'my-lease' })).toBe(0);
    m.leaderStatus('my-lease', true);
    text = await m.metrics();
    expect(sample(text, 'leader_election_master_status', { name: 'my-lease' })).toBe(1);
  });

  it('includes default process metrics unless disabled', async () => {
    const m = new OperatorMetrics({ version: '0' });
    const text = await m.metrics();
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
  });
});

describe('metrics endpoint', () => {
  let server: HttpListener | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('serves /metrics in the Prometheus text format and 404 elsewhere', async () => {
    const m = fresh();
    m.register('c', 1);
    server = await listenHttp({ host: '127.0.0.1', port: 0 }, metricsHandler(m, silentLogger()));
    const res = await fetch(`http://${server.address}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    expect(sample(await res.text(), 'controller_runtime_reconcile_total', { controller: 'c', result: 'success' })).toBe(0);
    expect((await fetch(`http://${server.address}/`)).status).toBe(404);
  });
});
