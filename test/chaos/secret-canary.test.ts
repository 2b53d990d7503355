/**
 * Secret canary: a value in a CR's spec and one in the watch's overrideValues must never show in
 * the operator's debug logs, events (except the documented OverrideValuesInUse event for the
 * override), CR status, release Secret labels, `ps -eo args` while helm runs, or files left in the
 * operator's temp dir, not even after a SIGKILL in the middle of a helm call, nor when the API
 * server refuses a value the watch marks sensitive and quotes it back in its error.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, type OperatorProcess } from '../integration/production/support.js';
import { REDACTED } from '../../src/reconciler/status/redaction.js';
import { testKubeConfig, uniqueName } from '../support/kube.js';
import { condition, CRs, NGINX } from '../support/operator.js';
import { createNamespaces, helmRunning, operatorUnderTest, sleep, type OperatorUnderTest } from './support/harness.js';
import { helmChildren, killTree } from './support/processes.js';
import { recordFault, recordFuzz } from './support/report.js';
import { deploymentName, Fleet, type FleetSpec } from './support/verdict.js';

const run = promisify(execFile);
const NS = uniqueName('chaos-canary');
const SPEC_CANARY = `cnry-spec-${randomBytes(6).toString('hex')}`;
const OVERRIDE_CANARY = `cnry-ovr-${randomBytes(6).toString('hex')}`;

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

describe('secret canary', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const fleet = new Fleet(kc);
  const crs = new CRs(kc, NGINX);
  const operators: OperatorProcess[] = [];
  const psSamples: string[] = [];
  let helmSeen = 0;
  let out: OperatorUnderTest;
  let tmp = '';
  let sampling = true;
  let sampler: Promise<void> = Promise.resolve();

  const spec = (rev: number): FleetSpec & { podLabels: Record<string, string> } => ({
    replicaCount: 0,
    podAnnotations: { 'chaos.example.com/rev': String(rev), 'chaos.example.com/secret': SPEC_CANARY },
    podLabels: { 'chaos-secret': SPEC_CANARY },
  });
  const start = async (): Promise<OperatorProcess> => {
    const p = await out.start({ args: ['--zap-log-level', 'debug'], env: { TMPDIR: tmp } });
    operators.push(p);
    return p;
  };

  /** Every place the canaries must not be, and whether each holds one. */
  async function findLeaks(): Promise<string[]> {
    const leaks: string[] = [];
    const check = (where: string, text: string, allowOverride = false): void => {
      if (text.includes(SPEC_CANARY)) leaks.push(`${where}: spec canary`);
      if (!allowOverride && text.includes(OVERRIDE_CANARY)) leaks.push(`${where}: override canary`);
    };
    operators.forEach((o, i) => {
      check(`operator ${i} logs (debug)`, o.dump());
    });
    for (const e of (await core.listNamespacedEvent({ namespace: NS })).items) {
      check(`event ${e.reason ?? ''}`, JSON.stringify(e), e.reason === 'OverrideValuesInUse');
    }
    for (const cr of (await crs.list(NS)).map((c) => c.metadata.name))
      check(`CR ${cr} status`, JSON.stringify((await crs.get(NS, cr))?.status));
    const secrets = await core.listNamespacedSecret({ namespace: NS, labelSelector: 'owner=helm' });
    expect(secrets.items.length).toBeGreaterThan(0);
    for (const s of secrets.items) check(`release Secret ${s.metadata?.name ?? ''} labels`, JSON.stringify(s.metadata?.labels ?? {}));
    psSamples.forEach((sample) => {
      check('ps -eo args during a helm run', sample);
    });
    for (const file of await filesUnder(tmp)) check(`temp file ${file}`, await readFile(file, 'utf8').catch(() => ''));
    return leaks;
  }

  beforeAll(async () => {
    await createNamespaces(kc, [NS]);
    tmp = await mkdtemp(path.join(os.tmpdir(), 'chaos-canary-'));
    out = await operatorUnderTest(
      kc,
      [NS],
      `  overrideValues:\n    podAnnotations.chaos-override: ${OVERRIDE_CANARY}\n  sensitiveValues: [podLabels]\n`,
    );
    // `ps -eo args` as often as it runs, counting samples taken while the operator ran helm.
    sampler = (async () => {
      while (sampling) {
        const busy = operators.some((o) => o.child.exitCode === null && helmChildren(o.pid).some((h) => h.verb !== 'version'));
        if (!busy) {
          await sleep(5);
          continue;
        }
        const { stdout } = await run('ps', ['-eo', 'args'], { maxBuffer: 16 * 1024 * 1024 });
        helmSeen++;
        psSamples.push(stdout);
      }
    })();
  });
  afterAll(async () => {
    sampling = false;
    await sampler;
    await killAll();
    await out.remove();
    await rm(tmp, { recursive: true, force: true });
  });

  it('appears nowhere but the chart objects and the documented override event', { timeout: 240_000 }, async () => {
    let op = await start();
    await fleet.create(NS, 'canary', spec(1));
    await fleet.converge(90_000);
    await fleet.setSpec(NS, 'canary', spec(2));
    await fleet.converge(90_000);
    // The values reached the chart (the canary is real) …
    const d = await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: NS, name: deploymentName('canary') });
    expect(d.spec?.template.metadata?.annotations).toMatchObject({
      'chaos.example.com/secret': SPEC_CANARY,
      'chaos-override': OVERRIDE_CANARY,
    });

    // … and a SIGKILL in the middle of helm leaves a values file; the next operator removes it.
    await fleet.create(NS, 'canary-killed', spec(3));
    await helmRunning(op.pid, 'install');
    killTree(op.pid);
    const killedAt = Date.now();
    await op.exited;
    op = await start();
    recordFault('operator SIGKILL: install (canary)', true, await fleet.converge(90_000, killedAt));
    await fleet.delete(NS, 'canary-killed');
    await fleet.converge(90_000);
    // The kill left a values file in our temp dir (so the temp-dir check below is not vacuous) and the restart removed it.
    const removed = await op.waitForLog(
      'the stale values dir to be removed',
      (l) => l.msg === 'Removed helm values directories left behind by operator processes that were killed',
    );
    expect(String(removed.removed)).toContain(tmp);
    // Graceful stop: nothing may stay behind either.
    expect((await op.stop()).code).toBe(0);

    const leaks = await findLeaks();
    // The one documented place for the override value (masked with --suppress-override-values).
    const events = (await core.listNamespacedEvent({ namespace: NS })).items;
    expect(events.some((e) => e.reason === 'OverrideValuesInUse' && (e.message ?? '').includes(OVERRIDE_CANARY))).toBe(true);
    recordFuzz('secret canary: ps samples during helm runs', helmSeen);
    expect(helmSeen, 'ps was sampled while helm ran').toBeGreaterThan(0);
    expect(leaks).toEqual([]);
  });

  it('stays out of status, events and logs when the API server refuses it and quotes it back', { timeout: 240_000 }, async () => {
    const op = await start();
    // ':' is not allowed in a label value: the API server refuses the Deployment and quotes the value.
    await crs.create(NS, 'refused', { replicaCount: 0, podLabels: { 'chaos-secret': `${SPEC_CANARY}:refused` } });
    const cr = await crs.waitForCondition(
      NS,
      'refused',
      { type: 'ReleaseFailed', status: 'True', reason: 'InstallError' },
      { timeoutMs: 90_000 },
    );
    // What failed is still said, the value itself is not.
    expect(condition(cr, 'ReleaseFailed')?.message).toContain(`Invalid value: "${REDACTED}"`);
    await op.waitForLog('the failed reconcile to be logged', (l) => l.msg === 'Reconciler error');
    expect((await op.stop()).code).toBe(0);
    expect(await findLeaks()).toEqual([]);
  });
});
