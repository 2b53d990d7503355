/**
 * Issue 47: upgrade plans held for the platform's approval (docs/plans.md, ADR 0083/0084). A
 * tenant who may edit its CRs, their status included, tries to forge an approval or a plan so
 * that a held upgrade goes ahead, and to read another tenant's plan.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { isStatus } from '../../src/k8s/errors.js';
import { PlanApprovals } from '../../src/operator/plan-store.js';
import { approveStepOf } from '../../src/reconciler/plan/plan-approval.js';
import { waitFor } from '../support/kube.js';
import { condition, type CR } from '../support/operator.js';
import { PLANNED, againstEachConfiguration, attack, releaseConfigMaps } from './support/target.js';

const APPROVE_PLAN_ANNOTATION = 'helm-operator.io/approve-plan';

interface HeldPlan {
  readonly digest: string;
  readonly configMap: string;
}
const planOf = (cr: CR | undefined): (HeldPlan & { state?: string }) | undefined =>
  (cr?.status as { plan?: HeldPlan & { state?: string } } | undefined)?.plan;

againstEachConfiguration(
  'plans',
  (target) => {
    const a = (): string => target.tenancy.a;
    const admin = (): CoreV1Api => target.tenancy.admin.makeApiClient(CoreV1Api);
    /** The greeting the release's ConfigMap serves now. */
    const served = async (name: string): Promise<string | undefined> => (await releaseConfigMaps(target, name))[0]?.data?.greeting;
    /** helm's revisions of release `name`, from its storage Secrets. */
    const revisions = async (name: string): Promise<number> =>
      (await admin().listNamespacedSecret({ namespace: a(), labelSelector: `owner=helm,name=${name}` })).items.length;

    /** A CR installed (no plan is held for an install), then changed: its upgrade held with a plan. */
    const held = async (name: string, crs = target.crs(), namespace = a()): Promise<HeldPlan> => {
      await crs.create(namespace, name, { greeting: 'one' });
      await waitFor(`${name} to be deployed`, async () => condition(await crs.get(namespace, name), 'Deployed')?.status === 'True');
      await crs.patch(namespace, name, { spec: { greeting: 'two' } });
      return waitFor(`${name}'s upgrade to be held for approval`, async () => {
        const cr = await target.adminCrs().get(namespace, name);
        const plan = planOf(cr);
        return plan?.state === 'AwaitingApproval' && condition(cr, 'Approved')?.status === 'False' ? plan : undefined;
      });
    };

    attack(
      target,
      {
        id: 'p1',
        title:
          "forge the platform's approval: the CR's approve-plan annotation with the pending digest, and status.plan rewritten as approved",
        kind: 'escalate',
      },
      async () => {
        const name = 'forger';
        const plan = await held(name);
        await target.crs().patch(a(), name, { metadata: { annotations: { [APPROVE_PLAN_ANNOTATION]: plan.digest } } });
        await target.crs().patchStatus(a(), name, { plan: { ...plan, state: 'Approved' } });
        // The operator has looked again: the annotation changed the CR, and its own status write
        // comes back over the forged one (the Approved condition says whose approval it waits for).
        await waitFor(`${name} to be held again after the forgery`, async () => {
          const cr = await target.adminCrs().get(a(), name);
          return planOf(cr)?.state === 'AwaitingApproval' && condition(cr, 'Approved')?.status === 'False' ? cr : undefined;
        });
        expect(await revisions(name), 'helm revisions').toBe(1);
        expect(await served(name)).toBe('one');
      },
    );

    attack(
      target,
      {
        id: 'p2',
        title: 'forge the plan: status.plan rewritten with another digest, which the platform then approves',
        kind: 'escalate',
      },
      async () => {
        const name = 'swapper';
        const plan = await held(name);
        const forged = `sha256:${'0'.repeat(64)}`;
        await target.crs().patchStatus(a(), name, { plan: { ...plan, digest: forged, configMap: 'kube-root-ca.crt' } });
        // The operator's next look (the platform-approval poll) writes its own plan back over the
        // forgery, and the Approved condition asks for the true digest.
        await waitFor(`${name}'s status to show the operator's own plan again`, async () => {
          const c = await target.adminCrs().get(a(), name);
          const step = approveStepOf(condition(c, 'Approved')?.message ?? '') ?? '';
          return planOf(c)?.digest === plan.digest && planOf(c)?.configMap === plan.configMap && step.endsWith(`--digest ${plan.digest}`);
        });
        // The platform, misled (it read status before that), approves the forged digest.
        const kind = target.config.extras;
        await new PlanApprovals(target.tenancy.admin, target.operatorNamespace, kind).approve(a(), name, forged);
        // The held CR looks again from the plan the operator holds, not from its status: the
        // forged digest's approval is stale, and status shows the operator's own plan again.
        const cr = await waitFor(`${name} to refuse the forged digest's approval and show its own plan`, async () => {
          const c = await target.adminCrs().get(a(), name);
          const approved = condition(c, 'Approved');
          return planOf(c)?.digest === plan.digest && approved?.status === 'False' && approved.reason === 'PlanApprovalStale'
            ? c
            : undefined;
        });
        expect(planOf(cr)).toMatchObject({ digest: plan.digest, configMap: plan.configMap, state: 'AwaitingApproval' });
        // The approval step the condition names is the true plan's digest.
        expect(approveStepOf(condition(cr, 'Approved')?.message ?? '')).toContain(`--digest ${plan.digest}`);
        expect(await revisions(name), 'helm revisions').toBe(1);
        expect(await served(name)).toBe('one');
      },
    );

    attack(target, { id: 'p3', title: "read another tenant's plan ConfigMap", kind: 'read' }, async () => {
      const b = target.tenancy.b;
      const plan = await held('neighbour', target.adminCrs(), b);
      const tenant = target.tenancy.tenant.makeApiClient(CoreV1Api);
      const read = await tenant.readNamespacedConfigMap({ namespace: b, name: plan.configMap }).then(
        () => 'read',
        (err: unknown) => (isStatus(err, 403) ? 'forbidden' : String(err)),
      );
      expect(read).toBe('forbidden');
      // The plan is there for its own tenant's readers.
      expect((await admin().readNamespacedConfigMap({ namespace: b, name: plan.configMap })).data?.['plan.json']).toBeDefined();
    });
  },
  [PLANNED],
);
