/**
 * Issue 47's plans and the values they hide (docs/adr/0107), on the real control plane with real
 * helm 4: an approval binds the hidden values too (a changed Secret is a new digest, the old
 * approval is stale), and a value the deployed revision took from a Secret stays hidden on the
 * plan's before side once the CR takes it from elsewhere, in everything the CR's readers read.
 */
import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { planCommand } from '../../../src/cli/plan.js';
import { NOT_THE_OPERATORS_DIGEST, planDiffCommand } from '../../../src/cli/plan-diff.js';
import { VALUES_FROM_ANNOTATION, VALUES_SOURCE_LABEL } from '../../../src/reconciler/desired/values-from.js';
import type { PlanStatus } from '../../../src/reconciler/plan/plan-status.js';
import { SECRET_VALUE, type UpgradePlan } from '../../../src/reconciler/plan/upgrade-plan.js';
import { helmByHand } from '../../support/helm.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  condition,
  CRs,
  ensureCrd,
  fixtureChart,
  startOperator,
  type CR,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';

const CHART = fixtureChart('upgrade-plan');
/** `approval: always`, approved on the CR. */
const KIND: TestKind = { group: 'plan-secrets.example.com', version: 'v1', kind: 'SecretPlan', plural: 'secretplans' };
const APPROVE = 'helm-operator.io/approve-plan';
const watches = `- {group: ${KIND.group}, version: v1, kind: ${KIND.kind}, chart: ${CHART}, approval: always, approvedBy: cr}`;
const planOf = (cr: CR | undefined): PlanStatus | undefined => (cr?.status as { plan?: PlanStatus } | undefined)?.plan;
const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('plans and the values they hide', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const kubeconfig = inject('kubeconfigPath');
  const crs = new CRs(kc, KIND);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  /** The operator's own namespace, where its fingerprint key is (as with `--leader-elect` in a cluster). */
  let opNs: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;
  let dir: string;

  const history = async (release: string): Promise<number[]> =>
    (JSON.parse(await helmByHand('history', release, '-n', ns.name, '-o', 'json')) as { revision: number }[]).map((r) => r.revision);
  const greetingOf = async (release: string): Promise<string | undefined> =>
    (await core.readNamespacedConfigMap({ namespace: ns.name, name: `${release}-settings` })).data?.greeting;
  const storedPlan = async (release: string): Promise<UpgradePlan> => {
    const cm = await core.readNamespacedConfigMap({ namespace: ns.name, name: `plan.${KIND.kind.toLowerCase()}.${release}` });
    return JSON.parse(cm.data?.['plan.json'] ?? '{}') as UpgradePlan;
  };
  /** Waits for a held plan that `ok` accepts. */
  const heldPlan = (release: string, ok: (p: PlanStatus) => boolean = () => true): Promise<PlanStatus> =>
    waitFor(`${release} to hold a plan for approval`, async () => {
      const cr = await crs.get(ns.name, release);
      const plan = planOf(cr);
      return plan?.state === 'AwaitingApproval' && ok(plan) && condition(cr, 'Approved')?.status === 'False' ? plan : undefined;
    });
  const deployedRevision = (release: string, revision: number): Promise<CR> =>
    waitFor(`${release} to deploy revision ${revision}`, async () => {
      const cr = await crs.get(ns.name, release);
      return cr?.status?.deployedRelease?.revision === revision && condition(cr, 'Deployed')?.status === 'True' ? cr : undefined;
    });
  const secret = async (name: string, greeting: string): Promise<void> => {
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name, labels: { [VALUES_SOURCE_LABEL]: 'true' } }, stringData: { greeting } },
    });
  };
  const setSecret = (name: string, greeting: string): Promise<unknown> =>
    core.patchNamespacedSecret(
      { namespace: ns.name, name, body: { stringData: { greeting } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  const fromSecret = (name: string): Record<string, string> => ({
    [VALUES_FROM_ANNOTATION]: JSON.stringify([{ kind: 'Secret', name, key: 'greeting', targetPath: 'greeting' }]),
  });
  /** Everything the CR's readers read of its plan: `plan show`, the plan ConfigMap, status, the CR's events. */
  const readable = async (release: string): Promise<Record<string, string>> => {
    const plan = planOf(await crs.get(ns.name, release));
    const stored = await core.readNamespacedConfigMap({ namespace: ns.name, name: plan?.configMap ?? '' });
    return {
      'plan show': await planCommand({ verb: 'show', target: `secretplan/${release}`, namespace: ns.name, kubeconfig }),
      'plan ConfigMap': JSON.stringify(stored),
      status: JSON.stringify((await crs.get(ns.name, release))?.status),
      events: JSON.stringify((await crs.events(ns.name, release)).map((e) => e.message)),
    };
  };
  const expectNowhere = (seen: Record<string, string>, secrets: readonly string[]): void => {
    for (const [where, text] of Object.entries(seen))
      for (const s of secrets) {
        expect(text, where).not.toContain(s);
        expect(text, where).not.toContain(b64(s));
      }
  };

  beforeAll(async () => {
    await ensureCrd(kc, KIND);
    ns = await createNamespace(kc, 'plan-secrets');
    opNs = await createNamespace(kc, 'plan-secrets-op');
    dir = await mkdtemp(path.join(tmpdir(), 'plan-secrets-'));
    op = await startOperator({
      watches,
      namespaces: [ns.name],
      leaderElection: {
        id: 'plan-secrets-test',
        namespace: opNs.name,
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
    });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
    await opNs.remove();
    await rm(dir, { recursive: true, force: true });
  });
  /** `plan diff` of the CR as it is on the cluster: its lines. */
  const diff = async (release: string, flags: { operatorNamespace?: string } = {}): Promise<string[]> => {
    const cr = await crs.get(ns.name, release);
    const manifest = path.join(dir, `${release}.json`);
    await writeFile(
      manifest,
      JSON.stringify({
        apiVersion: `${KIND.group}/${KIND.version}`,
        kind: KIND.kind,
        metadata: { name: release, namespace: ns.name, annotations: cr?.metadata.annotations },
        spec: cr?.spec,
      }),
    );
    const watchesFile = path.join(dir, 'watches.yaml');
    await writeFile(watchesFile, watches);
    const text = await planDiffCommand({ verb: 'diff', file: manifest, watchesFile, helmBinary: inject('helmBin'), kubeconfig, ...flags });
    return text.split('\n');
  };

  it('an approval binds the hidden values: the Secret changed after a plan was approved is a new digest, the old approval is stale and nothing is applied', async () => {
    await secret('bound-greeting', 'xq0-s3cret-bnd');
    await crs.create(ns.name, 'bound', {}, fromSecret('bound-greeting'));
    await deployedRevision('bound', 1);

    // The Secret changes: a plan to approve.
    await setSecret('bound-greeting', 'xq1-s3cret-bnd');
    const first = await heldPlan('bound');
    // It changes again before the approval arrives: the plan shows the same (the value is hidden on
    // both sides), but it is another change, so another digest.
    await setSecret('bound-greeting', 'xq2-s3cret-bnd');
    const second = await heldPlan('bound', (p) => p.fingerprint !== first.fingerprint);
    const shown = (p: UpgradePlan): unknown => p.objects.map((o) => ('fields' in o ? o.fields.map((f) => [f.path, f.before, f.after]) : o));
    expect(shown(await storedPlan('bound'))).toStrictEqual([[['.data.greeting', SECRET_VALUE, SECRET_VALUE]]]);
    expect(second.digest).not.toBe(first.digest);
    // plan diff seals as the operator does where its caller may read the operator's key; elsewhere
    // it shows the same plan, says its digest is not the operator's, and still shows no secret.
    const withKey = await diff('bound', { operatorNamespace: opNs.name });
    expect(withKey[0]).toContain(`plan ${second.digest} `);
    const withoutKey = await diff('bound');
    expect(withoutKey[0]).not.toContain(second.digest);
    expect(withoutKey.at(-1)).toBe(NOT_THE_OPERATORS_DIGEST);
    expect(withoutKey.slice(1, -1)).toStrictEqual(withKey.slice(1));
    expectNowhere({ 'plan diff': [...withKey, ...withoutKey].join('\n') }, ['xq0-s3cret-bnd', 'xq1-s3cret-bnd', 'xq2-s3cret-bnd']);

    // The approval of the first digest does not let the second plan through.
    await crs.patch(ns.name, 'bound', { metadata: { annotations: { [APPROVE]: first.digest } } });
    const stale = await crs.waitForCondition(ns.name, 'bound', { type: 'Approved', status: 'False', reason: 'PlanApprovalStale' });
    expect(condition(stale, 'Approved')?.message).toContain(second.digest);
    expect(await history('bound')).toStrictEqual([1]);
    expect(await greetingOf('bound')).toBe('xq0-s3cret-bnd');
    expectNowhere(await readable('bound'), ['xq0-s3cret-bnd', 'xq1-s3cret-bnd', 'xq2-s3cret-bnd']);

    // Its own approval does.
    await crs.patch(ns.name, 'bound', { metadata: { annotations: { [APPROVE]: second.digest } } });
    await deployedRevision('bound', 2);
    expect(await greetingOf('bound')).toBe('xq2-s3cret-bnd');
    expect(await history('bound')).toStrictEqual([1, 2]);
  });

  it('a value that no longer comes from a Secret shows its old value hidden and its new one plain; the other way round, the new one hidden', async () => {
    const old = 'xq-moved-s3cret';
    await secret('moved-greeting', old);
    await crs.create(ns.name, 'moved', {}, fromSecret('moved-greeting'));
    await deployedRevision('moved', 1);
    expect(await greetingOf('moved')).toBe(old);

    // From a Secret to a ConfigMap: the live ConfigMap still holds the old secret.
    await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'moved-plain' }, data: { greeting: 'now-plain-greeting' } },
    });
    await crs.patch(ns.name, 'moved', {
      metadata: {
        annotations: {
          [VALUES_FROM_ANNOTATION]: JSON.stringify([{ kind: 'ConfigMap', name: 'moved-plain', key: 'greeting', targetPath: 'greeting' }]),
        },
      },
    });
    const plain = await heldPlan('moved');
    const seen = await readable('moved');
    expect(seen['plan show']).toContain(`    .data.greeting: "${SECRET_VALUE}" -> "now-plain-greeting"`);
    expect((await storedPlan('moved')).objects).toMatchObject([
      {
        kind: 'ConfigMap',
        name: 'moved-settings',
        fields: [{ path: '.data.greeting', before: SECRET_VALUE, after: 'now-plain-greeting' }],
      },
    ]);
    expectNowhere(seen, [old]);

    // Applied; then from the spec's plain value to a Secret: the new value is hidden.
    await crs.patch(ns.name, 'moved', { metadata: { annotations: { [APPROVE]: plain.digest } } });
    await deployedRevision('moved', 2);
    expect(await greetingOf('moved')).toBe('now-plain-greeting');
    await secret('moved-again', 'xq-again-s3cret');
    await crs.patch(ns.name, 'moved', { metadata: { annotations: fromSecret('moved-again') } });
    await heldPlan('moved', (p) => p.fromRevision === 2);
    const again = await readable('moved');
    expect(again['plan show']).toContain(`    .data.greeting: "${SECRET_VALUE}" -> "${SECRET_VALUE}"`);
    expectNowhere(again, [old, 'xq-again-s3cret']);
    expect(await history('moved')).toStrictEqual([1, 2]);
  });

  it("a plan that creates an object keeps its digest (not the dry run's new uid): approved, it is applied", async () => {
    await crs.create(ns.name, 'creates', { service: { enabled: false } });
    await deployedRevision('creates', 1);
    await crs.patch(ns.name, 'creates', { spec: { service: { enabled: true } } });
    const held = await heldPlan('creates');
    expect(held.counts).toMatchObject({ create: 1, change: 0, delete: 0 });
    const created = (await storedPlan('creates')).objects[0];
    const metadata = (created !== undefined && 'object' in created ? created.object : undefined) as
      { metadata?: Record<string, unknown> } | undefined;
    expect(metadata?.metadata).toMatchObject({ name: 'creates-svc' });
    expect(Object.keys(metadata?.metadata ?? {})).not.toContain('uid');
    expect(Object.keys(metadata?.metadata ?? {})).not.toContain('creationTimestamp');
    await crs.patch(ns.name, 'creates', { metadata: { annotations: { [APPROVE]: held.digest } } });
    const cr = await deployedRevision('creates', 2);
    expect(planOf(cr)).toMatchObject({ digest: held.digest, state: 'Applied' });
    expect(await history('creates')).toStrictEqual([1, 2]);
    await core.readNamespacedService({ namespace: ns.name, name: 'creates-svc' });
  });
});
