/**
 * Scenario 3: 60 CRs created at once while 10 of them get 20 spec changes each within seconds,
 * and a namespace holding 20 CRs deleted while they install.
 *
 * 60 is a burst well past the 8 reconciles at once, which is what the verdict needs: every flapping
 * CR ends at its last spec, no release is left pending, the operator idles. How long a burst of
 * hundreds takes to converge is a figure, not a verdict: `npm run bench` measures it
 * (docs/benchmarks.md), and CHAOS_FLOOD=200 runs this scenario at its former size.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, type OperatorProcess } from '../integration/production/support.js';
import { testKubeConfig, waitFor, uniqueName } from '../support/kube.js';
import { createNamespaces, helmRunning, operatorUnderTest, sleep, type OperatorUnderTest } from './support/harness.js';
import { recordFault } from './support/report.js';
import { expectIdle, Fleet, specFor } from './support/verdict.js';

const COUNT = Number(process.env.CHAOS_FLOOD ?? 60);
const FLAPPING = 10;
const FLAPS = 20;
const NS = uniqueName('chaos-flood');
const DOOMED = uniqueName('chaos-doomed');

describe('a flood of CRs with flapping specs, and a namespace deleted under its installs', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const fleet = new Fleet(kc);
  let out: OperatorUnderTest;
  let op: OperatorProcess;

  beforeAll(async () => {
    await createNamespaces(kc, [NS, DOOMED]);
    out = await operatorUnderTest(kc, [NS, DOOMED]);
    op = await out.start({ args: ['--max-concurrent-reconciles', '8'] });
  });
  afterAll(async () => {
    await killAll();
    await out.remove();
  });

  it(`converges ${COUNT} CRs while ${FLAPPING} of them change spec ${FLAPS} times`, { timeout: 420_000 }, async () => {
    const started = Date.now();
    const names = Array.from({ length: COUNT }, (_, i) => `flood-${String(i).padStart(3, '0')}`);
    // Bounded parallelism for the client side, so the burst is the operator's problem, not the test's.
    for (let i = 0; i < names.length; i += 50) await Promise.all(names.slice(i, i + 50).map((n) => fleet.create(NS, n, specFor(0))));
    const flapping = names.filter((_, i) => i % Math.floor(COUNT / FLAPPING) === 0).slice(0, FLAPPING);
    for (let rev = 1; rev <= FLAPS; rev++) {
      await Promise.all(flapping.map((n) => fleet.setSpec(NS, n, specFor(rev, rev % 2))));
      await sleep(100);
    }
    try {
      const ms = await fleet.converge(360_000, started);
      recordFault(`${COUNT} CRs at once + ${FLAPPING}x${FLAPS} spec flaps`, true, ms);
    } catch (err) {
      recordFault(`${COUNT} CRs at once + ${FLAPPING}x${FLAPS} spec flaps`, false, null);
      throw err;
    }
    await expectIdle(op.pid);
  });

  it(
    'a namespace with 20 installing CRs deleted: every CR goes, the namespace goes, nothing is orphaned',
    { timeout: 240_000 },
    async () => {
      for (let i = 0; i < 20; i++) await fleet.create(DOOMED, `doomed-${i}`, specFor(i));
      await helmRunning(op.pid, 'install');
      await sleep(500);
      await core.deleteNamespace({ name: DOOMED });
      const deletedAt = Date.now();
      fleet.forgetNamespace(DOOMED);
      try {
        await waitFor(
          `namespace ${DOOMED} to be gone`,
          async () => !(await core.listNamespace()).items.some((n) => n.metadata?.name === DOOMED),
          { timeoutMs: 180_000, intervalMs: 1_000 },
        );
        const ms = await fleet.converge(60_000, deletedAt);
        recordFault('namespace deleted during 20 installs', true, ms);
      } catch (err) {
        recordFault('namespace deleted during 20 installs', false, null);
        throw err;
      }
      expect((await fleet.problems()).length).toBe(0);
      await expectIdle(op.pid);
    },
  );
});
