import { AdmissionregistrationV1Api, PatchStrategy, setHeaderOptions, type V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { FIGHT_RESTORES } from '../../../src/reconciler/drift/drift-fight.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import type { DriftFights } from '../../../src/reconciler/status/status.js';
import { condition, CRs, ensureCrd, startOperator, type CR, type RunningOperator, type TestKind } from '../../support/operator.js';
import { total } from '../../support/prometheus.js';
import { IDIOM_CHARTS } from './cases.js';

const FIGHT: TestKind = { group: 'idioms.example.com', version: 'v1', kind: 'IdiomInjector', plural: 'idiominjectors' };
const IGNORED: TestKind = { group: 'idioms.example.com', version: 'v1', kind: 'IdiomInjectorIgnored', plural: 'idiominjectorignoreds' };
const CHART = path.join(IDIOM_CHARTS, 'injector');
const CA_BUNDLE = Buffer.from('-----BEGIN CERTIFICATE-----\nidiom-injector test CA\n-----END CERTIFICATE-----\n').toString('base64');
const INJECTOR = 'idiom-injector';
const POINTER = '/webhooks/0/clientConfig/caBundle';
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
const fightsOf = (cr: CR | undefined): DriftFights | undefined => (cr?.status as { driftFights?: DriftFights } | undefined)?.driftFights;

const watches = (): string =>
  [
    `- {group: ${FIGHT.group}, version: v1, kind: ${FIGHT.kind}, chart: ${CHART}}`,
    `- group: ${IGNORED.group}`,
    '  version: v1',
    `  kind: ${IGNORED.kind}`,
    `  chart: ${CHART}`,
    '  driftIgnore:',
    `    - paths: [${POINTER}]`,
    '      target: {kind: MutatingWebhookConfiguration}',
    '',
  ].join('\n');

/**
 * A chart written the way vault's agent injector is (`caBundle: ""` in the template) and a
 * controller of its own writing its CA there whenever it is not: the operator must not fight it
 * forever. Without a rule it restores the field a bounded number of times, then leaves it and
 * says so; with a rule it never touches it. Either way the rest of the object is still repaired
 * and a deleted object is recreated.
 */
describe('drift repair next to a controller that owns a field the chart renders', () => {
  const kc = testKubeConfig();
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  const fight = new CRs(kc, FIGHT);
  const ignored = new CRs(kc, IGNORED);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  const configName = (release: string): string => `${release}-${ns.name}-injector-cfg`;
  const read = async (release: string): Promise<V1MutatingWebhookConfiguration | undefined> => {
    try {
      return await admission.readMutatingWebhookConfiguration({ name: configName(release) });
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  };
  const caBundleOf = (c: V1MutatingWebhookConfiguration | undefined): string | undefined => c?.webhooks?.[0]?.clientConfig.caBundle;
  const edit = (release: string, manager: string, op: Record<string, unknown>) =>
    admission.patchMutatingWebhookConfiguration({ name: configName(release), body: [op], fieldManager: manager }, jsonPatch);

  /**
   * The injector: writes its CA into the field, as its own field manager, whenever it is not
   * there, until stopped (bounded: 120 s). Resolves with how many times it wrote.
   */
  const runInjector = (release: string, stop: AbortSignal): { writes: () => number; done: Promise<void> } => {
    let writes = 0;
    const done = (async () => {
      for (const deadline = Date.now() + 120_000; !stop.aborted && Date.now() < deadline;) {
        const live = await read(release);
        if (live !== undefined && caBundleOf(live) !== CA_BUNDLE) {
          await edit(release, INJECTOR, { op: 'add', path: POINTER, value: CA_BUNDLE }).catch(() => undefined);
          writes++;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    return { writes: () => writes, done };
  };

  const installedWithInjector = async (kind: CRs, release: string) => {
    await kind.create(ns.name, release, {});
    await kind.waitForCondition(ns.name, release, { type: 'Deployed', status: 'True' });
    const stop = new AbortController();
    return { stop, injector: runInjector(release, stop.signal) };
  };

  /** A hand edit of another field of the same object, and its repair. */
  const editAndRepair = async (release: string): Promise<void> => {
    await edit(release, 'kubectl-edit', { op: 'replace', path: '/webhooks/0/timeoutSeconds', value: 30 });
    await waitFor('the hand-edited timeoutSeconds to be restored', async () => (await read(release))?.webhooks?.[0]?.timeoutSeconds === 10);
  };
  const restoresOfCaBundle = async (kind: CRs, name: string): Promise<number> =>
    (await kind.events(ns.name, name))
      .filter((e) => e.reason === 'DriftCorrected' && (e.message ?? '').includes('caBundle'))
      .reduce((n, e) => n + (e.count ?? 1), 0);
  const recreated = async (release: string): Promise<void> => {
    const uid = (await read(release))?.metadata?.uid;
    await admission.deleteMutatingWebhookConfiguration({ name: configName(release) });
    await waitFor('the deleted MutatingWebhookConfiguration to be recreated', async () => {
      const now = await read(release);
      return now !== undefined && now.metadata?.uid !== uid;
    });
  };

  beforeAll(async () => {
    await ensureCrd(kc, FIGHT);
    await ensureCrd(kc, IGNORED);
    ns = await createNamespace(kc, 'drift-fight');
    op = await startOperator({ watches: watches(), namespaces: [ns.name] });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('without a rule: restores the field a bounded number of times, then leaves it to the other manager and says so', async () => {
    const { stop, injector } = await installedWithInjector(fight, 'vault');
    try {
      const cr = await fight.waitForCondition(
        ns.name,
        'vault',
        { type: 'Drifted', status: 'True', reason: 'DriftConflict' },
        { timeoutMs: 90_000 },
      );
      const message = condition(cr, 'Drifted')?.message ?? '';
      expect(message).toContain(`MutatingWebhookConfiguration ${configName('vault')}`);
      expect(message).toContain(`field ${POINTER}`);
      expect(message).toContain(`field manager "${INJECTOR}"`);
      expect(message).toContain(
        `add the rule {paths: [${POINTER}], target: {kind: MutatingWebhookConfiguration, name: ${configName('vault')}}} to the watch's driftIgnore`,
      );
      expect(fightsOf(cr)).toMatchObject({
        revision: 1,
        fields: [{ path: POINTER, manager: INJECTOR, restores: FIGHT_RESTORES, conflict: true }],
      });
      // The first write, then one after each restore; the last one stays.
      expect(injector.writes()).toBe(FIGHT_RESTORES + 1);
      expect(await restoresOfCaBundle(fight, 'vault')).toBe(FIGHT_RESTORES);
      const conflicts = (await fight.events(ns.name, 'vault')).filter((e) => e.reason === 'DriftConflict');
      expect(conflicts.map((e) => [e.type, e.count ?? 1])).toEqual([['Warning', 1]]);
      expect(total(await op.metrics.metrics(), 'helm_operator_drift_conflicts_total', { kind: 'MutatingWebhookConfiguration' })).toBe(1);

      // Another field of the same object is still repaired, and the fought-over one left alone.
      await editAndRepair('vault');
      expect(caBundleOf(await read('vault'))).toBe(CA_BUNDLE);
      expect(injector.writes()).toBe(FIGHT_RESTORES + 1);

      // The records are in status: a restarted operator does not start the fight again.
      await op.stop();
      op = await startOperator({ watches: watches(), namespaces: [ns.name] });
      await editAndRepair('vault');
      expect(caBundleOf(await read('vault'))).toBe(CA_BUNDLE);
      expect(injector.writes()).toBe(FIGHT_RESTORES + 1);
      expect(condition(await fight.get(ns.name, 'vault'), 'Drifted')?.reason).toBe('DriftConflict');

      await recreated('vault');
    } finally {
      stop.abort();
      await injector.done;
    }
  });

  it('with an ignore rule: never restores the field nor reports it, and still repairs the rest', async () => {
    const { stop, injector } = await installedWithInjector(ignored, 'vault-ignored');
    try {
      await waitFor('the injector to have written its CA', async () => caBundleOf(await read('vault-ignored')) === CA_BUNDLE);
      // The repair of this edit is a reconcile of the object after the injector's write.
      await editAndRepair('vault-ignored');
      expect(caBundleOf(await read('vault-ignored'))).toBe(CA_BUNDLE);
      expect(injector.writes()).toBe(1);
      expect(await restoresOfCaBundle(ignored, 'vault-ignored')).toBe(0);
      const cr = await ignored.get(ns.name, 'vault-ignored');
      expect(condition(cr, 'Drifted')).toBeUndefined();
      // Only the hand edit was restored (and counted): the ignored field never was.
      expect(fightsOf(cr)?.fields.map((f) => [f.path, f.manager])).toEqual([['/webhooks/0/timeoutSeconds', 'kubectl-edit']]);

      await recreated('vault-ignored');
    } finally {
      stop.abort();
      await injector.done;
    }
  });

  it('refuses a CR’s ignore annotation the watch does not allow, and repairs everything', async () => {
    const annotations = { 'helm.sdk.operatorframework.io/drift-ignore': `[{paths: [${POINTER}]}]` };
    await fight.create(ns.name, 'tenant', {}, annotations);
    const cr = await fight.waitForCondition(ns.name, 'tenant', { type: 'Drifted', status: 'False', reason: 'DriftIgnoreRefused' });
    expect(condition(cr, 'Drifted')?.message).toContain('the watch does not set allowDriftIgnoreAnnotation: true');
    await editAndRepair('tenant');
  });
});
