/**
 * Issue 49 (ADR 0072): upgrades on helm 4 next to other field managers. A chart written the way
 * vault's is renders `caBundle: ""` on a webhook an injector fills at run time; helm 4 applies
 * server-side, so an upgrade used to meet the injector's ownership (ResourceConflict), roll back,
 * and retry client-side with `--force-replace`, resetting the CA and leaving the release
 * client-side for good. Here each spec change is one revision that keeps the injected CA, takes
 * back what `kubectl scale` took from the chart, or stops with one clear status.
 */
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  Watch,
  type V1MutatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { whilePaused } from '../../../src/cli/undo-fence.js';
import { isStatus } from '../../../src/k8s/errors.js';
import type { DriftFights } from '../../../src/reconciler/status/status.js';
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

const CHART = fixtureChart('upgrade-conflicts');
const kindOf = (kind: string): TestKind => ({ group: 'upgrades.example.com', version: 'v1', kind, plural: `${kind.toLowerCase()}s` });
/** The watch has a rule for the injected field. */
const RULED = kindOf('Ruled');
/** No rule: the field is left to the injector once drift repair finds the fight. */
const FOUGHT = kindOf('Fought');
/** `conflictPolicy: fail`; the CR's annotation may add rules. */
const STRICT = kindOf('Strict');
/** Adopts a release installed by hand with helm 3 (client-side apply), with the rule. */
const ADOPTED = kindOf('Adopted');
/** The same as RULED, for an operator that runs helm 3 (client-side apply). */
const HELM3_RULED = kindOf('Helm3Ruled');
/** `conflictPolicy: fail` under helm 3. */
const HELM3_STRICT = kindOf('Helm3Strict');
const POINTER = '/webhooks/0/clientConfig/caBundle';
const RULE = ['  driftIgnore:', `    - paths: [${POINTER}]`, '      target: {kind: MutatingWebhookConfiguration}'];
const watches = [
  [`- group: ${RULED.group}`, '  version: v1', `  kind: ${RULED.kind}`, `  chart: ${CHART}`, ...RULE],
  [`- {group: ${FOUGHT.group}, version: v1, kind: ${FOUGHT.kind}, chart: ${CHART}}`],
  [
    `- {group: ${STRICT.group}, version: v1, kind: ${STRICT.kind}, chart: ${CHART}, conflictPolicy: fail, allowDriftIgnoreAnnotation: true}`,
  ],
  [`- group: ${ADOPTED.group}`, '  version: v1', `  kind: ${ADOPTED.kind}`, `  chart: ${CHART}`, '  adoptReleases: true', ...RULE],
]
  .flat()
  .join('\n');

const helm3Watches = [
  [`- group: ${HELM3_RULED.group}`, '  version: v1', `  kind: ${HELM3_RULED.kind}`, `  chart: ${CHART}`, ...RULE],
  [`- {group: ${HELM3_STRICT.group}, version: v1, kind: ${HELM3_STRICT.kind}, chart: ${CHART}, conflictPolicy: fail}`],
]
  .flat()
  .join('\n');

const CA = Buffer.from('-----BEGIN CERTIFICATE-----\nupgrade-conflicts test CA\n-----END CERTIFICATE-----\n').toString('base64');
const INJECTOR = 'vault-injector';
const NO_REPAIR = { 'helm.sdk.operatorframework.io/drift-repair': 'false' };
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const fightsOf = (cr: CR | undefined): DriftFights | undefined => (cr?.status as { driftFights?: DriftFights } | undefined)?.driftFights;

interface Revision {
  readonly revision: number;
  readonly status: string;
}

describe('upgrades next to other field managers', () => {
  const kc = testKubeConfig();
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;
  let op3: Promise<RunningOperator> | undefined;
  /** The helm 3 operator, beside the helm 4 one on kinds of its own: started by the first helm 3 case, shared by both. */
  const helm3Operator = (helmBin: string): Promise<RunningOperator> =>
    (op3 ??= startOperator({ watches: helm3Watches, namespaces: [ns.name], helmBin }));

  const cfgName = (release: string): string => `${release}-${ns.name}-cfg`;
  const webhook = async (release: string): Promise<V1MutatingWebhookConfiguration | undefined> => {
    try {
      return await admission.readMutatingWebhookConfiguration({ name: cfgName(release) });
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  };
  const caBundleOf = async (release: string): Promise<string | undefined> => (await webhook(release))?.webhooks?.[0]?.clientConfig.caBundle;
  const history = async (release: string): Promise<Revision[]> =>
    (JSON.parse(await helmByHand('history', release, '-n', ns.name, '-o', 'json')) as Revision[]).map(({ revision, status }) => ({
      revision,
      status,
    }));
  const applyMethod = async (release: string): Promise<string | undefined> =>
    (JSON.parse(await helmByHand('status', release, '-n', ns.name, '-o', 'json')) as { apply_method?: string }).apply_method;
  const replicas = async (release: string): Promise<number | undefined> =>
    (await apps.readNamespacedDeployment({ namespace: ns.name, name: `${release}-app` })).spec?.replicas;
  /** `kubectl scale`: the scale subresource, as its own field manager. */
  const scale = (release: string, n: number) =>
    apps.patchNamespacedDeploymentScale(
      { namespace: ns.name, name: `${release}-app`, body: { spec: { replicas: n } }, fieldManager: 'kubectl-scale' },
      mergePatch,
    );
  const greetingOf = async (release: string): Promise<string | undefined> =>
    (await core.readNamespacedConfigMap({ namespace: ns.name, name: `${release}-settings` })).data?.greeting;

  /**
   * The injector: writes its CA as its own field manager whenever it is not there, until stopped
   * (bounded: 120 s). It watches the configuration, as an injector does, and reads it live before a
   * write, so a stale event never makes a second one; no requests while nothing changes.
   */
  const runInjector = (release: string): { writes: () => number; stop: () => Promise<void> } => {
    let writes = 0;
    let stopped = false;
    let watching: AbortController | undefined;
    /** Events handled one at a time, in order: the last one settles before stop() returns. */
    let queue: Promise<void> = Promise.resolve();
    /** A failed read, thrown by stop(). */
    let failure: Error | undefined;
    const fill = async (): Promise<void> => {
      // The API server drops an empty caBundle: the object's existence is what counts.
      const live = await webhook(release);
      if (stopped || live === undefined || live.webhooks?.[0]?.clientConfig.caBundle === CA) return;
      const body = [{ op: 'add', path: POINTER, value: CA }];
      await admission
        .patchMutatingWebhookConfiguration({ name: cfgName(release), body, fieldManager: INJECTOR }, jsonPatch)
        .catch(() => undefined);
      writes++;
    };
    const watch = (): void => {
      if (stopped) return;
      void new Watch(kc)
        .watch(
          '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
          { fieldSelector: `metadata.name=${cfgName(release)}` },
          (type: string, obj: V1MutatingWebhookConfiguration) => {
            if (type === 'DELETED' || obj.webhooks?.[0]?.clientConfig.caBundle === CA) return;
            queue = queue.then(fill).catch((err: unknown) => {
              failure ??= err instanceof Error ? err : new Error(String(err));
            });
          },
          // The API server ends a watch now and then: watch again (a fresh list sees what was missed),
          // a second later after an error.
          (err: unknown) => {
            again(err);
          },
        )
        .then((w) => {
          watching = w;
          if (stopped) w.abort();
        }, again);
    };
    const again = (err?: unknown): void => {
      if (err === undefined || err === null) watch();
      else setTimeout(watch, 1_000).unref();
    };
    watch();
    const bound = setTimeout(() => {
      stopped = true;
      watching?.abort();
    }, 120_000);
    return {
      writes: () => writes,
      stop: async () => {
        stopped = true;
        clearTimeout(bound);
        watching?.abort();
        await queue;
        if (failure !== undefined) throw failure;
      },
    };
  };

  /** Changes the spec and waits for the revision that deploys it. */
  const specChange = async (kind: CRs, release: string, greeting: string, revision: number): Promise<CR> => {
    await kind.patch(ns.name, release, { spec: { greeting } });
    return waitFor(`${kind.kind.kind} ${release} to deploy revision ${revision}`, async () => {
      const cr = await kind.get(ns.name, release);
      const deployed = condition(cr, 'Deployed');
      return cr?.status?.deployedRelease?.revision === revision &&
        deployed?.status === 'True' &&
        cr.status.observedGeneration === cr.metadata.generation
        ? cr
        : undefined;
    });
  };

  beforeAll(async () => {
    for (const k of [RULED, FOUGHT, STRICT, ADOPTED, HELM3_RULED, HELM3_STRICT]) await ensureCrd(kc, k);
    ns = await createNamespace(kc, 'upgrade-conflicts');
    op = await startOperator({ watches, namespaces: [ns.name] });
  });
  afterAll(async () => {
    await op.stop();
    await op3?.then(
      (o) => o.stop(),
      () => undefined,
    );
    for (const release of ['ruled', 'left', 'fought', 'strict', 'adopted', 'v3', 'v3-strict', 'existing', 'existing-strict'])
      await admission.deleteMutatingWebhookConfiguration({ name: cfgName(release) }).catch(() => undefined);
    await ns.remove();
  });

  it('with an ignore rule: a spec change upgrades in one revision, server-side, and the injected CA stays; a kubectl scale is taken back', async () => {
    const ruled = new CRs(kc, RULED);
    await ruled.create(ns.name, 'ruled', { greeting: 'one' }, NO_REPAIR);
    await ruled.waitForCondition(ns.name, 'ruled', { type: 'Deployed', status: 'True' });
    const injector = runInjector('ruled');
    try {
      await waitFor('the injector to have written its CA', async () => (await caBundleOf('ruled')) === CA);
      await specChange(ruled, 'ruled', 'two', 2);
      expect(await greetingOf('ruled')).toBe('two');
      expect(await caBundleOf('ruled')).toBe(CA);
      // The upgrade never reset it: the injector wrote once.
      expect(injector.writes()).toBe(1);
      expect(await history('ruled')).toStrictEqual([
        { revision: 1, status: 'superseded' },
        { revision: 2, status: 'deployed' },
      ]);
      expect(await applyMethod('ruled')).toBe('ssa');
      // helm's manager does not own the field: a later injector write never conflicts with it.
      const managers = ((await webhook('ruled'))?.metadata?.managedFields ?? [])
        .filter((e) => JSON.stringify(e.fieldsV1).includes('f:caBundle'))
        .map((e) => e.manager);
      expect(managers).toStrictEqual([INJECTOR]);

      // kubectl scale takes the chart's replicas (drift repair is off for this CR); the next spec change takes them back.
      await scale('ruled', 3);
      expect(await replicas('ruled')).toBe(3);
      await specChange(ruled, 'ruled', 'three', 3);
      expect(await replicas('ruled')).toBe(1);
      expect(await caBundleOf('ruled')).toBe(CA);
      expect((await history('ruled')).map((r) => r.status)).toStrictEqual(['superseded', 'superseded', 'deployed']);
      expect(await applyMethod('ruled')).toBe('ssa');
      expect((await ruled.events(ns.name, 'ruled')).map((e) => e.reason)).not.toContain('RollbackSuccessful');
    } finally {
      await injector.stop();
    }
  });

  it('helm 3 (client-side three-way merge): with an ignore rule a spec change keeps the injected CA, in one revision; a kubectl scale is taken back', async (ctx) => {
    const helm3 = inject('helm3Bin');
    if (helm3 === '') ctx.skip();
    await helm3Operator(helm3);
    const v3 = new CRs(kc, HELM3_RULED);
    let injector: ReturnType<typeof runInjector> | undefined;
    try {
      await v3.create(ns.name, 'v3', { greeting: 'one' }, NO_REPAIR);
      await v3.waitForCondition(ns.name, 'v3', { type: 'Deployed', status: 'True' });
      injector = runInjector('v3');
      await waitFor('the injector to have written its CA', async () => (await caBundleOf('v3')) === CA);
      await specChange(v3, 'v3', 'two', 2);
      expect(await greetingOf('v3')).toBe('two');
      expect(await caBundleOf('v3')).toBe(CA);
      expect(injector.writes()).toBe(1);
      await scale('v3', 3);
      await specChange(v3, 'v3', 'three', 3);
      expect(await replicas('v3')).toBe(1);
      expect(await caBundleOf('v3')).toBe(CA);
      expect(injector.writes()).toBe(1);
      expect((await history('v3')).map((r) => r.status)).toStrictEqual(['superseded', 'superseded', 'deployed']);
    } finally {
      await injector?.stop();
    }
  });

  it('helm 3: conflictPolicy: fail has nothing to stop (no field ownership client-side): a kubectl scale is taken back, in one revision', async (ctx) => {
    const helm3 = inject('helm3Bin');
    if (helm3 === '') ctx.skip();
    await helm3Operator(helm3);
    const v3 = new CRs(kc, HELM3_STRICT);
    await v3.create(ns.name, 'v3-strict', { greeting: 'one' }, NO_REPAIR);
    await v3.waitForCondition(ns.name, 'v3-strict', { type: 'Deployed', status: 'True' });
    await scale('v3-strict', 3);
    const cr = await specChange(v3, 'v3-strict', 'two', 2);
    expect(await replicas('v3-strict')).toBe(1);
    expect(condition(cr, 'ReleaseFailed')?.status).toBe('False');
    expect((await history('v3-strict')).map((r) => r.status)).toStrictEqual(['superseded', 'deployed']);
  });

  it("a first install over an object that exists with the release's annotations: force takes its field, fail stops with ResourceConflict", async () => {
    /** As a `keep` policy or a lost release storage leaves it: this release's, a field set by someone else. */
    const existing = (release: string) =>
      core.createNamespacedConfigMap({
        namespace: ns.name,
        fieldManager: 'someone-else',
        body: {
          metadata: {
            name: `${release}-settings`,
            labels: { 'app.kubernetes.io/managed-by': 'Helm' },
            annotations: { 'meta.helm.sh/release-name': release, 'meta.helm.sh/release-namespace': ns.name },
          },
          data: { greeting: 'theirs' },
        },
      });
    await existing('existing');
    const ruled = new CRs(kc, RULED);
    await ruled.create(ns.name, 'existing', { greeting: 'ours' });
    await ruled.waitForCondition(ns.name, 'existing', { type: 'Deployed', status: 'True' });
    expect(await greetingOf('existing')).toBe('ours');
    expect(await history('existing')).toStrictEqual([{ revision: 1, status: 'deployed' }]);

    await existing('existing-strict');
    const strict = new CRs(kc, STRICT);
    await strict.create(ns.name, 'existing-strict', { greeting: 'ours' });
    const cr = await strict.waitForCondition(ns.name, 'existing-strict', {
      type: 'ReleaseFailed',
      status: 'True',
      reason: 'ResourceConflict',
    });
    const message = condition(cr, 'ReleaseFailed')?.message ?? '';
    expect(message).toContain('conflict with "someone-else"');
    expect(message).toContain('.data.greeting');
    expect(message).toContain('set conflictPolicy: force on the watch');
    expect(condition(cr, 'Deployed')?.status).not.toBe('True');
    // Only the failed install's record went: the object it was refused on, which may be serving, is
    // as its manager left it (a `helm uninstall` of the failed release would have deleted it).
    expect(await greetingOf('existing-strict')).toBe('theirs');
  });

  it('a release left on client-side apply (by the old fallback, a forced replace) moves back to server-side apply on its next upgrade, the CA kept', async () => {
    const ruled = new CRs(kc, RULED);
    await ruled.create(ns.name, 'left', { greeting: 'one' });
    await ruled.waitForCondition(ns.name, 'left', { type: 'Deployed', status: 'True' });
    const injector = runInjector('left');
    try {
      await waitFor('the injector to have written its CA', async () => (await caBundleOf('left')) === CA);
      // Paused, as `rollout undo` does (src/cli/undo-fence.ts): a reconcile meeting helm's pending-upgrade
      // mid-way takes it for a dead process's and rolls it back, server-side (ADR 0036 sees only its own helms).
      const left = { ...RULED, namespace: ns.name, name: 'left' };
      await whilePaused(kc, left, { ackTimeoutMs: 60_000 }, async ({ confirmed }) => {
        expect(confirmed).toBe(true);
        await helmByHand('upgrade', 'left', CHART, '-n', ns.name, '--reuse-values', '--force-replace', '--server-side=false');
        expect(await applyMethod('left')).toBe('csa');
      });
      // The replace put the chart's empty caBundle back; the injector writes it again.
      await waitFor('the injector to have written its CA again', async () => (await caBundleOf('left')) === CA);
      const writes = injector.writes();
      await ruled.patch(ns.name, 'left', { spec: { greeting: 'two' } });
      await waitFor('left to deploy the new spec server-side', async () => {
        const cr = await ruled.get(ns.name, 'left');
        const deployed = condition(cr, 'Deployed')?.status === 'True' && cr?.status?.observedGeneration === cr?.metadata.generation;
        return deployed && (await greetingOf('left')) === 'two' && (await applyMethod('left')) === 'ssa';
      });
      expect(await caBundleOf('left')).toBe(CA);
      expect(injector.writes()).toBe(writes);
      expect((await history('left')).map((r) => r.status)).not.toContain('failed');
    } finally {
      await injector.stop();
    }
  });

  it('after a detected fight: spec changes upgrade in one revision each and leave the injected CA to the injector', async () => {
    const fought = new CRs(kc, FOUGHT);
    await fought.create(ns.name, 'fought', { greeting: 'one' });
    await fought.waitForCondition(ns.name, 'fought', { type: 'Deployed', status: 'True' });
    const injector = runInjector('fought');
    try {
      await fought.waitForCondition(ns.name, 'fought', { type: 'Drifted', status: 'True', reason: 'DriftConflict' });
      const writes = injector.writes();
      for (const [greeting, revision] of [
        ['two', 2],
        ['three', 3],
      ] as const) {
        const cr = await specChange(fought, 'fought', greeting, revision);
        expect(await greetingOf('fought')).toBe(greeting);
        expect(await caBundleOf('fought')).toBe(CA);
        // The fight is remembered for the new revision, so the next upgrade leaves the field too.
        expect(
          fightsOf(cr)
            ?.fields.filter((f) => f.conflict === true)
            .map((f) => [f.path, f.manager]),
        ).toStrictEqual([[POINTER, INJECTOR]]);
      }
      // Neither upgrade nor the repairs after them reset it.
      expect(injector.writes()).toBe(writes);
      expect((await history('fought')).map((r) => r.status)).toStrictEqual(['superseded', 'superseded', 'deployed']);
      expect(await applyMethod('fought')).toBe('ssa');
      expect(condition(await fought.get(ns.name, 'fought'), 'ReleaseFailed')?.status).toBe('False');
    } finally {
      await injector.stop();
    }
  });

  it('conflictPolicy: fail: ReleaseFailed/ResourceConflict names the field, its manager and what settles it, with no revision and no rollback; a rule then settles it', async () => {
    const strict = new CRs(kc, STRICT);
    await strict.create(ns.name, 'strict', { greeting: 'one' }, NO_REPAIR);
    await strict.waitForCondition(ns.name, 'strict', { type: 'Deployed', status: 'True' });
    await scale('strict', 3);
    await strict.patch(ns.name, 'strict', { spec: { greeting: 'two' } });

    const cr = await strict.waitForCondition(ns.name, 'strict', { type: 'ReleaseFailed', status: 'True', reason: 'ResourceConflict' });
    const message = condition(cr, 'ReleaseFailed')?.message ?? '';
    expect(message).toContain(`Deployment ${ns.name}/strict-app: field /spec/replicas is owned by field manager "kubectl-scale"`);
    expect(message).toContain('set conflictPolicy: force on the watch');
    expect(message).toContain('add the rule {paths: [/spec/replicas], target: {kind: Deployment, name: strict-app}}');
    // helm stopped before it stored anything: no failed revision, nothing to roll back, nothing applied.
    expect(await history('strict')).toStrictEqual([{ revision: 1, status: 'deployed' }]);
    expect(await greetingOf('strict')).toBe('one');
    expect(await replicas('strict')).toBe(3);
    const reasons = (await strict.events(ns.name, 'strict')).map((e) => e.reason);
    expect(reasons).not.toContain('RollbackSuccessful');
    expect(reasons).not.toContain('RollbackFailed');
    expect(cr.status?.deployedRelease?.revision).toBe(1);

    // The rule it names settles it: the upgrade leaves replicas to kubectl-scale and goes through.
    await strict.patch(ns.name, 'strict', {
      metadata: {
        annotations: { 'helm.sdk.operatorframework.io/drift-ignore': '[{paths: [/spec/replicas], target: {kind: Deployment}}]' },
      },
    });
    await waitFor(
      'strict to deploy revision 2',
      async () => (await strict.get(ns.name, 'strict'))?.status?.deployedRelease?.revision === 2,
    );
    expect(await greetingOf('strict')).toBe('two');
    expect(await replicas('strict')).toBe(3);
    // Left out of what helm applied: helm's manager does not own it (it did at install).
    const deployment = await apps.readNamespacedDeployment({ namespace: ns.name, name: 'strict-app' });
    const helmOwns = (deployment.metadata?.managedFields ?? []).filter((e) => e.manager === 'helm').map((e) => JSON.stringify(e.fieldsV1));
    expect(helmOwns.length).toBeGreaterThan(0);
    expect(helmOwns.some((f) => f.includes('f:replicas'))).toBe(false);
    expect(await history('strict')).toStrictEqual([
      { revision: 1, status: 'superseded' },
      { revision: 2, status: 'deployed' },
    ]);
  });

  it('a release installed client-side by helm 3 and adopted moves to server-side apply on its upgrade, without a conflict and keeping what others set', async (ctx) => {
    const helm3 = inject('helm3Bin');
    if (helm3 === '') ctx.skip();
    await promisify(execFile)(helm3, [
      'install',
      'adopted',
      CHART,
      '-n',
      ns.name,
      '--set',
      'greeting=from-helm3',
      '--kubeconfig',
      inject('kubeconfigPath'),
    ]);
    expect(await applyMethod('adopted')).not.toBe('ssa');
    const injector = runInjector('adopted');
    try {
      await waitFor('the injector to have written its CA', async () => (await caBundleOf('adopted')) === CA);
      // A field the chart does not set, written by someone else.
      await core.patchNamespacedConfigMap(
        {
          namespace: ns.name,
          name: 'adopted-settings',
          body: { metadata: { annotations: { 'example.com/noted-by': 'ops' } } },
          fieldManager: 'kubectl-annotate',
        },
        mergePatch,
      );

      const adopted = new CRs(kc, ADOPTED);
      await adopted.create(ns.name, 'adopted', { greeting: 'from-cr' });
      await waitFor(
        'adopted to deploy revision 2',
        async () => (await adopted.get(ns.name, 'adopted'))?.status?.deployedRelease?.revision === 2,
      );
      expect(await greetingOf('adopted')).toBe('from-cr');
      expect(await applyMethod('adopted')).toBe('ssa');
      expect(await history('adopted')).toStrictEqual([
        { revision: 1, status: 'superseded' },
        { revision: 2, status: 'deployed' },
      ]);
      expect(await caBundleOf('adopted')).toBe(CA);
      expect(injector.writes()).toBe(1);
      const settings = await core.readNamespacedConfigMap({ namespace: ns.name, name: 'adopted-settings' });
      expect(settings.metadata?.annotations?.['example.com/noted-by']).toBe('ops');
      // helm's client-side ownership became its apply ownership.
      expect((settings.metadata?.managedFields ?? []).filter((e) => e.manager === 'helm').map((e) => e.operation)).toStrictEqual(['Apply']);
      expect(condition(await adopted.get(ns.name, 'adopted'), 'ReleaseFailed')?.status).toBe('False');
    } finally {
      await injector.stop();
    }
  });
});
