/**
 * Issue 47, docs/adr/0101: a waved rollout decides later waves from the earlier waves' status. A
 * tenant who may write `<plural>/status` of its own CR, the canary of a rollout (the first CR in
 * `namespace/name` order), forges it healthy, failed, or carrying an approved plan, to move,
 * halt, or approve another tenant's CR of a later wave. The operator believes only the status it
 * sealed, so each forgery changes nothing: helm's history of the later wave's release, its
 * conditions and its live objects are what the true canary alone would have given.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { exists, waitFor } from '../support/kube.js';
import { condition, type CR } from '../support/operator.js';
import { ROLLED, againstEachConfiguration, attack, settle, type Target } from './support/target.js';

/**
 * How long a moved CR must be Ready before the next wave goes (ROLLED's `stableFor`). Each attack
 * waits it out once; what it must exceed is the time from the canary's move to the forgery and the
 * poke (a second or two), so that a victim moved by the forgery is told from one moved by the truth.
 */
const STABLE_FOR_MS = 20_000;
const WAIT = { timeoutMs: 300_000, intervalMs: 1_000 };

interface Attempt {
  readonly fleetRevision: string;
  readonly at: string;
  readonly failure?: string;
  readonly approvedPlan?: unknown;
}
interface RolloutStatus {
  readonly fleetRevision?: string;
  readonly attempt?: Attempt;
  readonly seal?: string;
}
const rolloutOf = (cr: CR | undefined): RolloutStatus | undefined => (cr?.status as { rollout?: RolloutStatus } | undefined)?.rollout;

/** Each attack moves the fleet to a revision of its own. */
let fleet = 0;

againstEachConfiguration(
  'rollouts',
  (target) => {
    const a = (): string => target.tenancy.a;
    const b = (): string => target.tenancy.b;
    const core = (): CoreV1Api => target.tenancy.admin.makeApiClient(CoreV1Api);
    /** helm's revisions of release `name` in `namespace`, from its storage Secrets (the admin reads them). */
    const history = async (namespace: string, name: string): Promise<{ version: number; createdMs: number }[]> =>
      (await core().listNamespacedSecret({ namespace, labelSelector: `owner=helm,name=${name}` })).items
        .map((s) => ({ version: Number(s.metadata?.labels?.version), createdMs: s.metadata?.creationTimestamp?.getTime() ?? 0 }))
        .sort((x, y) => x.version - y.version);

    /**
     * The tenant's canary (tenant A's namespace sorts first) and another tenant's CR of the next
     * wave, both deployed; then the fleet moves, and the canary takes it while the victim waits.
     * Returns the canary as the operator wrote it once moved.
     */
    async function rolloutUnderWay(t: Target, canary: string, victim: string, victimSpec: Record<string, unknown>): Promise<CR> {
      await t.crs().create(a(), canary, { greeting: 'one' });
      await t.trackedAdminCrs().create(b(), victim, victimSpec);
      await t.settle(canary);
      await settle(t.adminCrs(), b(), victim, { timeoutMs: 180_000 });
      const before = rolloutOf(await t.adminCrs().get(a(), canary))?.fleetRevision;
      await t.reconfigure([`overrideValues: {fleet: "${++fleet}"}`]);
      const moved = await waitFor(
        `${canary} to be moved to the new fleet revision`,
        async () => {
          const cr = await t.adminCrs().get(a(), canary);
          const at = rolloutOf(cr)?.attempt;
          return at !== undefined && at.fleetRevision !== before && rolloutOf(cr)?.seal !== undefined ? cr : undefined;
        },
        WAIT,
      );
      const waiting = await t.adminCrs().get(b(), victim);
      expect(condition(waiting, 'Rollout')?.reason, `${victim} waits for the canary`).toBe('RolloutWaiting');
      expect((await history(b(), victim)).length).toBe(1);
      return moved;
    }

    /** The victim's reconcile now, while the forgery is what the controller's cache holds. */
    const poke = (victim: string): Promise<CR> =>
      target.adminCrs().patch(b(), victim, { metadata: { annotations: { 'redteam.example.com/poke': String(Date.now()) } } });

    /** When the true canary is healthy: Ready (at its move) for stableFor, as the operator wrote it. */
    const trulyHealthyAtMs = (moved: CR): number => {
      const attemptMs = Date.parse(rolloutOf(moved)?.attempt?.at ?? '');
      const readyMs = Date.parse(condition(moved, 'Ready')?.lastTransitionTime ?? '');
      return Math.max(attemptMs, Number.isNaN(readyMs) ? 0 : readyMs) + STABLE_FOR_MS;
    };

    /** Waits for the victim's fleet upgrade (its second helm revision); returns when helm made it. */
    const victimMoved = async (victim: string): Promise<number> =>
      waitFor(
        `${victim} to be upgraded to the new fleet revision`,
        async () => {
          const h = await history(b(), victim);
          return h.length >= 2 ? h[1]?.createdMs : undefined;
        },
        WAIT,
      );

    attack(
      target,
      {
        id: 'r1',
        title: "forge an earlier wave healthy: the canary's status says Ready for an hour, so another tenant's CR moves without the proof",
        kind: 'escalate',
        timeoutMs: 600_000,
      },
      async () => {
        const moved = await rolloutUnderWay(target, 'r1-canary', 'r1-victim', { greeting: 'one' });
        const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
        const conditions = (moved.status?.conditions ?? []).map((c) =>
          c.type === 'Ready' ? { ...c, status: 'True', lastTransitionTime: hourAgo } : c,
        );
        const attempt = rolloutOf(moved)?.attempt;
        await target.crs().patchStatus(a(), 'r1-canary', { conditions, rollout: { attempt: { ...attempt, at: hourAgo } } });
        await poke('r1-victim');
        // The victim moves when the true canary is healthy, not when the forgery says it was.
        const movedAtMs = await victimMoved('r1-victim');
        // helm's creationTimestamp has whole seconds.
        expect(movedAtMs, 'the victim was upgraded before the canary was healthy').toBeGreaterThanOrEqual(trulyHealthyAtMs(moved) - 1_000);
      },
    );

    attack(
      target,
      {
        id: 'r2',
        title: "forge an earlier wave failed: the canary's attempt says it failed, to halt every other tenant's upgrade",
        kind: 'starve',
        timeoutMs: 600_000,
      },
      async () => {
        const moved = await rolloutUnderWay(target, 'r2-canary', 'r2-victim', { greeting: 'one' });
        const attempt = rolloutOf(moved)?.attempt;
        await target.crs().patchStatus(a(), 'r2-canary', { rollout: { attempt: { ...attempt, failure: 'forged: not Ready' } } });
        await poke('r2-victim');
        // No halt: the victim goes on once the true canary is healthy.
        await victimMoved('r2-victim');
        const victim = await waitFor('r2-victim to record its own move', async () => {
          const cr = await target.adminCrs().get(b(), 'r2-victim');
          return rolloutOf(cr)?.attempt?.fleetRevision === attempt?.fleetRevision ? cr : undefined;
        });
        expect(rolloutOf(victim)?.attempt?.failure).toBeUndefined();
        expect(condition(victim, 'Rollout')).toBeUndefined();
      },
    );

    attack(
      target,
      {
        id: 'r3',
        title:
          "forge an earlier wave's approval: the canary's attempt carries an approved plan with the delete risk another tenant's upgrade has",
        kind: 'escalate',
        timeoutMs: 600_000,
      },
      async () => {
        const next = fleet + 1;
        // The victim's release keeps a ConfigMap that the next fleet revision drops: its upgrade's plan deletes it (risky).
        const legacy = `{{- if ne (toString .Values.fleet) "${next}" }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-legacy\ndata: {}\n{{- end }}`;
        const moved = await rolloutUnderWay(target, 'r3-canary', 'r3-victim', { greeting: 'one', extraDeploy: [legacy] });
        expect(fleet).toBe(next);
        const attempt = rolloutOf(moved)?.attempt;
        // The canary's own plan had no risk and went without approval: it approves nothing.
        expect(attempt?.approvedPlan).toBeUndefined();
        const approvedPlan = { digest: `sha256:${'0'.repeat(64)}`, risks: ['delete'] };
        await target.crs().patchStatus(a(), 'r3-canary', { rollout: { attempt: { ...attempt, approvedPlan } } });
        await poke('r3-victim');
        // Once the canary is healthy the victim plans, and holds for its own approval.
        const held = await waitFor(
          'r3-victim to hold its plan for its own approval',
          async () => {
            const cr = await target.adminCrs().get(b(), 'r3-victim');
            const approved = condition(cr, 'Approved');
            return approved !== undefined && approved.reason !== 'PlanApprovedByRollout' ? { cr, approved } : undefined;
          },
          WAIT,
        );
        expect(held.approved.status, held.approved.message).toBe('False');
        expect((await history(b(), 'r3-victim')).length, 'helm revisions of the victim').toBe(1);
        expect(await exists(() => core().readNamespacedConfigMap({ namespace: b(), name: 'r3-victim-legacy' }))).toBe(true);
      },
    );
  },
  [ROLLED],
);
