/**
 * `helm-operator rollout status|pause|resume|undo --kind K [-n NS]`, in the spirit of `kubectl
 * rollout`: everything is read from the cluster (the CRs' status, helm's release records, the
 * pause Lease), so it works beside any replica of the operator, or none. `status` shows a CR's
 * rollout fields and Ready as fact only where the operator's seal vouches for them (docs/adr/0101),
 * checked as the gate checks it, with the key of the operator's namespace when the user may read it.
 */
import { qualifiedKind } from '../util/group-kind.js';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { Command, Option } from 'commander';
import { HelmClient } from '../helm/index.js';
import { ReleaseStorage } from '../helm/storage.js';
import { HttpMethod, type KubeConfig } from '../k8s/client-node.js';
import { loadKubeConfig } from '../k8s/kubeconfig.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';
import { describeError } from '../k8s/errors.js';
import { FINGERPRINT_KEY_SECRET, readFingerprintKey } from '../operator/fingerprint-key.js';
import { RolloutControl } from '../operator/rollout-control.js';
import {
  approveStepOf,
  ConditionType,
  describePlan,
  readStatus,
  sealVerdictOf,
  type HelmStatus,
  type SealVerdict,
} from '../reconciler/index.js';
import { makeLogger } from '../telemetry/logger.js';
import { whilePaused } from './undo-fence.js';

/** How long `undo` waits for the operator to confirm a CR's pause before it rolls back without (none running). */
const UNDO_ACK_TIMEOUT_MS = 30_000;

export const ROLLOUT_VERBS = ['status', 'pause', 'resume', 'undo'] as const;
export type RolloutVerb = (typeof ROLLOUT_VERBS)[number];

export interface RolloutFlags {
  readonly verb: RolloutVerb;
  /** `Kind` or `Kind.group`. */
  readonly kind: string;
  readonly namespace?: string;
  /** Where the operator keeps its pause Lease (its own namespace). */
  readonly operatorNamespace?: string;
  readonly kubeconfig?: string;
  readonly helmBinary: string;
}

/** Input the user fixes: printed alone. */
export class RolloutError extends Error {
  override readonly name = 'RolloutError';
}

export function defineRolloutCommand(action: (f: RolloutFlags) => Promise<void>): Command {
  type Raw = { kind: string; namespace?: string; operatorNamespace?: string; kubeconfig?: string; helmBinary: string };
  return new Command('rollout')
    .description("Show, pause, resume or undo the rollout of a new chart over a kind's CRs (docs/rollouts.md)")
    .addArgument(new Command().createArgument('<verb>', 'status, pause, resume or undo').choices(ROLLOUT_VERBS))
    .requiredOption('--kind <kind>', 'the watched kind, as Kind or Kind.group')
    .addOption(new Option('-n, --namespace <namespace>', 'only the CRs of this namespace (default: all)'))
    .addOption(
      new Option(
        '--operator-namespace <namespace>',
        "the operator's namespace, where the pause switch is (required by pause and resume) and the key that status checks the CRs' seals with",
      ).env('OPERATOR_NAMESPACE'),
    )
    .addOption(new Option('--kubeconfig <file>', 'path to the kubeconfig file to use for CLI requests'))
    .option('--helm-binary <path>', 'the helm executable undo rolls back with', process.env.HELM_BIN ?? 'helm')
    .action((verb: RolloutVerb, o: Raw) => action({ verb, ...o }));
}

export interface KindRef {
  readonly kind: string;
  readonly group: string;
  readonly version: string;
  readonly plural: string;
}

/**
 * What vouches for a CR's rollout fields and Ready: the operator's seal (a {@link SealVerdict}),
 * nothing to check (`none`: neither is there), or no key to check with (`unverified`).
 */
export type SealState = SealVerdict | 'none' | 'unverified';

interface Listed {
  readonly namespace: string;
  readonly name: string;
  readonly status: HelmStatus;
  readonly seal: SealState;
}

/** The key the seals are checked with, or why they cannot be. */
type SealCheck = { readonly key: Uint8Array } | { readonly unchecked: string };

export async function rolloutCommand(f: RolloutFlags): Promise<string> {
  const kc = loadKubeConfig(f.kubeconfig);
  const ref = await findKind(kc, f.kind);
  const control = f.operatorNamespace === undefined ? undefined : new RolloutControl(kc, f.operatorNamespace, ref);
  switch (f.verb) {
    case 'pause':
    case 'resume': {
      if (control === undefined)
        throw new RolloutError(`rollout ${f.verb} needs --operator-namespace (or OPERATOR_NAMESPACE): the switch is a Lease there`);
      await control.set(f.verb === 'pause');
      return `rollout of ${qualifiedKind(ref.kind, ref.group)} ${f.verb === 'pause' ? 'paused' : 'resumed'}`;
    }
    case 'status': {
      const check = await sealCheck(kc, f.operatorNamespace);
      return statusText(ref, await listCRs(kc, ref, f.namespace, check), await control?.paused(), unchecked(check));
    }
    case 'undo':
      return undo(kc, ref, f, await listCRs(kc, ref, f.namespace, { unchecked: 'not needed by undo' }));
  }
}

/** The CRD of `Kind` or `Kind.group` (also its lowercase singular or plural, as kubectl takes them). */
export async function findKind(kc: KubeConfig, spec: string): Promise<KindRef> {
  const dot = spec.indexOf('.');
  const kind = dot < 0 ? spec : spec.slice(0, dot);
  const group = dot < 0 ? undefined : spec.slice(dot + 1);
  const path = resourcePath({ group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' });
  const crds = ((await kc.makeApiClient(RawClient).request(HttpMethod.GET, path)) as { items: V1CustomResourceDefinition[] }).items;
  const named = (c: V1CustomResourceDefinition): boolean =>
    [c.spec.names.kind, c.spec.names.singular, c.spec.names.plural].includes(kind) || c.spec.names.kind.toLowerCase() === kind;
  const found = crds.filter((c) => named(c) && (group === undefined || c.spec.group === group));
  if (found.length === 0) throw new RolloutError(`no CustomResourceDefinition of kind ${spec} in the cluster`);
  if (found.length > 1)
    throw new RolloutError(`kind ${kind} is served by ${found.map((c) => c.spec.group).join(', ')}: say which with --kind ${kind}.<group>`);
  const crd = found[0] as V1CustomResourceDefinition;
  const version = crd.spec.versions.find((v) => v.storage)?.name ?? crd.spec.versions[0]?.name ?? '';
  return { kind: crd.spec.names.kind, group: crd.spec.group, version, plural: crd.spec.names.plural };
}

/**
 * The operator's key, read from its namespace; who may not read it (a tenant), or names no
 * namespace, sees every CR as `unverified`.
 */
async function sealCheck(kc: KubeConfig, operatorNamespace: string | undefined): Promise<SealCheck> {
  if (operatorNamespace === undefined || operatorNamespace === '') return { unchecked: 'no --operator-namespace (or OPERATOR_NAMESPACE)' };
  const secret = `Secret ${operatorNamespace}/${FINGERPRINT_KEY_SECRET}`;
  try {
    const key = await readFingerprintKey(kc, operatorNamespace);
    return key === undefined ? { unchecked: `no ${secret}` } : { key };
  } catch (err) {
    return { unchecked: `cannot read ${secret}: ${describeError(err)}` };
  }
}

const unchecked = (check: SealCheck): string | undefined => ('unchecked' in check ? check.unchecked : undefined);

async function listCRs(kc: KubeConfig, ref: KindRef, namespace: string | undefined, check: SealCheck): Promise<Listed[]> {
  const { group, version, plural } = ref;
  const path = resourcePath({ group, version, plural, ...(namespace === undefined ? {} : { namespace }) });
  const list = (await kc.makeApiClient(RawClient).request(HttpMethod.GET, path)) as {
    items: { metadata: { namespace?: string; name: string; uid?: string }; status?: unknown }[];
  };
  // Without the key nothing is vouched for: a status with rollout fields or Ready is only claimed.
  const sealOf = (uid: string, raw: unknown, status: HelmStatus): SealState => {
    if ('key' in check) return sealVerdictOf(check.key, uid, raw) ?? 'none';
    return status.rollout === undefined && readyOf(status) === '-' ? 'none' : 'unverified';
  };
  return list.items
    .map((i) => {
      const status = readStatus(i.status);
      return { namespace: i.metadata.namespace ?? '', name: i.metadata.name, status, seal: sealOf(i.metadata.uid ?? '', i.status, status) };
    })
    .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
}

const rolloutCondition = (s: HelmStatus): { reason: string; message: string } | undefined =>
  s.conditions.find((c) => c.type === ConditionType.Rollout);
const readyOf = (s: HelmStatus): string => s.conditions.find((c) => c.type === ConditionType.Ready)?.status ?? '-';

/** A CR whose deployed release is the revision it failed: what `undo` moves back. */
const failedOnDeployed = (s: HelmStatus): boolean =>
  s.rollout?.attempt?.failure !== undefined && s.rollout.fleetRevision === s.rollout.attempt.fleetRevision;

/**
 * A CR whose status the operator's seal does not vouch for: someone else wrote it (a tenant who
 * may write `<plural>/status`), so none of its status is shown or counted as fact.
 */
const untrusted = (c: Listed): boolean => c.seal === 'unsealed' || c.seal === 'forged';

/**
 * Pure: the report `rollout status` prints. `unchecked`: why the seals could not be checked
 * (every CR's seal is then `unverified`, and the report says its fields are the CRs' claims).
 */
export function statusText(
  ref: { kind: string; group: string },
  crs: readonly Listed[],
  paused: boolean | undefined,
  unchecked?: string,
): string {
  const trusted = crs.filter((c) => !untrusted(c));
  const failed = trusted.filter(
    (c) => c.status.rollout?.attempt?.failure !== undefined && rolloutCondition(c.status)?.reason === 'RolloutFailed',
  );
  const waiting = trusted.filter((c) => rolloutCondition(c.status) !== undefined && !failed.includes(c));
  const held = trusted.filter(heldPlan);
  const awaiting = held.length === 0 ? '' : `; ${held.length} plan${held.length === 1 ? ' awaits' : 's await'} approval`;
  const lines = [
    `rollout of ${qualifiedKind(ref.kind, ref.group)}: ${stateOf(trusted, failed.length, paused)}${awaiting}`,
    ...sealLines(crs, trusted, unchecked),
  ];
  for (const c of failed) lines.push(`failed: ${c.namespace}/${c.name}: ${c.status.rollout?.attempt?.failure ?? ''}`);
  for (const c of held) lines.push(...planLines(ref.kind, c));
  const first = waiting[0];
  if (first !== undefined)
    lines.push(`waiting: ${waiting.length} (first: ${first.namespace}/${first.name}: ${rolloutCondition(first.status)?.message ?? ''})`);
  lines.push('NAMESPACE/NAME  CHART  FLEET  READY  ROLLOUT  SEAL', ...crs.map(row));
  return lines.join('\n');
}

/** Whether the seals were checked, the CRs by fleet revision (only what a seal vouches for), and each CR no seal vouches for. */
function sealLines(crs: readonly Listed[], trusted: readonly Listed[], unchecked: string | undefined): string[] {
  const notSealed = crs.filter(untrusted);
  return [
    ...(unchecked === undefined
      ? []
      : [`seals not checked (${unchecked}): fleet revisions, failures and Ready below are what the CRs' status claims`]),
    `${crs.length} CRs by fleet revision:`,
    ...byRevision(trusted),
    ...(notSealed.length === 0 ? [] : [`  not sealed by the operator (status not shown): ${notSealed.length}`]),
    ...notSealed.map((c) => `${c.seal}: ${c.namespace}/${c.name}: ${SEAL_PROBLEM[c.seal as SealVerdict]}`),
  ];
}

const SEAL_PROBLEM: Record<SealVerdict, string> = {
  sealed: '',
  unsealed: "status.rollout carries no seal of the operator's: written by someone else, not read by the rollout",
  forged: "status.rollout does not match its seal under the operator's key: written by someone else, not read by the rollout",
};

function stateOf(crs: readonly Listed[], failed: number, paused: boolean | undefined): string {
  const reasons = new Set(crs.map((c) => rolloutCondition(c.status)?.reason));
  reasons.delete(undefined);
  if (paused === true || reasons.has('RolloutPaused')) return 'paused';
  if (reasons.has('RolloutHalted')) return `halted: ${failed} CR${failed === 1 ? '' : 's'} failed, beyond the failure budget`;
  return reasons.size > 0 ? 'in progress' : 'complete';
}

const chartOf = (c: Listed): string => c.status.deployedRelease?.chartVersion ?? '-';
const fleetOf = (c: Listed): string => c.status.rollout?.fleetRevision ?? '-';

function byRevision(crs: readonly Listed[]): string[] {
  const counts = new Map<string, number>();
  for (const c of crs) counts.set(`${fleetOf(c)}  chart ${chartOf(c)}`, (counts.get(`${fleetOf(c)}  chart ${chartOf(c)}`) ?? 0) + 1);
  return [...counts].sort().map(([key, n]) => `  ${key}: ${n}`);
}

/** A CR whose upgrade waits for the approval of its plan (docs/plans.md): under a rollout, the canary before it moves. */
const heldPlan = (c: Listed): boolean => c.status.plan?.state === 'AwaitingApproval';
const approvedCondition = (s: HelmStatus): { reason: string; message: string } | undefined =>
  s.conditions.find((c) => c.type === ConditionType.Approved);

/** The held plan of `c`: its digest, what it does and its risks, and how to read and approve it. */
function planLines(kind: string, c: Listed): string[] {
  const p = c.status.plan;
  if (p === undefined) return [];
  const target = `${kind.toLowerCase()}/${c.name} -n ${c.namespace}`;
  const approved = approvedCondition(c.status);
  const step = approveStepOf(approved?.message ?? '');
  return [
    `plan awaiting approval: ${c.namespace}/${c.name}: ${p.digest} (revision ${p.fromRevision} to chart ${p.chartVersion}: ${describePlan(p.counts, p.risks)})`,
    `  read it: helm-operator plan show ${target}`,
    ...(step === undefined ? [] : [`  approve: ${step}`]),
  ];
}

function row(c: Listed): string {
  if (untrusted(c)) return `${c.namespace}/${c.name}  ?  ?  ?  ?  ${c.seal}`;
  const reason = rolloutCondition(c.status)?.reason ?? (heldPlan(c) ? (approvedCondition(c.status)?.reason ?? '-') : '-');
  return `${c.namespace}/${c.name}  ${chartOf(c)}  ${fleetOf(c)}  ${readyOf(c.status)}  ${reason}  ${c.seal === 'none' ? '-' : c.seal}`;
}

/**
 * Rolls each CR still serving the revision it failed back to the one before it (helm rollback, as
 * the operator's own remediation does), with the CR paused meanwhile (undo-fence.ts); the operator
 * then holds it at the older revision, since it failed the fleet revision, until a newer chart.
 */
async function undo(kc: KubeConfig, ref: KindRef, f: RolloutFlags, crs: readonly Listed[]): Promise<string> {
  const helm = new HelmClient({
    binary: f.helmBinary,
    log: makeLogger({ level: 'silent' }),
    ...(f.kubeconfig === undefined ? {} : { kubeconfig: f.kubeconfig }),
  });
  const storage = new ReleaseStorage(kc);
  const lines: string[] = [];
  for (const c of crs.filter((x) => failedOnDeployed(x.status))) {
    const records = (await storage.records(c.namespace, c.name)).sort((a, b) => b.revision - a.revision);
    const before = records.slice(1).find((r) => r.status === 'superseded' || r.status === 'deployed');
    if (before === undefined) {
      lines.push(`${c.namespace}/${c.name}: no earlier revision to go back to`);
      continue;
    }
    const cr = { ...ref, namespace: c.namespace, name: c.name };
    const { confirmed } = await whilePaused(kc, cr, { ackTimeoutMs: UNDO_ACK_TIMEOUT_MS }, async (fence) => {
      await helm.rollback({ release: c.name, namespace: c.namespace, revision: before.revision });
      return fence;
    });
    const unconfirmed = confirmed ? '' : ` (no operator confirmed the pause within ${UNDO_ACK_TIMEOUT_MS / 1000}s: rolled back without it)`;
    lines.push(`${c.namespace}/${c.name}: rolled back to revision ${before.revision}${unconfirmed}`);
  }
  return lines.length === 0 ? 'nothing to undo: no CR serves a revision it failed' : lines.join('\n');
}
