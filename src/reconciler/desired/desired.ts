/**
 * The desired state of a CR's release: the chart values (Secrets and ConfigMaps it references,
 * under its spec, under the watch's overrides) and the fingerprint that says whether the deployed
 * revision already has them. Input no retry can fix comes back as a `refused` outcome.
 */
import type { Watch } from '../../config/watch.js';
import type { CustomResource } from '../../k8s/custom-resources.js';
import { isStatus } from '../../k8s/errors.js';
import type { Desired } from '../core/action-context.js';
import { Reason } from '../status/conditions.js';
import { valuesProblem } from '../decide/limits.js';
import type { Outcome } from '../core/outcome.js';
import { valuesAt, type Redactor } from '../status/redaction.js';
import { releaseNameProblem } from '../decide/release-name.js';
import { RELEASE_LABELS } from '../decide/state.js';
import {
  composeReferencedValues,
  deepMerge,
  type ComposedValues,
  notOptedIn,
  parseValuesFrom,
  secretStrings,
  secretValuePaths,
  VALUES_FROM_ANNOTATION,
  VALUES_SOURCE_LABEL,
  type ValuesReference,
  type ValuesSourcePort,
} from './values-from.js';
import { isPlainObject } from '../../util/plain-object.js';
import { fleetRevision, ownValuesDigest } from './fleet.js';
import { fingerprint, keyedFingerprint, mergeValues, type Values } from './values.js';
import { secretPaths, secretPathsLabels } from './secret-paths.js';
import { planSealer } from '../plan/upgrade-plan.js';
import type { ValuePath } from '../../config/value-path.js';

export type Refusal = Extract<Outcome, { kind: 'refused' }>;

export interface DesiredInput {
  readonly cr: CustomResource;
  readonly namespace: string;
  readonly name: string;
  readonly watch: Pick<Watch, 'chart' | 'overrideValues' | 'sensitiveValues'>;
  readonly ownerKind: string;
  readonly helmMajor: number;
  /** Who reads referenced Secrets and ConfigMaps: the watch's ServiceAccount, else the operator. */
  readonly identity: string | undefined;
  readonly valuesSources: ValuesSourcePort | undefined;
  /** Learns the strings that came from Secrets, to hide them wherever this reconcile writes text. */
  readonly redact: Redactor;
  /** The operator's key for the fingerprint status shows (see keyedFingerprint). */
  readonly fingerprintKey: Uint8Array;
}

/** Input that no retry can fix; undefined when the CR can be reconciled. */
export function invalidInput(cr: CustomResource, name: string): Refusal | undefined {
  const nameProblem = releaseNameProblem(name);
  if (nameProblem !== undefined) return refusal(Reason.InvalidReleaseName, nameProblem, { retry: false, event: false });
  if (cr.spec !== undefined && cr.spec !== null && !isPlainObject(cr.spec)) {
    return refusal(Reason.InvalidSpec, 'spec must be an object: its fields are the chart values', { retry: false, event: false });
  }
  // Before the values are merged, cloned or hashed, all of which recurse: an edit alone can fix it.
  const specProblem = valuesProblem(cr.spec);
  if (specProblem !== undefined) return refusal(Reason.InvalidSpec, `spec ${specProblem}`, { retry: false, event: true });
  return undefined;
}

export async function desiredState(d: DesiredInput): Promise<Desired | Refusal> {
  const referenced = await referencedValues(d);
  if ('kind' in referenced) return referenced;
  const spec = isPlainObject(d.cr.spec) ? d.cr.spec : {};
  const own = deepMerge(referenced.values, spec);
  const values = mergeValues(own, d.watch.overrideValues);
  d.redact.add(valuesAt(values, d.watch.sensitiveValues));
  const fp = fingerprint({ chartDigest: d.watch.chart.digest, values, helmMajor: d.helmMajor });
  const fleet = fleetRevision(d.fingerprintKey, {
    chartDigest: d.watch.chart.digest,
    overrideValues: d.watch.overrideValues,
    helmMajor: d.helmMajor,
  });
  const ownDigest = ownValuesDigest(own);
  const labels = {
    [RELEASE_LABELS.fingerprint]: fp,
    [RELEASE_LABELS.ownerKind]: d.ownerKind,
    [RELEASE_LABELS.fleetRevision]: fleet,
    [RELEASE_LABELS.ownValues]: ownDigest,
    // The revision's own record of which values were secret, for the plans made from it.
    ...secretPathsLabels(secretPaths(referenced.secretPaths, d.watch.sensitiveValues)),
  };
  return {
    values,
    fingerprint: fp,
    keyedFingerprint: keyedFingerprint(d.fingerprintKey, fp),
    fleetRevision: fleet,
    ownDigest,
    labels,
    seal: planSealer(d.fingerprintKey),
  };
}

/**
 * The values the CR takes from Secrets and ConfigMaps, merged under its spec. A reference that
 * cannot be read blocks helm (a release without its secrets would be wrong) and is retried;
 * messages name objects and keys, never what they hold.
 */
async function referencedValues(d: DesiredInput): Promise<{ values: Values; secretPaths: ValuePath[] } | Refusal> {
  const parsed = parseValuesFrom(d.cr.metadata.annotations?.[VALUES_FROM_ANNOTATION]);
  if ('problem' in parsed) return refusal(Reason.InvalidValuesReference, parsed.problem, { retry: false, event: false });
  if (parsed.refs.length === 0) return { values: {}, secretPaths: [] };
  const sources = d.valuesSources;
  if (sources === undefined) throw new Error('values from Secrets and ConfigMaps are not available in this operator');
  // Under a ServiceAccount, read as it: the operator's own access must not widen the CR author's.
  const read = await Promise.all(
    parsed.refs.map((r) => sources.read(r.kind, d.namespace, r.name, d.identity).catch((err: unknown) => forbidden(d, r, err))),
  );
  const unreadable = read.find((r): r is Refusal => r !== undefined && 'kind' in r);
  if (unreadable !== undefined) return unreadable;
  const sourced = read as Exclude<(typeof read)[number], Refusal>[];
  const data = sourced.map((r) => r?.data);
  d.redact.add(secretStrings(parsed.refs, data));
  const refused = d.identity === undefined ? [] : notOptedIn(parsed.refs, sourced);
  const composed = composeReferencedValues(parsed.refs, data);
  if (refused.length > 0)
    return refusal(Reason.ValuesReferenceNotAllowed, notAllowedMessage(d.namespace, refused), { retry: true, event: true });
  return composedRefusal(d.namespace, composed) ?? { values: composed.values, secretPaths: secretValuePaths(parsed.refs, data) };
}

/** Referenced values that cannot be used yet: retried, since the objects they come from may change. */
function composedRefusal(namespace: string, composed: ComposedValues): Refusal | undefined {
  if (composed.missing.length > 0) {
    return refusal(Reason.ValuesReferenceNotFound, `values reference not found in namespace ${namespace}: ${composed.missing.join(', ')}`, {
      retry: true,
      event: true,
    });
  }
  if (composed.oversized.length > 0)
    return refusal(Reason.InvalidValuesReference, `values reference beyond the limits: ${composed.oversized.join(', ')}`, {
      retry: true,
      event: true,
    });
  if (composed.invalid.length > 0) {
    const message = `values reference is not a YAML map of values: ${composed.invalid.join(', ')} (set targetPath to use it as one value)`;
    return refusal(Reason.InvalidValuesReference, message, { retry: true, event: true });
  }
  return undefined;
}

/** A reference the ServiceAccount may not read: refused like one that did not opt in, naming who. */
function forbidden(d: DesiredInput, ref: ValuesReference, err: unknown): Refusal {
  if (!isStatus(err, 403)) throw err;
  const resource = ref.kind === 'Secret' ? 'secrets' : 'configmaps';
  const message = `${d.identity ?? 'the operator'} may not read ${ref.kind} ${ref.name} of namespace ${d.namespace}: grant it get on ${resource} there, or reference another object`;
  return refusal(Reason.ValuesReferenceNotAllowed, message, { retry: true, event: true });
}

function notAllowedMessage(namespace: string, refused: readonly string[]): string {
  return (
    `values reference not allowed: ${refused.join(', ')} of namespace ${namespace} not labelled ${VALUES_SOURCE_LABEL}="true". ` +
    'This watch acts as a ServiceAccount, so only objects that opt in can be referenced: label them if their content may go into releases of this namespace'
  );
}

function refusal(reason: Reason, message: string, how: { retry: boolean; event: boolean }): Refusal {
  return { kind: 'refused', reason, message, ...how, stage: 'input' };
}
