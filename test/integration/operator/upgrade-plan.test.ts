/**
 * Issue 47 (docs/adr/0083): a pending upgrade's plan, and approval bound to its digest, on the real
 * control plane with real helm 4. A CR's reconciles are counted while the others of its kind are
 * in sync (they reconcile again only at the 60 s period).
 */
import { AppsV1Api, CoreV1Api, KubeConfig, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions } from '@kubernetes/client-node';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { planCommand } from '../../../src/cli/plan.js';
import { planDiffCommand } from '../../../src/cli/plan-diff.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { VALUES_FROM_ANNOTATION, VALUES_SOURCE_LABEL } from '../../../src/reconciler/desired/values-from.js';
import { PlanApprovals } from '../../../src/operator/plan-store.js';
import type { PlanStatus } from '../../../src/reconciler/plan/plan-status.js';
import { SECRET_VALUE, type UpgradePlan } from '../../../src/reconciler/plan/upgrade-plan.js';
import { helmByHand } from '../../support/helm.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  activity,
  condition,
  CRs,
  ensureCrd,
  fixtureChart,
  helmExecutionsSince,
  startOperator,
  waitForReconciles,
  type CR,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';

const CHART = fixtureChart('upgrade-plan');
const kindOf = (kind: string): TestKind => ({ group: 'plans.example.com', version: 'v1', kind, plural: `${kind.toLowerCase()}s` });
/** `approval: always`, approved on the CR. */
const ALWAYS = kindOf('Always');
/** `approval: risky`, approved on the CR. */
const RISKY = kindOf('Risky');
/** `approval: risky`, approved by the platform only (the default `approvedBy`). */
const PLATFORM = kindOf('Platform');
const APPROVE = 'helm-operator.io/approve-plan';
/** The pause annotation (operator-sdk's). */
const PAUSED = 'helm.sdk.operatorframework.io/paused';

const watches = [
  `- {group: ${ALWAYS.group}, version: v1, kind: ${ALWAYS.kind}, chart: ${CHART}, approval: always, approvedBy: cr}`,
  `- {group: ${RISKY.group}, version: v1, kind: ${RISKY.kind}, chart: ${CHART}, approval: risky, approvedBy: cr}`,
  `- {group: ${PLATFORM.group}, version: v1, kind: ${PLATFORM.kind}, chart: ${CHART}, approval: risky}`,
].join('\n');

const planOf = (cr: CR | undefined): PlanStatus | undefined => (cr?.status as { plan?: PlanStatus } | undefined)?.plan;

describe('upgrade plans and their approval', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let opNs: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const kubeconfig = inject('kubeconfigPath');
  /** The test's kubeconfig, acting as `user`. */
  const actingAs = (user: string): KubeConfig => {
    const as = new KubeConfig();
    as.loadFromOptions({
      clusters: kc.clusters,
      contexts: kc.contexts,
      currentContext: kc.currentContext,
      users: kc.users.map((u) => ({ ...u, impersonateUser: user })),
    });
    return as;
  };

  const history = async (release: string): Promise<number[]> =>
    (JSON.parse(await helmByHand('history', release, '-n', ns.name, '-o', 'json')) as { revision: number }[]).map((r) => r.revision);
  const greetingOf = async (release: string): Promise<string | undefined> =>
    (await core.readNamespacedConfigMap({ namespace: ns.name, name: `${release}-settings` })).data?.greeting;
  const serviceOf = async (release: string): Promise<boolean> => {
    try {
      await core.readNamespacedService({ namespace: ns.name, name: `${release}-svc` });
      return true;
    } catch (err) {
      if (isStatus(err, 404)) return false;
      throw err;
    }
  };
  /** The whole plan, from the ConfigMap status.plan names. */
  const storedPlan = async (kind: TestKind, release: string): Promise<UpgradePlan> => {
    const cm = await core.readNamespacedConfigMap({ namespace: ns.name, name: `plan.${kind.kind.toLowerCase()}.${release}` });
    return JSON.parse(cm.data?.['plan.json'] ?? '{}') as UpgradePlan;
  };
  /** Waits until the CR holds a plan for approval whose digest is not `not`; returns its status. */
  const heldPlan = (crs: CRs, release: string, not?: string): Promise<PlanStatus> =>
    waitFor(`${crs.kind.kind} ${release} to hold a plan for approval`, async () => {
      const cr = await crs.get(ns.name, release);
      const plan = planOf(cr);
      return plan?.state === 'AwaitingApproval' && plan.digest !== not && condition(cr, 'Approved')?.status === 'False' ? plan : undefined;
    });
  const deployedRevision = (crs: CRs, release: string, revision: number): Promise<CR> =>
    waitFor(`${crs.kind.kind} ${release} to deploy revision ${revision}`, async () => {
      const cr = await crs.get(ns.name, release);
      return cr?.status?.deployedRelease?.revision === revision && condition(cr, 'Deployed')?.status === 'True' ? cr : undefined;
    });
  const installed = async (crs: CRs, release: string, spec: Record<string, unknown>): Promise<void> => {
    await crs.create(ns.name, release, spec);
    await deployedRevision(crs, release, 1);
  };

  beforeAll(async () => {
    for (const k of [ALWAYS, RISKY, PLATFORM]) await ensureCrd(kc, k);
    ns = await createNamespace(kc, 'upgrade-plan');
    // The operator's own namespace, where platform approvals are (as with `--leader-elect` in a cluster).
    opNs = await createNamespace(kc, 'upgrade-plan-op');
    op = await startOperator({
      watches,
      namespaces: [ns.name],
      leaderElection: {
        id: 'upgrade-plan-test',
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
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  let dir: string | undefined;
  /** A file of the test's own directory holding `text` (CR manifests, the watches file `plan diff` reads). */
  const file = async (name: string, text: string): Promise<string> => {
    dir ??= await mkdtemp(path.join(tmpdir(), 'plan-diff-'));
    const at = path.join(dir, name);
    await writeFile(at, text);
    return at;
  };
  const diff = async (manifest: string, flags: { namespace?: string } = {}): Promise<string[]> =>
    (
      await planDiffCommand({
        verb: 'diff',
        file: manifest,
        watchesFile: await file('watches.yaml', watches),
        helmBinary: inject('helmBin'),
        kubeconfig,
        ...flags,
      })
    ).split('\n');
  const manifestOf = (kind: TestKind, name: string, spec: Record<string, unknown>): string =>
    JSON.stringify({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name, namespace: ns.name }, spec });
  const configMapExists = async (name: string): Promise<boolean> =>
    core.readNamespacedConfigMap({ namespace: ns.name, name }).then(
      () => true,
      (err: unknown) => {
        if (isStatus(err, 404)) return false;
        throw err;
      },
    );

  it('a spec change waits with a plan of exactly the changed field; nothing is applied until its digest is approved, a stale digest is refused, then exactly that plan is applied', async () => {
    const crs = new CRs(kc, ALWAYS);
    await installed(crs, 'spec', { greeting: 'one' });
    await crs.patch(ns.name, 'spec', { spec: { greeting: 'two' } });
    const held = await heldPlan(crs, 'spec');
    expect(held).toMatchObject({
      fromRevision: 1,
      counts: { create: 0, change: 1, delete: 0, refuse: 0, conflicts: 0, hooks: 1 },
      risks: [],
    });
    const plan = await storedPlan(ALWAYS, 'spec');
    expect(plan.digest).toBe(held.digest);
    expect(plan.objects).toStrictEqual([
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: ns.name,
        name: 'spec-settings',
        action: 'change',
        fields: [{ path: '.data.greeting', before: 'one', after: 'two' }],
      },
    ]);
    expect(plan.hooks).toStrictEqual([{ kind: 'ConfigMap', name: 'spec-pre-upgrade', events: ['pre-upgrade'] }]);
    await crs.waitForEvent(ns.name, 'spec', 'PlanAwaitingApproval');

    // Held: the release serves revision 1, the live object is as it was, however often it looks.
    const since = await activity(op);
    await crs.patch(ns.name, 'spec', { metadata: { annotations: { [APPROVE]: 'sha256:0000' } } });
    const stale = await crs.waitForCondition(ns.name, 'spec', { type: 'Approved', status: 'False', reason: 'PlanApprovalStale' });
    expect(condition(stale, 'Approved')?.message).toContain(held.digest);
    await waitForReconciles(op, 'always-controller', since, 1);
    expect(await helmExecutionsSince(op, since)).toBe(0);
    expect(await history('spec')).toStrictEqual([1]);
    expect(await greetingOf('spec')).toBe('one');

    await crs.patch(ns.name, 'spec', { metadata: { annotations: { [APPROVE]: held.digest } } });
    const cr = await deployedRevision(crs, 'spec', 2);
    expect(planOf(cr)).toMatchObject({ digest: held.digest, state: 'Applied' });
    expect(condition(cr, 'Approved')).toMatchObject({ status: 'True', reason: 'PlanApproved' });
    expect(await greetingOf('spec')).toBe('two');
    expect(await history('spec')).toStrictEqual([1, 2]);
  });

  it('under approval: risky, a change without risk goes ahead; a value that turns a template off lists the deletion and waits', async () => {
    const crs = new CRs(kc, RISKY);
    await installed(crs, 'off', { greeting: 'one' });
    await crs.patch(ns.name, 'off', { spec: { greeting: 'two' } });
    const safe = await deployedRevision(crs, 'off', 2);
    expect(planOf(safe)).toMatchObject({ state: 'Applied', risks: [] });
    expect(condition(safe, 'Approved')).toMatchObject({ status: 'True', reason: 'ApprovalNotRequired' });

    await crs.patch(ns.name, 'off', { spec: { greeting: 'two', service: { enabled: false } } });
    const held = await heldPlan(crs, 'off');
    expect(held).toMatchObject({ fromRevision: 2, counts: { delete: 1, change: 0 }, risks: ['delete'] });
    expect((await storedPlan(RISKY, 'off')).objects).toStrictEqual([
      { apiVersion: 'v1', kind: 'Service', namespace: ns.name, name: 'off-svc', action: 'delete' },
    ]);
    expect(await serviceOf('off')).toBe(true);
    expect(await history('off')).toStrictEqual([1, 2]);

    await crs.patch(ns.name, 'off', { metadata: { annotations: { [APPROVE]: held.digest } } });
    await deployedRevision(crs, 'off', 3);
    expect(await serviceOf('off')).toBe(false);
  });

  it('a selector change is flagged as refused by the API server, to be recreated, and the Deployment is left as it is', async () => {
    const crs = new CRs(kc, RISKY);
    await installed(crs, 'sel', { tier: 'web' });
    await crs.patch(ns.name, 'sel', { spec: { tier: 'api' } });
    const held = await heldPlan(crs, 'sel');
    expect(held.risks).toContain('recreate');
    const refused = (await storedPlan(RISKY, 'sel')).objects.find((o) => o.kind === 'Deployment');
    expect(refused).toMatchObject({ name: 'sel-app', action: 'refuse', recreate: true });
    expect(refused !== undefined && 'message' in refused ? refused.message : '').toMatch(/immutable/);
    expect((await apps.readNamespacedDeployment({ namespace: ns.name, name: 'sel-app' })).spec?.selector.matchLabels?.tier).toBe('web');
  });

  it("where the platform approves, the CR's own annotation does not count, and a held CR looks again without helm; the platform's record of the digest lets it go", async () => {
    const crs = new CRs(kc, PLATFORM);
    await installed(crs, 'plat', { greeting: 'one' });
    await crs.patch(ns.name, 'plat', { spec: { greeting: 'one', service: { enabled: false } } });
    const held = await heldPlan(crs, 'plat');
    const since = await activity(op);
    // The CR author approves the right digest: it is not theirs to approve.
    await crs.patch(ns.name, 'plat', { metadata: { annotations: { [APPROVE]: held.digest } } });
    await waitForReconciles(op, 'platform-controller', since, 2);
    const still = await crs.get(ns.name, 'plat');
    expect(condition(still, 'Approved')).toMatchObject({ status: 'False', reason: 'PlanAwaitingApproval' });
    expect(condition(still, 'Approved')?.message).toContain('does not count');
    expect(await helmExecutionsSince(op, since)).toBe(0);
    expect(await history('plat')).toStrictEqual([1]);

    // Under RBAC the CR's author, who may edit it, may not write the platform's approval.
    const author = `plan-author-${ns.name}`;
    await rbac.createNamespacedRole({
      namespace: ns.name,
      body: {
        metadata: { name: 'cr-author' },
        rules: [{ apiGroups: [PLATFORM.group], resources: [PLATFORM.plural], verbs: ['get', 'list', 'watch', 'update', 'patch'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: 'cr-author' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cr-author' },
        subjects: [{ kind: 'User', name: author, apiGroup: 'rbac.authorization.k8s.io' }],
      },
    });
    const asAuthor = new CRs(actingAs(author), PLATFORM);
    await asAuthor.patch(ns.name, 'plat', { metadata: { annotations: { [APPROVE]: held.digest, again: 'yes' } } });
    await expect(new PlanApprovals(actingAs(author), opNs.name, PLATFORM).approve(ns.name, 'plat', held.digest)).rejects.toSatisfy(
      (err: unknown) => isStatus(err, 403),
    );
    expect(await history('plat')).toStrictEqual([1]);

    // A stale platform approval is refused, the right one (plan approve) applies exactly that plan.
    const approvals = new PlanApprovals(kc, opNs.name, PLATFORM);
    await approvals.approve(ns.name, 'plat', 'sha256:1111');
    await crs.waitForCondition(ns.name, 'plat', { type: 'Approved', status: 'False', reason: 'PlanApprovalStale' });
    expect(await history('plat')).toStrictEqual([1]);
    const approve = {
      verb: 'approve' as const,
      target: `${PLATFORM.kind}.${PLATFORM.group}/plat`,
      namespace: ns.name,
      kubeconfig,
      operatorNamespace: opNs.name,
    };
    await expect(planCommand({ ...approve, digest: 'sha256:1111' })).rejects.toThrow(`it is ${held.digest}`);
    expect(await planCommand({ ...approve, digest: held.digest })).toBe(`plan ${held.digest} of Platform ${ns.name}/plat approved`);
    const cr = await deployedRevision(crs, 'plat', 2);
    expect(planOf(cr)).toMatchObject({ digest: held.digest, state: 'Applied' });
    expect(await serviceOf('plat')).toBe(false);
  });

  it("a forged status.plan is rewritten to the operator's own plan, and the platform's approval of the forged digest is refused as stale (ADR 0097)", async () => {
    const crs = new CRs(kc, PLATFORM);
    await installed(crs, 'forged', { greeting: 'one' });
    await crs.patch(ns.name, 'forged', { spec: { greeting: 'one', service: { enabled: false } } });
    const held = await heldPlan(crs, 'forged');
    // Whoever may write the CR's status subresource puts another digest (and ConfigMap) there.
    const forged = `sha256:${'0'.repeat(64)}`;
    await crs.patchStatus(ns.name, 'forged', { plan: { ...held, digest: forged, configMap: 'kube-root-ca.crt' } });
    const shown = (cr: CR | undefined): boolean =>
      planOf(cr)?.digest === held.digest &&
      planOf(cr)?.configMap === held.configMap &&
      (condition(cr, 'Approved')?.message ?? '').includes(`--digest ${held.digest}`);
    await waitFor('the forged status.plan to be rewritten to the held plan', async () => shown(await crs.get(ns.name, 'forged')));

    // The platform, misled by what status showed, approves the forged digest: refused, no upgrade.
    await new PlanApprovals(kc, opNs.name, PLATFORM).approve(ns.name, 'forged', forged);
    const stale = await crs.waitForCondition(ns.name, 'forged', { type: 'Approved', status: 'False', reason: 'PlanApprovalStale' });
    expect(shown(stale)).toBe(true);
    expect(condition(stale, 'Approved')?.message).toContain(`the approval names ${forged}, not the pending plan ${held.digest}`);
    // No upgrade. That it is not even planned again is asserted in the unit tier (plan-gate.test.ts):
    // other CRs of this file may run helm meanwhile, so the operator's helm count would not say.
    expect(await history('forged')).toStrictEqual([1]);
    expect(await serviceOf('forged')).toBe(true);

    // The true digest, as status shows it again, is what goes.
    const approve = { verb: 'approve' as const, target: `${PLATFORM.kind}.${PLATFORM.group}/forged`, namespace: ns.name, kubeconfig };
    await planCommand({ ...approve, operatorNamespace: opNs.name, digest: held.digest });
    expect(planOf(await deployedRevision(crs, 'forged', 2))).toMatchObject({ digest: held.digest, state: 'Applied' });
    expect(await serviceOf('forged')).toBe(false);
  });

  it('a field another manager owns is flagged as a conflict, with the value the upgrade would take back', async () => {
    const crs = new CRs(kc, RISKY);
    await installed(crs, 'taken', { greeting: 'one' });
    // Paused while the scale lands: in sync, the operator's drift repair takes a kubectl scale back,
    // and when its reconcile ran before the spec change reached it, the plan had nothing in conflict.
    await crs.patch(ns.name, 'taken', { metadata: { annotations: { [PAUSED]: 'true' } } });
    await waitFor('Risky taken to say it is paused', async () => condition(await crs.get(ns.name, 'taken'), 'Paused')?.status === 'True');
    // `kubectl scale`: the scale subresource, as its own field manager.
    await apps.patchNamespacedDeploymentScale(
      { namespace: ns.name, name: 'taken-app', body: { spec: { replicas: 3 } }, fieldManager: 'kubectl-scale' },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await crs.patch(ns.name, 'taken', { metadata: { annotations: { [PAUSED]: null } }, spec: { greeting: 'two' } });
    const held = await heldPlan(crs, 'taken');
    expect(held.risks).toStrictEqual(['conflict']);
    const deployment = (await storedPlan(RISKY, 'taken')).objects.find((o) => o.kind === 'Deployment');
    expect(deployment).toStrictEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace: ns.name,
      name: 'taken-app',
      action: 'change',
      fields: [{ path: '.spec.replicas', before: 3, after: 1 }],
      conflicts: [{ field: '.spec.replicas', manager: 'kubectl-scale' }],
    });
    expect((await apps.readNamespacedDeployment({ namespace: ns.name, name: 'taken-app' })).spec?.replicas).toBe(3);
  });

  it('plan show prints the pending plan as a diff, and refuses a plan ConfigMap rewritten by hand', async () => {
    const crs = new CRs(kc, ALWAYS);
    await installed(crs, 'shown', { greeting: 'one', service: { enabled: true } });
    await crs.patch(ns.name, 'shown', { spec: { greeting: 'two', service: { enabled: false } } });
    const held = await heldPlan(crs, 'shown');
    const text = await planCommand({ verb: 'show', target: 'always/shown', namespace: ns.name, kubeconfig });
    expect(text.split('\n')).toStrictEqual([
      `plan ${held.digest} of Always ${ns.name}/shown (waits for approval)`,
      'upgrade of release shown from revision 1 to chart upgrade-plan 0.1.0: 1 to change, 1 to delete, 1 hooks; risky: delete',
      '',
      `~ ConfigMap ${ns.name}/shown-settings`,
      '    .data.greeting: "one" -> "two"',
      `- Service ${ns.name}/shown-svc`,
      'hook ConfigMap shown-pre-upgrade runs (pre-upgrade)',
    ]);
    // Red team: who may write ConfigMaps in the namespace rewrites the plan to hide the deletion.
    const name = held.configMap;
    const forged = { ...(await storedPlan(ALWAYS, 'shown')), objects: [] };
    await core.patchNamespacedConfigMap(
      { namespace: ns.name, name, body: { data: { 'plan.json': JSON.stringify(forged) } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await expect(planCommand({ verb: 'show', target: 'always/shown', namespace: ns.name, kubeconfig })).rejects.toThrow(
      /is not the plan .* the CR's status names/,
    );
    // And the operator never reads it back: the approval of the real digest applies the real plan, the deletion included.
    await crs.patch(ns.name, 'shown', { metadata: { annotations: { [APPROVE]: held.digest } } });
    await deployedRevision(crs, 'shown', 2);
    expect(await serviceOf('shown')).toBe(false);
  });

  it('nothing secret is in the plan: a value taken from a Secret is hidden in status, the plan ConfigMap and plan show', async () => {
    const crs = new CRs(kc, ALWAYS);
    const [before, after] = ['first-s3cret-greeting', 'second-s3cret-greeting'];
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 'hidden-greeting', labels: { [VALUES_SOURCE_LABEL]: 'true' } }, stringData: { greeting: before } },
    });
    const refs = [{ kind: 'Secret', name: 'hidden-greeting', key: 'greeting', targetPath: 'greeting' }];
    await crs.create(ns.name, 'hidden', {}, { [VALUES_FROM_ANNOTATION]: JSON.stringify(refs) });
    await deployedRevision(crs, 'hidden', 1);
    expect(await greetingOf('hidden')).toBe(before);

    // The Secret changes: the upgrade it brings is planned and held, its values nowhere in the plan.
    await core.patchNamespacedSecret(
      { namespace: ns.name, name: 'hidden-greeting', body: { stringData: { greeting: after } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const held = await heldPlan(crs, 'hidden');
    const text = await planCommand({ verb: 'show', target: 'always/hidden', namespace: ns.name, kubeconfig });
    expect(text).toContain(`~ ConfigMap ${ns.name}/hidden-settings`);
    expect(text).toContain(`    .data.greeting: "${SECRET_VALUE}" -> "${SECRET_VALUE}"`);
    const stored = await core.readNamespacedConfigMap({ namespace: ns.name, name: held.configMap });
    const status = JSON.stringify((await crs.get(ns.name, 'hidden'))?.status);
    for (const [where, seen] of Object.entries({ 'plan show': text, 'plan ConfigMap': JSON.stringify(stored.data), status })) {
      for (const secret of [before, after]) {
        expect(seen, where).not.toContain(secret);
        expect(seen, where).not.toContain(Buffer.from(secret).toString('base64'));
      }
    }
    expect(await greetingOf('hidden')).toBe(before);
  });

  it('a CR in sync makes no plan and runs no helm', async () => {
    const crs = new CRs(kc, ALWAYS);
    await installed(crs, 'idle', { greeting: 'one' });
    const since = await activity(op);
    await crs.patch(ns.name, 'idle', { metadata: { annotations: { touched: 'yes' } } });
    await waitForReconciles(op, 'always-controller', since, 1);
    expect(await helmExecutionsSince(op, since)).toBe(0);
    expect(planOf(await crs.get(ns.name, 'idle'))).toBeUndefined();
  });

  it('plan diff shows what a CR manifest not on the cluster would install, and creates nothing', async () => {
    const manifest = await file('fresh.yaml', manifestOf(ALWAYS, 'fresh', { greeting: 'one' }));
    const lines = await diff(manifest);
    expect(lines.slice(1)).toStrictEqual([
      'install of release fresh with chart upgrade-plan 0.1.0: 3 to create',
      '',
      `+ ConfigMap ${ns.name}/fresh-settings`,
      `+ Service ${ns.name}/fresh-svc`,
      `+ Deployment ${ns.name}/fresh-app`,
    ]);
    expect(lines[0]).toMatch(new RegExp(`^plan sha256:[0-9a-f]{64} of Always ${ns.name}/fresh from ${manifest} \\(not applied\\)$`));
    // Nothing on the cluster: no CR, no release, none of its objects, no plan ConfigMap.
    expect(await new CRs(kc, ALWAYS).get(ns.name, 'fresh')).toBeUndefined();
    await expect(helmByHand('history', 'fresh', '-n', ns.name)).rejects.toThrow(/not found/);
    expect(await configMapExists('fresh-settings')).toBe(false);
    expect(await configMapExists('plan.always.fresh')).toBe(false);
  });

  it('plan diff of a changed manifest of a CR on the cluster prints the plan the operator then makes, digest included, and changes nothing', async () => {
    const crs = new CRs(kc, ALWAYS);
    await installed(crs, 'diffed', { greeting: 'one' });
    const changed = { greeting: 'two', service: { enabled: false } };
    const manifest = await file('diffed.yaml', manifestOf(ALWAYS, 'diffed', changed));
    const lines = await diff(manifest, { namespace: ns.name });
    const digest = /^plan (sha256:[0-9a-f]{64}) /.exec(lines[0] ?? '')?.[1];
    expect(lines).toStrictEqual([
      `plan ${digest} of Always ${ns.name}/diffed from ${manifest} (not applied)`,
      'upgrade of release diffed from revision 1 to chart upgrade-plan 0.1.0: 1 to change, 1 to delete, 1 hooks; risky: delete',
      '',
      `~ ConfigMap ${ns.name}/diffed-settings`,
      '    .data.greeting: "one" -> "two"',
      `- Service ${ns.name}/diffed-svc`,
      'hook ConfigMap diffed-pre-upgrade runs (pre-upgrade)',
    ]);
    const cr = await crs.get(ns.name, 'diffed');
    expect(cr?.spec).toStrictEqual({ greeting: 'one' });
    expect(planOf(cr)).toBeUndefined();
    expect(await history('diffed')).toStrictEqual([1]);
    expect(await greetingOf('diffed')).toBe('one');
    expect(await serviceOf('diffed')).toBe(true);
    expect(await configMapExists('plan.always.diffed')).toBe(false);
    // Applied, the operator's own plan of it is the one plan diff printed.
    await crs.patch(ns.name, 'diffed', { spec: changed });
    expect((await heldPlan(crs, 'diffed')).digest).toBe(digest);
  });

  it('plan diff names the file and line of what it cannot use', async () => {
    const missing = path.join(tmpdir(), 'no-such-dir', 'cr.yaml');
    await expect(diff(missing)).rejects.toThrow(`${missing}: cannot read the CR manifest: no such file`);
    const broken = await file('broken.yaml', 'apiVersion: v1\nkind: [Always\nmetadata: {name: x}\n');
    await expect(diff(broken)).rejects.toThrow(new RegExp(`^${broken}:\\d+:\\d+: `));
    const other = await file(
      'other.yaml',
      'apiVersion: other.example.com/v1\n# a kind nobody watches\nkind: Other\nmetadata:\n  name: x\n',
    );
    await expect(diff(other)).rejects.toThrow(`${other}:3: Other (other.example.com/v1) is not a kind`);
    const elsewhere = await file('elsewhere.yaml', manifestOf(ALWAYS, 'x', {}));
    await expect(diff(elsewhere, { namespace: 'elsewhere' })).rejects.toThrow(`the manifest's namespace ${ns.name} is not -n elsewhere`);
  });

  it("under the kind's aggregated roles, the CR's editors read its whole plan, others cannot, and where the platform approves its editors cannot approve", async () => {
    const crs = new CRs(kc, PLATFORM);
    await installed(crs, 'read', { greeting: 'one' });
    await crs.patch(ns.name, 'read', { spec: { greeting: 'one', service: { enabled: false } } });
    const held = await heldPlan(crs, 'read');
    // The kind's editor role as config/rbac has it for its kinds: aggregated into `edit` (and `admin`).
    await rbac.createClusterRole({
      body: {
        metadata: {
          name: `${PLATFORM.plural}.${PLATFORM.group}-editor-${ns.name}`,
          labels: { 'rbac.authorization.k8s.io/aggregate-to-edit': 'true', 'rbac.authorization.k8s.io/aggregate-to-admin': 'true' },
        },
        rules: [
          {
            apiGroups: [PLATFORM.group],
            resources: [PLATFORM.plural],
            verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
          },
          { apiGroups: [PLATFORM.group], resources: [`${PLATFORM.plural}/status`], verbs: ['get'] },
        ],
      },
    });
    const editor = `plan-editor-${ns.name}`;
    await rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: 'plan-editor' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
        subjects: [{ kind: 'User', name: editor, apiGroup: 'rbac.authorization.k8s.io' }],
      },
    });
    const asEditor = await file(`${editor}.kubeconfig`, actingAs(editor).exportConfig());
    const asOutsider = await file('outsider.kubeconfig', actingAs(`plan-outsider-${ns.name}`).exportConfig());
    const show = { verb: 'show' as const, target: `${PLATFORM.kind}.${PLATFORM.group}/read`, namespace: ns.name };
    // The aggregation controller adds the kind to `edit` a moment after the ClusterRole appears.
    const text = await waitFor('the editor to read the plan', () =>
      planCommand({ ...show, kubeconfig: asEditor }).catch((err: unknown) => {
        if (isStatus(err, 403)) return undefined;
        throw err;
      }),
    );
    expect(text.split('\n').slice(0, 2)).toStrictEqual([
      `plan ${held.digest} of Platform ${ns.name}/read (waits for approval)`,
      'upgrade of release read from revision 1 to chart upgrade-plan 0.1.0: 1 to delete, 1 hooks; risky: delete',
    ]);
    // Someone with no rights in the namespace reads neither the CR nor its plan's ConfigMap.
    await expect(planCommand({ ...show, kubeconfig: asOutsider })).rejects.toSatisfy((err: unknown) => isStatus(err, 403));
    await expect(
      actingAs(`plan-outsider-${ns.name}`).makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: ns.name, name: held.configMap }),
    ).rejects.toSatisfy((err: unknown) => isStatus(err, 403));
    // The editor may not approve what the platform approves: `plan approve` is Forbidden in the operator's namespace.
    await expect(
      planCommand({ ...show, verb: 'approve', digest: held.digest, operatorNamespace: opNs.name, kubeconfig: asEditor }),
    ).rejects.toSatisfy((err: unknown) => isStatus(err, 403));
    expect(await history('read')).toStrictEqual([1]);
    expect(planOf(await crs.get(ns.name, 'read'))).toMatchObject({ digest: held.digest, state: 'AwaitingApproval' });
    await rbac.deleteClusterRole({ name: `${PLATFORM.plural}.${PLATFORM.group}-editor-${ns.name}` });
  });
});
