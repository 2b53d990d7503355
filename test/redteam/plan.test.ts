/**
 * Issue 47: upgrade plans held for the platform's approval (docs/plans.md, ADR 0083/0084). A
 * tenant who may edit its CRs, their status included, tries to forge an approval or a plan so
 * that a held upgrade goes ahead, and to read another tenant's plan.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { isStatus } from '../../src/k8s/errors.js';
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
        title:
          'forge the plan: rewrite status.plan with another digest and configMap, so that an approval of one plan lets another through',
        kind: 'escalate',
      },
      async () => {
        const name = 'swapper';
        const plan = await held(name);
        // A digest the platform might approve elsewhere, and a ConfigMap of the tenant's choosing.
        await target.crs().patchStatus(a(), name, { plan: { ...plan, digest: `sha256:${'0'.repeat(64)}`, configMap: 'kube-root-ca.crt' } });
        await target.crs().patch(a(), name, { metadata: { annotations: { poke: 'again' } } });
        const cr = await waitFor(`${name} to be held with the operator's own plan`, async () => {
          const got = await target.adminCrs().get(a(), name);
          return planOf(got)?.digest === plan.digest && condition(got, 'Approved')?.status === 'False' ? got : undefined;
        });
        expect(planOf(cr)?.configMap).toBe(plan.configMap);
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
