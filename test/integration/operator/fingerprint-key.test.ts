/**
 * The fingerprint in CR status (`failedAttempts`) is keyed (ADR 0044): a tenant who reads the
 * status of a CR whose values come from a Secret cannot test guesses of that Secret against it,
 * while the retry budget still counts across restarts and replicas, and a new key upgrades nothing.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadWatches } from '../../../src/config/watches.js';
import { HelmClient } from '../../../src/helm/index.js';
import { FINGERPRINT_KEY_SECRET, loadFingerprintKey } from '../../../src/operator/fingerprint-key.js';
import { VALUES_FROM_ANNOTATION } from '../../../src/reconciler/desired/values-from.js';
import { fingerprint, keyedFingerprint } from '../../../src/reconciler/desired/values.js';
import { makeLogger } from '../../../src/telemetry/logger.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { total } from '../../support/prometheus.js';
import {
  activity,
  condition,
  CRs,
  ensureCrd,
  fixtureChart,
  startOperator,
  waitForReconciles,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';

const PINNED: TestKind = { group: 'fingerprint.example.com', version: 'v1', kind: 'PinnedApp', plural: 'pinnedapps' };
const WATCHES = `- {group: ${PINNED.group}, version: ${PINNED.version}, kind: ${PINNED.kind}, chart: ${fixtureChart('tenant-app')}}\n`;
const CONTROLLER = 'pinnedapp-controller';
const log = makeLogger({ level: 'silent' });

type Counted = { status?: { failedAttempts?: { fingerprint: string; count: number } } };

describe('the fingerprint CR status shows', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const apps = new CRs(kc, PINNED);
  let operatorNs: Awaited<ReturnType<typeof createNamespace>>;
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator | undefined;
  let chartDigest = '';
  let helmMajor = 0;

  const attempts = async (name: string): Promise<{ fingerprint: string; count: number } | undefined> =>
    ((await apps.get(ns.name, name)) as Counted | undefined)?.status?.failedAttempts;
  /** What a tenant computes for a guess of the Secret's value: the values the CR's release gets, fingerprinted. */
  const plain = (pin: string): string => fingerprint({ chartDigest, values: { tier: pin }, helmMajor });
  /** What an earlier operator process left in status. */
  const setAttempts = async (fp: string, count: number): Promise<void> => {
    await kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObjectStatus(
      {
        group: PINNED.group,
        version: PINNED.version,
        plural: PINNED.plural,
        namespace: ns.name,
        name: 'guessed',
        body: { status: { failedAttempts: { fingerprint: fp, count } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };
  const stop = async (): Promise<void> => {
    await op?.stop();
    op = undefined;
  };
  const start = async (key: Uint8Array): Promise<RunningOperator> =>
    (op = await startOperator({ watches: WATCHES, namespaces: [ns.name], fingerprintKey: key }));

  beforeAll(async () => {
    await ensureCrd(kc, PINNED);
    operatorNs = await createNamespace(kc, 'fp-operator');
    ns = await createNamespace(kc, 'fp-tenant');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'fp-watches-'));
    await writeFile(path.join(dir, 'watches.yaml'), WATCHES);
    chartDigest = (await loadWatches(path.join(dir, 'watches.yaml')))[0]?.chart.digest ?? '';
    await rm(dir, { recursive: true, force: true });
    helmMajor = (await new HelmClient({ binary: inject('helmBin') }).version()).major;
  });
  afterAll(async () => {
    await stop();
    await ns.remove();
    await operatorNs.remove();
  });

  it('keeps one key in a Secret of the operator namespace: made once, shared by replicas starting together and by restarts', async () => {
    const [a, b] = await Promise.all([loadFingerprintKey(kc, operatorNs.name, log), loadFingerprintKey(kc, operatorNs.name, log)]);
    expect(a).toEqual(b);
    expect(await loadFingerprintKey(kc, operatorNs.name, log)).toEqual(a);
    const secret = await core.readNamespacedSecret({ namespace: operatorNs.name, name: FINGERPRINT_KEY_SECRET });
    expect(Buffer.from(secret.data?.key ?? '', 'base64')).toEqual(a);
  });

  it(
    'cannot be matched by guessing a Secret value, and counts failed attempts across a restart and an upgrade from the plain fingerprint',
    { timeout: 240_000 },
    async () => {
      const key = await loadFingerprintKey(kc, operatorNs.name, log);
      // A 4-digit PIN with ':' (not a valid label value): the API server refuses every install.
      const pin = `pin:${String(Math.floor(Math.random() * 10_000)).padStart(4, '0')}`;
      await core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name: 'pin' }, stringData: { pin } } });
      const refs = [{ kind: 'Secret', name: 'pin', key: 'pin', targetPath: 'tier' }];
      await apps.create(ns.name, 'guessed', {}, { [VALUES_FROM_ANNOTATION]: JSON.stringify(refs) });
      await start(key);
      const first = await waitFor('a failed attempt counted', () => attempts('guessed'), { timeoutMs: 90_000 });

      // The attack: every PIN, fingerprinted as the operator does; the right one is among them.
      const guesses = Array.from({ length: 10_000 }, (_, i) => plain(`pin:${String(i).padStart(4, '0')}`));
      expect(guesses).toContain(plain(pin));
      expect(guesses).not.toContain(first.fingerprint);
      expect(first.fingerprint).toBe(keyedFingerprint(key, plain(pin)));

      // A restart with the key from the Secret goes on counting (from 1, set here, as failures come fast).
      await stop();
      await setAttempts(first.fingerprint, 1);
      await start(await loadFingerprintKey(kc, operatorNs.name, log));
      const after = await waitFor(
        'another failed attempt after the restart',
        async () => (((await attempts('guessed'))?.count ?? 0) >= 2 ? attempts('guessed') : undefined),
        { timeoutMs: 90_000 },
      );
      expect(after.fingerprint).toBe(first.fingerprint);

      // An operator from before ADR 0044 counted under the plain fingerprint: its count is kept, and the plain one leaves status.
      await stop();
      // Its budget was spent: the upgraded operator stalls the CR without running helm install again.
      await setAttempts(plain(pin), 5);
      const upgraded = await start(key);
      const stalled = await waitFor(
        'the spent count, moved to the keyed fingerprint, to stall the CR',
        async () => {
          const cr = await apps.get(ns.name, 'guessed');
          return (cr as Counted | undefined)?.status?.failedAttempts?.fingerprint === first.fingerprint &&
            condition(cr, 'Stalled')?.status === 'True'
            ? cr
            : undefined;
        },
        { timeoutMs: 90_000 },
      );
      expect((stalled as Counted).status?.failedAttempts).toEqual({ fingerprint: first.fingerprint, count: 5 });
      expect(total(await upgraded.metrics.metrics(), 'helm_operator_helm_executions_total', { verb: 'install' })).toBe(0);
    },
  );

  it('a new key upgrades no release: the release label keeps the plain fingerprint', { timeout: 120_000 }, async () => {
    await stop();
    await start(await loadFingerprintKey(kc, operatorNs.name, log));
    await apps.create(ns.name, 'settled', { tier: 'gold' });
    const deployed = await apps.waitForCondition(ns.name, 'settled', { type: 'Deployed', status: 'True' });
    const revision = deployed.status?.deployedRelease?.revision;
    await stop();
    const other = await start(Buffer.alloc(32, 9));
    const before = await activity(other);
    await apps.patch(ns.name, 'settled', { metadata: { annotations: { 'test.example.com/poke': '1' } } });
    // Any reconcile of the restarted operator decides with the new key: the start's own, or the poke's.
    await waitForReconciles(other, CONTROLLER, before, 1);
    expect((await apps.get(ns.name, 'settled'))?.status?.deployedRelease?.revision).toBe(revision);
  });
});
