/**
 * Moved from the operator-level test/integration/operator/hostile-input.test.ts (issue 45, item 2),
 * which ran the operator as its own process. A tenant who may only create CRs attacks the operator
 * with its input (issue 32): a values-from targetPath whose `[` never closes (the parser looped
 * forever, /healthz stopped in 2 s, the heap ran out in 18 s, and after a restart it died again on
 * the same CR), an index of 4294967294 on a ConfigMap every namespace has (a list of that length
 * exhausted the heap in 20 s), and a spec nested 2000 deep (the stack overflowed on every retry).
 * Here the reconciler runs in the test's own process: a hang is a reconcile that never returns (the
 * case times out), a heap exhausted kills the test worker, a stack overflow is an error retried until
 * `reconcileUntilSettled` gives up; and the same reconciler must go on to install another
 * namespace's CR afterwards.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus } from '../../src/k8s/errors.js';
import { VALUES_FROM_ANNOTATION } from '../../src/reconciler/desired/values-from.js';
import { TerminalError } from '../../src/runtime/reconcile.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, type TestKind } from '../support/operator.js';
import { startReconcilers, type ReconcilerHarness } from '../support/reconciler-harness.js';

const APP: TestKind = { group: 'hostile.example.com', version: 'v1', kind: 'App', plural: 'apps' };

/** `{a: [{a: [ … ]}]}`, `depth` maps and lists deep, built without recursion. */
function nested(depth: number): Record<string, unknown> {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { a: v };
  return { a: v };
}

const ATTACKS = [
  {
    name: 'unclosed-bracket',
    spec: {},
    annotations: { [VALUES_FROM_ANNOTATION]: '- {kind: ConfigMap, name: x, targetPath: "a["}' },
    reason: 'InvalidValuesReference',
    message: /targetPath must be a value path .* got "a\[": "\[" at character 2 is not closed by "\]"/,
  },
  {
    name: 'huge-index',
    spec: {},
    annotations: { [VALUES_FROM_ANNOTATION]: '- {kind: ConfigMap, name: kube-root-ca.crt, key: ca.crt, targetPath: "a[4294967294]"}' },
    reason: 'InvalidValuesReference',
    message: /index "4294967294" at character 3 is larger than 65536/,
  },
  {
    name: 'deep-spec',
    spec: nested(2000),
    annotations: {},
    reason: 'InvalidSpec',
    message: /^spec nests maps and lists more than 100 deep \(at a\.a\[0\]\.a\[0\]/,
  },
] as const;

describe('hostile CR input', () => {
  const kc = testKubeConfig();
  const apps = new CRs(kc, APP);
  const core = kc.makeApiClient(CoreV1Api);
  let tenant: Awaited<ReturnType<typeof createNamespace>>;
  let other: Awaited<ReturnType<typeof createNamespace>>;
  let h: ReconcilerHarness;

  const releaseSecrets = async (namespace: string, name: string) =>
    (await core.listNamespacedSecret({ namespace, labelSelector: `owner=helm,name=${name}` })).items;

  beforeAll(async () => {
    await ensureCrd(kc, APP);
    tenant = await createNamespace(kc, 'hostile');
    other = await createNamespace(kc, 'bystander');
    // The index attack needs no opt-in: it targets the CA ConfigMap the control plane puts in
    // every namespace. Without it the old operator only reported it missing, so wait for it.
    await waitFor('ConfigMap kube-root-ca.crt in the tenant namespace', async () => {
      try {
        return (await core.readNamespacedConfigMap({ namespace: tenant.name, name: 'kube-root-ca.crt' })).data?.['ca.crt'] !== undefined;
      } catch (err) {
        if (isStatus(err, 404)) return false;
        throw err;
      }
    });
    h = await startReconcilers({
      watches: `- {group: ${APP.group}, version: ${APP.version}, kind: ${APP.kind}, chart: ${fixtureChart('tenant-app')}}\n`,
      namespaces: [tenant.name, other.name],
    });
  });
  afterAll(async () => {
    await h.stop();
    await tenant.remove();
    await other.remove();
  });

  it('refuses each attack in the CR status with its reason, once, and installs nothing for it', async () => {
    for (const attack of ATTACKS) await apps.create(tenant.name, attack.name, attack.spec, attack.annotations);
    for (const attack of ATTACKS) {
      const { cr, error } = await h.reconcileUntilSettled(`${tenant.name}/${attack.name}`);
      expect(condition(cr, 'Irreconcilable')).toMatchObject({ status: 'True', reason: attack.reason });
      expect(condition(cr, 'Irreconcilable')?.message).toMatch(attack.message);
      // Terminal: the refusal is recorded for this generation, not retried until the CR changes.
      expect(error).toBeInstanceOf(TerminalError);
      expect(cr?.status?.observedGeneration).toBe(cr?.metadata.generation);
      expect(condition(cr, 'Deployed')?.status).not.toBe('True');
      expect(await releaseSecrets(tenant.name, attack.name)).toEqual([]);
    }
  });

  it("installs another namespace's CR afterwards, with the same reconciler in the same process", async () => {
    await apps.create(other.name, 'innocent', { greeting: 'still-here' });
    const { cr } = await h.reconcileUntilSettled(`${other.name}/innocent`);
    expect(condition(cr, 'Deployed')?.status).toBe('True');
    expect(cr?.status?.deployedRelease?.name).toBe('innocent');
    const settings = await core.readNamespacedConfigMap({ namespace: other.name, name: 'innocent-settings' });
    expect(settings.data?.greeting).toBe('still-here');
  });
});
