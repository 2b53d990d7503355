import { describe, expect, it } from 'vitest';
import { correctDrift } from '../../../../src/reconciler/actions/correct-drift.js';
import { DRIFT_REPAIR_ATTEMPTS } from '../../../../src/reconciler/drift/drift-budget.js';
import { ChangedOutsideError } from '../../../../src/reconciler/decide/outside-change.js';
import { jsonDigest } from '../../../../src/util/canonical-json.js';
import type { DriftRepairFailures } from '../../../../src/reconciler/status/status.js';
import { CHART, DEFAULT_MANIFEST, entries, harness, NAME, NAMESPACE, READY, record, UID, type Harness } from './fakes.js';

const INVENTORY = [
  { apiVersion: 'v1', kind: 'ConfigMap', namespace: NAMESPACE, name: 'web-config' },
  { apiVersion: 'apps/v1', kind: 'Deployment', namespace: NAMESPACE, name: 'web' },
];
const FAILURES = [
  { object: 'Deployment apps/web', message: 'admission webhook denied the request' },
  { object: 'ConfigMap apps/web-config', message: 'forbidden' },
];
/** What the desired state gives helm (its values' digest is compared with a revision read from helm). */
const DESIRED = { values: { replicaCount: 2, image: { tag: '1.25' } } };
const SUMMARY = 'Deployment apps/web: admission webhook denied the request; ConfigMap apps/web-config: forbidden';

/** A CR at `generation` whose revision 2 is deployed, its manifest kept from an earlier pass. */
async function kept(
  o: { generation?: number; failures?: DriftRepairFailures; annotations?: Record<string, string> } = {},
): Promise<Harness> {
  const h = harness({
    generation: o.generation ?? 4,
    ...(o.failures === undefined ? {} : { status: { driftRepairFailures: o.failures } }),
    ...(o.annotations === undefined ? {} : { annotations: o.annotations }),
  });
  await h.manifests.remember(NAME, UID, { namespace: NAMESPACE, revision: 2, manifest: DEFAULT_MANIFEST });
  return h;
}

describe('correctDrift', () => {
  it('works from the kept manifest without helm, repairs, then adopts and summarises readiness', async () => {
    const h = await kept();
    const objects = h.manifests.get(NAMESPACE, NAME, UID, 2);
    const outcome = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED);
    expect(outcome).toStrictEqual({
      kind: 'in-sync',
      revision: 2,
      deployment: { inventory: INVENTORY, ready: READY },
      drift: { kind: 'settled' },
    });
    expect(h.helm.calls).toStrictEqual([]);
    expect(h.objects.repaired).toStrictEqual([objects]);
    expect(h.objects.adopted).toStrictEqual([{ desired: objects, options: undefined }]);
    expect(h.objects.readinessSeen[0]).toBe(h.objects.seen);
    // A recreated object gets its owner right after the repair.
    expect(h.objects.order).toStrictEqual(['repairDrift', 'adopt', 'readiness']);
  });

  it('reads the release from helm when nothing is kept, reports it and keeps its manifest', async () => {
    const h = harness();
    h.helm.release = { ...h.helm.release, revision: 2 };
    const outcome = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED);
    expect(h.helm.callsOf('status')).toStrictEqual([{ release: NAME, namespace: NAMESPACE }]);
    expect(outcome).toStrictEqual({
      kind: 'in-sync',
      revision: 2,
      deployment: {
        release: {
          name: NAME,
          namespace: NAMESPACE,
          revision: 2,
          chart: CHART.name,
          chartVersion: CHART.version,
          appVersion: CHART.appVersion,
        },
        inventory: INVENTORY,
        ready: READY,
      },
      drift: { kind: 'settled' },
    });
    expect(entries(h.manifests.get(NAMESPACE, NAME, UID, 2))).toStrictEqual(INVENTORY);
  });

  it('does not use a manifest kept for another CR instance of the name, or another revision', async () => {
    for (const [uid, revision] of [
      ['uid-earlier', 2],
      [UID, 1],
    ] as const) {
      const h = harness();
      h.helm.release = { ...h.helm.release, revision: 2 };
      await h.manifests.remember(NAME, uid, { namespace: NAMESPACE, revision, manifest: DEFAULT_MANIFEST });
      const outcome = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED);
      expect(h.helm.methods()).toStrictEqual(['status']);
      expect(outcome).toMatchObject({ kind: 'in-sync', deployment: { release: { revision: 2 } } });
    }
  });

  it('reads a revision made from the desired values as in sync, whatever the order of their keys', async () => {
    const h = harness();
    h.helm.release = { ...h.helm.release, revision: 2, valuesDigest: jsonDigest({ image: { tag: '1.25' }, replicaCount: 2 }) };
    const outcome = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED);
    expect(outcome).toMatchObject({ kind: 'in-sync', revision: 2 });
  });

  it('throws ChangedOutsideError for a revision helm stored with other values or another chart version, and keeps nothing of it', async () => {
    for (const change of [{ valuesDigest: jsonDigest({ ...DESIRED.values, replicaCount: 3 }) }, { chartVersion: '1.2.4' }]) {
      const h = harness();
      h.helm.release = { ...h.helm.release, revision: 2, ...change };
      const error = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(ChangedOutsideError);
      expect((error as ChangedOutsideError).deployed).toStrictEqual(record(2, 'deployed'));
      expect(h.manifests.get(NAMESPACE, NAME, UID, 2)).toBeUndefined();
      expect(h.objects.order).toStrictEqual([]);
    }
  });

  it('never reads helm, so never compares, for a revision this process made', async () => {
    const h = await kept();
    h.helm.release = { ...h.helm.release, revision: 2, valuesDigest: 'other' };
    expect(await correctDrift(h.ctx, record(2, 'deployed'), DESIRED)).toMatchObject({ kind: 'in-sync' });
    expect(h.helm.calls).toStrictEqual([]);
  });

  it('throws when the release vanished while being read', async () => {
    const h = harness();
    h.helm.exists = false;
    await expect(correctDrift(h.ctx, record(2, 'deployed'), DESIRED)).rejects.toThrow(`release ${NAME} vanished while being read`);
    expect(h.objects.order).toStrictEqual([]);
  });

  it('repairs nothing when the CR turns drift repair off, but still adopts and summarises', async () => {
    const h = await kept({
      annotations: { 'helm.sdk.operatorframework.io/drift-repair': 'false' },
      failures: { revision: 2, generation: 4, count: 2 },
    });
    h.objects.repairFailures = FAILURES;
    const outcome = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED);
    expect(outcome).toMatchObject({ kind: 'in-sync', drift: { kind: 'settled' } });
    expect(h.objects.repaired).toStrictEqual([]);
    expect(h.objects.order).toStrictEqual(['adopt', 'readiness']);
  });

  it('reports failed repairs as failing, counted for this revision and generation', async () => {
    const h = await kept();
    h.objects.repairFailures = FAILURES;
    const outcome = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED);
    expect(outcome).toMatchObject({
      kind: 'in-sync',
      revision: 2,
      drift: { kind: 'failing', record: { revision: 2, generation: 4, count: 1 }, summary: SUMMARY },
    });
    // The release's other objects are handled all the same.
    expect(h.objects.order).toStrictEqual(['repairDrift', 'adopt', 'readiness']);
  });

  it('counts on from earlier failures of the same revision and generation', async () => {
    const h = await kept({ failures: { revision: 2, generation: 4, count: 2 } });
    h.objects.repairFailures = FAILURES;
    const outcome = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED);
    expect(outcome).toMatchObject({ drift: { kind: 'failing', record: { revision: 2, generation: 4, count: 3 } } });
  });

  it('starts again at 1 for a new revision or a new generation', async () => {
    for (const failures of [
      { revision: 1, generation: 4, count: DRIFT_REPAIR_ATTEMPTS },
      { revision: 2, generation: 3, count: DRIFT_REPAIR_ATTEMPTS },
    ]) {
      const h = await kept({ failures });
      h.objects.repairFailures = FAILURES;
      const outcome = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED);
      expect(outcome).toMatchObject({ drift: { kind: 'failing', record: { revision: 2, generation: 4, count: 1 } } });
    }
  });

  it('says once that the pass spending the budget exhausted it', async () => {
    const h = await kept({ failures: { revision: 2, generation: 4, count: DRIFT_REPAIR_ATTEMPTS - 1 } });
    h.objects.repairFailures = FAILURES;
    const outcome = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED);
    expect(outcome).toMatchObject({
      drift: {
        kind: 'exhausted',
        record: { revision: 2, generation: 4, count: DRIFT_REPAIR_ATTEMPTS },
        message: `Drift repair of revision 2 failed ${DRIFT_REPAIR_ATTEMPTS} times; it stays stopped until an upgrade or a spec change: ${SUMMARY}`,
      },
    });
  });

  it('stops repairing once the budget of this revision and generation is spent', async () => {
    const h = await kept({ failures: { revision: 2, generation: 4, count: DRIFT_REPAIR_ATTEMPTS } });
    h.objects.repairFailures = FAILURES;
    const outcome = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED);
    expect(outcome).toStrictEqual({
      kind: 'in-sync',
      revision: 2,
      deployment: { inventory: INVENTORY, ready: READY },
      drift: { kind: 'stopped' },
    });
    expect(h.objects.repaired).toStrictEqual([]);
    expect(h.objects.order).toStrictEqual(['adopt', 'readiness']);
  });

  it('settles when a repair works again, whatever failed before', async () => {
    const h = await kept({ failures: { revision: 2, generation: 4, count: 3 } });
    const outcome = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED);
    expect(outcome).toMatchObject({ drift: { kind: 'settled' } });
  });

  it('counts a CR without a generation under no generation', async () => {
    const h = harness();
    await h.manifests.remember(NAME, UID, { namespace: NAMESPACE, revision: 2, manifest: DEFAULT_MANIFEST });
    h.objects.repairFailures = FAILURES;
    const outcome = await correctDrift(h.ctx, record(2, 'deployed'), DESIRED);
    expect(outcome).toMatchObject({ drift: { kind: 'failing', record: { revision: 2, count: 1 } } });
    expect(outcome.kind === 'in-sync' && outcome.drift.kind === 'failing' ? outcome.drift.record : undefined).toStrictEqual({
      revision: 2,
      count: 1,
    });
  });
});
