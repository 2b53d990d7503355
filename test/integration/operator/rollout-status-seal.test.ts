/**
 * Issue 47 (docs/adr/0101): `helm-operator rollout status` shows a CR's rollout fields and Ready as
 * fact only where the operator's seal vouches for them, checked with the key of the operator's
 * namespace as the gate checks it. On the real control plane with real helm: an operator process
 * given `--leader-election-namespace` alone (no `--leader-elect`) keeps its key there; a CR whose
 * status a tenant rewrote through the status subresource is shown as `forged`, one whose seal was
 * stripped as `unsealed`, and neither is counted; without the key every row is marked unverified.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FINGERPRINT_KEY_SECRET } from '../../../src/operator/fingerprint-key.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, type CR, type TestKind } from '../../support/operator.js';
import { startOperatorProcess, waitForExit, type OperatorProcess } from '../../support/process.js';

const SEALED: TestKind = { group: 'rollout-seal.example.com', version: 'v1', kind: 'Sealed', plural: 'sealeds' };
const NAMES = ['forged', 'honest', 'plain'];

const rolloutOf = (cr: CR | undefined): { fleetRevision?: string; seal?: string } | undefined =>
  (cr?.status as { rollout?: { fleetRevision?: string; seal?: string } } | undefined)?.rollout;

describe('rollout status and the operator seal', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const crs = new CRs(kc, SEALED);
  let dir = '';
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let opNs: Awaited<ReturnType<typeof createNamespace>>;
  let op: OperatorProcess | undefined;

  beforeAll(async () => {
    await ensureCrd(kc, SEALED);
    dir = await mkdtemp(path.join(os.tmpdir(), 'rollout-seal-'));
    ns = await createNamespace(kc, 'rollout-seal');
    opNs = await createNamespace(kc, 'rollout-seal-op');
  });
  afterAll(async () => {
    if (op !== undefined && op.child.exitCode === null && op.child.signalCode === null) op.crash();
    await ns.remove();
    await opNs.remove();
    await rm(dir, { recursive: true, force: true });
  });

  /** `helm-operator rollout status` as a user runs it: its printed lines. */
  const status = async (operatorNamespace: string | undefined): Promise<string[]> => {
    const kind = ['--kind', `${SEALED.kind}.${SEALED.group}`, '-n', ns.name];
    const p = startOperatorProcess(
      ['rollout', 'status', ...kind, ...(operatorNamespace === undefined ? [] : ['--operator-namespace', operatorNamespace])],
      { OPERATOR_NAMESPACE: '' },
    );
    const { code } = await waitForExit(p, 60_000);
    expect(code, p.output()).toBe(0);
    return p.output().trimEnd().split('\n');
  };

  it('shows a forged and an unsealed status as such, counts only sealed ones, and marks everything unverified without the key', async () => {
    const chart = path.join(dir, 'chart');
    await mkdir(path.join(chart, 'templates'), { recursive: true });
    await writeFile(path.join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: sealed\nversion: 0.1.0\n');
    await writeFile(
      path.join(chart, 'templates', 'settings.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  greeting: one\n',
    );
    const watches = path.join(dir, 'watches.yaml');
    await writeFile(watches, `- group: ${SEALED.group}\n  version: ${SEALED.version}\n  kind: ${SEALED.kind}\n  chart: ${chart}\n`);
    // The operator's namespace by --leader-election-namespace alone: no leader election.
    op = startOperatorProcess(
      ['run', '--watches-file', watches, '--helm-binary', inject('helmBin'), '--leader-election-namespace', opNs.name],
      { WATCH_NAMESPACE: ns.name },
    );
    for (const n of NAMES) await crs.create(ns.name, n, {});
    const deployed = await waitFor(
      'every CR deployed, Ready, with a sealed rollout status',
      async () => {
        const all = await crs.list(ns.name);
        const done = all.filter((c) => condition(c, 'Ready')?.status === 'True' && rolloutOf(c)?.seal !== undefined);
        return done.length === NAMES.length ? new Map(done.map((c) => [c.metadata.name, c])) : undefined;
      },
      { timeoutMs: 120_000 },
    );
    // Its key is the Secret of that namespace, not one of the process (flags.ts operatorNamespace).
    await core.readNamespacedSecret({ namespace: opNs.name, name: FINGERPRINT_KEY_SECRET });
    op.child.kill('SIGTERM');
    expect((await waitForExit(op, 60_000)).code, op.output()).toBe(0);

    const fleet = rolloutOf(deployed.get('honest'))?.fleetRevision ?? '';
    expect(fleet).not.toBe('');
    const row = (name: string, rest: string): string => `${ns.name}/${name}  ${rest}`;
    expect(await status(opNs.name)).toStrictEqual([
      `rollout of ${SEALED.kind}.${SEALED.group}: complete`,
      '3 CRs by fleet revision:',
      `  ${fleet}  chart 0.1.0: 3`,
      'NAMESPACE/NAME  CHART  FLEET  READY  ROLLOUT  SEAL',
      ...NAMES.map((n) => row(n, `0.1.0  ${fleet}  True  -  sealed`)),
    ]);

    // A tenant who may write the status subresource: a failed attempt on another fleet revision
    // under the old seal, and a status with its seal taken away.
    const at = new Date().toISOString();
    const claim = { fleetRevision: 'f0rged', attempt: { fleetRevision: 'f0rged', at, failure: 'forged: not Ready' } };
    await crs.patchStatus(ns.name, 'forged', { rollout: claim });
    await crs.patchStatus(ns.name, 'plain', { rollout: { seal: null } });

    expect(await status(opNs.name)).toStrictEqual([
      `rollout of ${SEALED.kind}.${SEALED.group}: complete`,
      '3 CRs by fleet revision:',
      `  ${fleet}  chart 0.1.0: 1`,
      '  not sealed by the operator (status not shown): 2',
      `forged: ${ns.name}/forged: status.rollout does not match its seal under the operator's key: written by someone else, not read by the rollout`,
      `unsealed: ${ns.name}/plain: status.rollout carries no seal of the operator's: written by someone else, not read by the rollout`,
      'NAMESPACE/NAME  CHART  FLEET  READY  ROLLOUT  SEAL',
      row('forged', '?  ?  ?  ?  forged'),
      row('honest', `0.1.0  ${fleet}  True  -  sealed`),
      row('plain', '?  ?  ?  ?  unsealed'),
    ]);

    // Without the key (no operator namespace, or a user who may not read it): every row a claim.
    expect(await status(undefined)).toStrictEqual([
      `rollout of ${SEALED.kind}.${SEALED.group}: complete`,
      "seals not checked (no --operator-namespace (or OPERATOR_NAMESPACE)): fleet revisions, failures and Ready below are what the CRs' status claims",
      '3 CRs by fleet revision:',
      ...[`  ${fleet}  chart 0.1.0: 2`, '  f0rged  chart 0.1.0: 1'].sort(),
      'NAMESPACE/NAME  CHART  FLEET  READY  ROLLOUT  SEAL',
      row('forged', '0.1.0  f0rged  True  -  unverified'),
      row('honest', `0.1.0  ${fleet}  True  -  unverified`),
      row('plain', `0.1.0  ${fleet}  True  -  unverified`),
    ]);
  }, 300_000);
});
