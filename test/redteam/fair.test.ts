/**
 * Issue 32 item 6: one tenant must not starve another. Tenant A floods its namespace with CRs, then
 * creates installs whose hook never completes; each time, tenant B's CR must reach Deployed while
 * tenant A still has CRs not deployed. No timing assertion: the order of the two outcomes is the verdict.
 */
import { BatchV1Api } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { waitFor } from '../support/kube.js';
import type { CRs } from '../support/operator.js';
import { againstEachConfiguration, attack, settledOutcome, type Target } from './support/target.js';

const FLOOD = 60;
const HANGING = 4;

/** A pre-install hook Job that no node can run: helm waits for it until its timeout. */
const hangingHook =
  'apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-hang\n  annotations: {helm.sh/hook: pre-install}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      nodeSelector: {redteam.example.com/nowhere: "true"}\n      containers: [{name: hang, image: busybox:1.36, command: [sleep, "3600"]}]';

/** How many of `names` are deployed for their generation. */
async function deployedCount(crs: CRs, namespace: string, names: readonly string[]): Promise<number> {
  const all = await crs.list(namespace);
  return all.filter((cr) => names.includes(cr.metadata.name) && settledOutcome(cr)?.startsWith('Deployed/') === true).length;
}

againstEachConfiguration('starvation', (target) => {
  /** Creates CR `name` in tenant B's namespace (as its admin), waits for Deployed, and returns how many of A's `aNames` were deployed by then. */
  const otherTenantServed = async (name: string, aNames: readonly string[]): Promise<number> => {
    const b = target.tenancy.b;
    await target.adminCrs().create(b, name, { greeting: 'b' });
    await waitFor(
      `tenant B's ${name} to be deployed`,
      async () => settledOutcome(await target.adminCrs().get(b, name))?.startsWith('Deployed/') === true,
      { timeoutMs: 150_000, intervalMs: 200 },
    );
    return deployedCount(target.adminCrs(), target.tenancy.a, aNames);
  };

  attack(
    target,
    { id: '6a', title: `tenant A floods ${FLOOD} CRs; tenant B's CR is deployed before A's flood is`, kind: 'starve', timeoutMs: 300_000 },
    async () => {
      const names = Array.from({ length: FLOOD }, (_, i) => `flood-${i}`);
      for (let i = 0; i < names.length; i += 10)
        await Promise.all(names.slice(i, i + 10).map((n) => target.crs().create(target.tenancy.a, n, {})));
      const aDeployed = await otherTenantServed('calm', names);
      // Served in turn, B's CR comes after one or two of A's; in arrival order, after nearly all of them
      // (the last of A's may still be installing on another worker), so half is a margin both ways.
      expect(aDeployed, `of tenant A's ${FLOOD} CRs deployed when B's was`).toBeLessThan(FLOOD / 2);
    },
  );

  attack(
    target,
    {
      id: '6b',
      title: `tenant A's ${HANGING} installs whose hook never completes; tenant B's CR is deployed meanwhile`,
      kind: 'starve',
      timeoutMs: 300_000,
    },
    async () => {
      const names = Array.from({ length: HANGING }, (_, i) => `hang-${i}`);
      await Promise.all(names.map((n) => target.crs().create(target.tenancy.a, n, { extraDeploy: [hangingHook] })));
      // A hook Job exists: an install of A's holds a worker now, and the others queue for theirs.
      await waitFor("a hook Job of A's", async () => (await hookJobs(target)) > 0, { timeoutMs: 150_000 });
      const aDeployed = await otherTenantServed('calm-2', names);
      expect(aDeployed, `of tenant A's hanging installs deployed`).toBe(0);
    },
  );
});

async function hookJobs(target: Target): Promise<number> {
  const jobs = await target.tenancy.admin.makeApiClient(BatchV1Api).listNamespacedJob({ namespace: target.tenancy.a });
  return jobs.items.filter((j) => j.metadata?.name?.startsWith('hang-') === true).length;
}
