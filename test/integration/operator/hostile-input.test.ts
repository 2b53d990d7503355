/**
 * A tenant who may only create CRs attacks the operator with its input (issue 32): a values-from
 * targetPath whose `[` never closes (the parser looped forever, /healthz stopped in 2 s, the heap
 * ran out in 18 s, and after a restart it died again on the same CR), an index of 4294967294 on a
 * ConfigMap every namespace has (a list of that length exhausted the heap in 20 s), and a spec
 * nested 2000 deep (the stack overflowed on every retry). The operator runs as its own process, as
 * it is deployed, so that a hang or a crash is seen as one: its /healthz, and a CR of another
 * namespace it must still install.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { VALUES_FROM_ANNOTATION } from '../../../src/reconciler/desired/values-from.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, type CR, type TestKind } from '../../support/operator.js';
import { freePort, startOperatorProcess, type OperatorProcess } from '../../support/process.js';

const APP: TestKind = { group: 'hostile.example.com', version: 'v1', kind: 'App', plural: 'apps' };
/** How long a hostile CR may take to show its refusal: a hung operator never shows it. */
const REFUSED_WITHIN_MS = 60_000;

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
  let dir = '';
  let healthPort = 0;
  let operator: OperatorProcess | undefined;

  /** /healthz answered 200 within 2 s: the event loop is not stuck. */
  const healthy = async (): Promise<boolean> => {
    const res = await fetch(`http://127.0.0.1:${healthPort}/healthz`, { signal: AbortSignal.timeout(2_000) });
    return res.status === 200;
  };
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
    dir = await mkdtemp(path.join(tmpdir(), 'hostile-input-'));
    const watches = path.join(dir, 'watches.yaml');
    await writeFile(watches, `- {group: ${APP.group}, version: ${APP.version}, kind: ${APP.kind}, chart: ${fixtureChart('tenant-app')}}\n`);
    healthPort = await freePort();
    operator = startOperatorProcess(
      [
        'run',
        '--watches-file',
        watches,
        '--helm-binary',
        inject('helmBin'),
        '--metrics-bind-address=0',
        `--health-probe-bind-address=127.0.0.1:${healthPort}`,
      ],
      {
        WATCH_NAMESPACE: `${tenant.name},${other.name}`,
      },
    );
    await waitFor('the operator to answer /healthz', () => healthy().catch(() => false), { timeoutMs: 60_000 });
  });
  afterAll(async () => {
    operator?.crash();
    await tenant.remove();
    await other.remove();
    await rm(dir, { recursive: true, force: true });
  });

  it(
    'refuses each attack in the CR status with its reason, once, and installs nothing for it',
    async () => {
      for (const attack of ATTACKS) await apps.create(tenant.name, attack.name, attack.spec, attack.annotations);
      for (const attack of ATTACKS) {
        const cr = await apps.waitForCondition(
          tenant.name,
          attack.name,
          { type: 'Irreconcilable', status: 'True', reason: attack.reason },
          { timeoutMs: REFUSED_WITHIN_MS },
        );
        expect(condition(cr, 'Irreconcilable')?.message).toMatch(attack.message);
        // Terminal: the refusal is recorded for this generation, not retried until the CR changes.
        expect(cr.status?.observedGeneration).toBe(cr.metadata.generation);
        expect(condition(cr, 'Deployed')?.status).not.toBe('True');
        expect(await releaseSecrets(tenant.name, attack.name)).toEqual([]);
      }
      expect(await healthy()).toBe(true);
    },
    4 * REFUSED_WITHIN_MS,
  );

  it(
    "still answers /healthz and installs another namespace's CR afterwards, in the same process",
    async () => {
      await apps.create(other.name, 'innocent', { greeting: 'still-here' });
      const cr: CR = await apps.waitForCondition(
        other.name,
        'innocent',
        { type: 'Deployed', status: 'True' },
        { timeoutMs: REFUSED_WITHIN_MS },
      );
      expect(cr.status?.deployedRelease?.name).toBe('innocent');
      const settings = await core.readNamespacedConfigMap({ namespace: other.name, name: 'innocent-settings' });
      expect(settings.data?.greeting).toBe('still-here');
      expect(await healthy()).toBe(true);
      expect(operator?.child.exitCode).toBeNull();
      expect(operator?.child.signalCode).toBeNull();
    },
    2 * REFUSED_WITHIN_MS,
  );
});
