/**
 * A watch's `healthChecks` (issue 48 item 6, docs/adr/0082) with real helm on the real control
 * plane: the chart creates a custom resource of its own CRD whose readiness only a CEL rule can
 * tell (it has no Ready condition, so the built-in rules would call it ready at once). The test
 * plays its controller: it patches the object's status to Ready, then to Failed, and the CR's
 * Ready condition follows the rule.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApiextensionsV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { createNamespace, testKubeConfig } from '../../support/kube.js';
import { condition, CRs, ensureCrd, startOperator, type RunningOperator, type TestKind } from '../../support/operator.js';

const OWNER: TestKind = { group: 'owner.healthchecks.example.com', version: 'v1', kind: 'Stack', plural: 'stacks' };
const DATABASES = 'databases.healthchecks.example.com';
const NAME = 'stack-a';
const WAIT_MS = 120_000;

const DATABASE_CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ${DATABASES}
spec:
  group: healthchecks.example.com
  scope: Namespaced
  names: { kind: Database, plural: databases, singular: database, listKind: DatabaseList }
  versions:
    - name: v1
      served: true
      storage: true
      subresources: { status: {} }
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`;

async function writeChart(dir: string): Promise<string> {
  const root = path.join(dir, 'stack');
  await mkdir(path.join(root, 'templates'), { recursive: true });
  await mkdir(path.join(root, 'crds'), { recursive: true });
  await writeFile(path.join(root, 'Chart.yaml'), 'apiVersion: v2\nname: stack\nversion: 0.1.0\n');
  await writeFile(path.join(root, 'crds', 'databases.yaml'), DATABASE_CRD);
  await writeFile(
    path.join(root, 'templates', 'database.yaml'),
    'apiVersion: healthchecks.example.com/v1\nkind: Database\nmetadata:\n  name: {{ .Release.Name }}-db\nspec:\n  engine: postgres\n',
  );
  return root;
}

describe('healthChecks in CEL', () => {
  const kc = testKubeConfig();
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const crs = new CRs(kc, OWNER);
  let dir = '';
  let ns = '';
  let removeNamespace: (() => Promise<void>) | undefined;
  let op: RunningOperator | undefined;

  beforeAll(async () => {
    await ensureCrd(kc, OWNER);
    dir = await mkdtemp(path.join(os.tmpdir(), 'health-checks-test-'));
    const chart = await writeChart(dir);
    const created = await createNamespace(kc, 'health-checks');
    ns = created.name;
    removeNamespace = created.remove;
    const watches = [
      `- group: ${OWNER.group}`,
      `  version: ${OWNER.version}`,
      `  kind: ${OWNER.kind}`,
      `  chart: ${chart}`,
      '  healthChecks:',
      '    - apiVersion: healthchecks.example.com/v1',
      '      kind: Database',
      `      inProgress: "has(status.observedGeneration) && status.observedGeneration < metadata.generation"`,
      `      failed: "has(status.phase) && status.phase == 'Failed'"`,
      `      current: "has(status.phase) && status.phase == 'Ready'"`,
      '',
    ].join('\n');
    op = await startOperator({ watches, namespaces: [ns] });
  });
  afterAll(async () => {
    if (op !== undefined) {
      await crs.deleteAll(ns);
      await crs.waitForGone(ns, NAME, { timeoutMs: WAIT_MS });
    }
    await op?.stop();
    await removeNamespace?.();
    await rm(dir, { recursive: true, force: true });
    for (const name of [DATABASES, `${OWNER.plural}.${OWNER.group}`]) {
      try {
        await ext.deleteCustomResourceDefinition({ name });
      } catch (err) {
        if (!isStatus(err, 404)) throw err;
      }
    }
  });

  const setPhase = async (phase: string): Promise<void> => {
    const body = { status: { phase, observedGeneration: 1 } };
    await custom.patchNamespacedCustomObjectStatus(
      { group: 'healthchecks.example.com', version: 'v1', plural: 'databases', namespace: ns, name: `${NAME}-db`, body },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };

  it('holds Ready until the rule says current, then turns it False when the rule says failed', { timeout: 4 * WAIT_MS }, async () => {
    await crs.create(ns, NAME, {});
    const deployed = await crs.waitForCondition(ns, NAME, { type: 'Deployed', status: 'True' }, { timeoutMs: WAIT_MS });
    // Deployed, but the Database has no status yet: only the rule knows it is not ready.
    const waiting = await crs.waitForCondition(
      ns,
      NAME,
      { type: 'Ready', status: 'False', reason: 'ResourcesNotReady' },
      { timeoutMs: WAIT_MS },
    );
    expect(condition(waiting, 'Ready')?.message).toContain(`Database ${NAME}-db in progress (health check current is false)`);
    expect(deployed.metadata.name).toBe(NAME);

    await setPhase('Ready');
    const ready = await crs.waitForCondition(ns, NAME, { type: 'Ready', status: 'True' }, { timeoutMs: WAIT_MS });
    expect(condition(ready, 'Ready')?.reason).toBe('ResourcesReady');

    await setPhase('Failed');
    const failed = await crs.waitForCondition(
      ns,
      NAME,
      { type: 'Ready', status: 'False', reason: 'ResourcesNotReady' },
      { timeoutMs: WAIT_MS },
    );
    expect(condition(failed, 'Ready')?.message).toContain(`Database ${NAME}-db failed (health check failed)`);
  });
});
