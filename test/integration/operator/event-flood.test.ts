import type { CoreV1Event } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_GO_LIMITS, COMBINED_PREFIX } from '../../../src/k8s/event-correlator.js';
import { ANNOTATIONS } from '../../../src/reconciler/decide/annotations.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  activity,
  CRs,
  ensureCrd,
  fixtureChart,
  startOperator,
  waitForReconciles,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';
import { total } from '../../support/prometheus.js';

const NOISY: TestKind = { group: 'test.example.com', version: 'v1', kind: 'Noisy', plural: 'noisies' };
const CONTROLLER = 'noisy-controller';
/** Every reconcile of a CR with this annotation value records an InvalidAnnotation Warning. */
const invalid = (value: string): Record<string, string> => ({ [ANNOTATIONS.uninstallWait]: value });

/**
 * Events correlated as client-go does (ADR 0063), on the real API server: a failure repeated is
 * one Event with a count, a flood of distinct messages about one CR is combined and rate limited,
 * and another CR's events go on meanwhile.
 */
describe('events about a CR that keeps failing', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, NOISY);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  const invalidEvents = async (name: string): Promise<CoreV1Event[]> =>
    (await crs.events(ns.name, name)).filter((e) => e.reason === 'InvalidAnnotation');
  /** Pokes `name` and waits for the reconcile the poke brings. */
  const poke = async (name: string, annotations: Record<string, string>): Promise<void> => {
    const before = await activity(op);
    await crs.patch(ns.name, name, { metadata: { annotations } });
    await waitForReconciles(op, CONTROLLER, before, 1);
  };

  beforeAll(async () => {
    await ensureCrd(kc, NOISY);
    ns = await createNamespace(kc, 'event-flood');
    op = await startOperator({
      watches: `- {group: ${NOISY.group}, version: ${NOISY.version}, kind: ${NOISY.kind}, chart: ${fixtureChart('breakable')}}\n`,
      namespaces: [ns.name],
    });
    await crs.create(ns.name, 'steady', { configName: 'steady-settings' }, invalid('maybe'));
    await crs.create(ns.name, 'hostile', { configName: 'hostile-settings' });
    await crs.waitForCondition(ns.name, 'steady', { type: 'Deployed', status: 'True' });
    await crs.waitForCondition(ns.name, 'hostile', { type: 'Deployed', status: 'True' });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('keeps one Event for the same failure repeated, its count going up', async () => {
    const repeats = 6;
    for (let i = 0; i < repeats; i++) await poke('steady', { 'test.example.com/poke': String(i) });
    const events = await waitFor('one InvalidAnnotation Event counting every repeat', async () => {
      const found = await invalidEvents('steady');
      return (found[0]?.count ?? 0) >= repeats ? found : undefined;
    });
    expect(events).toHaveLength(1);
    expect(events[0]?.message).toContain('"maybe" is not a boolean');
  });

  it("holds a flood of distinct messages about one CR to the limit, and leaves another CR's events alone", async () => {
    const flood = 40;
    for (let i = 0; i < flood; i++) await poke('hostile', invalid(`x${i}`));
    // The writes the flood brought are done once the rate limit shows in the metric.
    await waitFor(
      'dropped events to be counted',
      async () =>
        total(await op.metrics.metrics(), 'helm_operator_events_dropped_total', { controller: CONTROLLER, reason: 'rate-limited' }) > 0,
    );
    const events = await invalidEvents('hostile');
    // Ten messages of their own, then one combined Event for the rest: not one Event per message.
    expect(events.length).toBeLessThanOrEqual(CLIENT_GO_LIMITS.maxSimilar + 1);
    expect(events.filter((e) => e.message?.startsWith(COMBINED_PREFIX))).toHaveLength(1);
    // Every write took a token: the Events' counts add up to at most the burst.
    expect(events.reduce((n, e) => n + (e.count ?? 0), 0)).toBeLessThanOrEqual(CLIENT_GO_LIMITS.burst);

    const before = (await invalidEvents('steady'))[0]?.count ?? 0;
    await poke('steady', { 'test.example.com/poke': 'after the flood' });
    await waitFor("the steady CR's Event to count the new repeat", async () => ((await invalidEvents('steady'))[0]?.count ?? 0) > before);
    expect(await invalidEvents('steady')).toHaveLength(1);
  });
});
