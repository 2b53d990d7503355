/**
 * The plan of a pending upgrade (issue 47, docs/adr/0083): what helm's next revision would do to
 * each live object, as the API server answered dry-run server-side applies of it, and its digest,
 * which an approval names. Pure: the action that asks helm and the API server is
 * actions/plan-upgrade.ts; this module classifies their answers, bounds and redacts what is kept,
 * and digests it.
 */
import { createHash } from 'node:crypto';
import { hmacSha256 } from '../../util/hmac.js';
import { canonicalJson } from '../../util/canonical-json.js';
import { isPlainObject } from '../../util/plain-object.js';
import { changedFields, comparable, dottedPath } from '../drift/drift.js';

/** An object of the release as the plan names it. */
export interface PlanRef {
  readonly apiVersion: string;
  readonly kind: string;
  /** Empty for cluster-scoped objects. */
  readonly namespace: string;
  readonly name: string;
}

/** One changed field: its path as events name fields, and its values before and after (absent: not there). */
export interface PlanField {
  readonly path: string;
  readonly before?: unknown;
  readonly after?: unknown;
  /** Where a side is not kept as it is (hidden, partly redacted, cut): the seal of both sides as they are ({@link Sealer}). */
  readonly sealed?: string;
}

export interface PlanConflict {
  /** As the API server names it (`.spec.replicas`). */
  readonly field: string;
  readonly manager: string;
}

export type PlanObject = PlanRef &
  (
    | { readonly action: 'create'; readonly object?: unknown; readonly sealed?: string }
    | {
        readonly action: 'change';
        readonly fields: readonly PlanField[];
        readonly conflicts?: readonly PlanConflict[];
        readonly volumeTemplates?: true;
      }
    | { readonly action: 'delete'; readonly kept?: true }
    /** The API server refuses the apply (an immutable field: it would have to be recreated). */
    | {
        readonly action: 'refuse';
        readonly message: string;
        readonly recreate: boolean;
        readonly conflicts?: readonly PlanConflict[];
        readonly sealed?: string;
      }
  );

export interface PlanHook {
  readonly kind: string;
  readonly name: string;
  /** `pre-upgrade`, `post-upgrade`, ... as the chart's `helm.sh/hook` annotation lists them. */
  readonly events: readonly string[];
}

export interface PlanCrd {
  readonly name: string;
  readonly change: 'create' | 'replace' | 'unsafe';
  /** The upgrade-safety findings of an unsafe change (crd-upgrade-safety.ts). */
  readonly findings?: readonly string[];
}

/** What `risky` approval holds for (issue 47). */
export const RISKS = ['delete', 'recreate', 'conflict', 'crd', 'volumeTemplates'] as const;
export type Risk = (typeof RISKS)[number];

/** The plan as digested, stored and shown. */
export interface PlanBody {
  readonly release: string;
  readonly namespace: string;
  /** The revision the upgrade starts from. */
  readonly fromRevision: number;
  readonly chart: { readonly name: string; readonly version: string };
  /** Only what changes: unchanged objects are left out. */
  readonly objects: readonly PlanObject[];
  readonly hooks: readonly PlanHook[];
  readonly crds: readonly PlanCrd[];
}

export interface UpgradePlan extends PlanBody {
  /** `sha256:<hex>` over the canonical JSON of the body. */
  readonly digest: string;
}

export interface PlanCounts {
  readonly create: number;
  readonly change: number;
  readonly delete: number;
  readonly refuse: number;
  readonly conflicts: number;
  readonly hooks: number;
  readonly crds: number;
}

/** The dry-run apply's answer for one rendered object. */
export type DryRunAnswer =
  | { readonly kind: 'applied'; readonly after: unknown; readonly conflicts: readonly PlanConflict[] }
  | { readonly kind: 'refused'; readonly message: string; readonly conflicts: readonly PlanConflict[] };

/** The longest value kept per field: a plan is bounded like the ConfigMap that holds it. */
export const MAX_VALUE_CHARS = 2_000;
/** The most fields kept per object; the rest are counted. */
export const MAX_FIELDS = 200;
/** What a value of a Secret's data is shown as: never its content. */
export const SECRET_VALUE = '(secret value)';

const HOOK_ANNOTATION = 'helm.sh/hook';
const RESOURCE_POLICY_ANNOTATION = 'helm.sh/resource-policy';

/** Pure: the API server's refusal of an immutable field (`field is immutable`, a StatefulSet's forbidden spec update). */
export function isImmutableRefusal(message: string): boolean {
  return /field is immutable|updates to statefulset spec for fields other than|may not change once set|is immutable/i.test(message);
}

/** Pure: a rendered document's hook events; undefined for an object of the release itself. Test hooks are not upgrade hooks. */
export function hookEvents(annotations: Readonly<Record<string, string>>): string[] | undefined {
  const raw = annotations[HOOK_ANNOTATION];
  if (raw === undefined) return undefined;
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '' && s !== 'test' && s !== 'test-success');
}

/** Pure: the hooks an upgrade runs (those with a `pre-upgrade` or `post-upgrade` event), or an install (`pre-install`, `post-install`). */
export function upgradeHooks(hooks: readonly PlanHook[], verb: 'upgrade' | 'install' = 'upgrade'): PlanHook[] {
  return hooks.filter((h) => h.events.some((e) => e === `pre-${verb}` || e === `post-${verb}`));
}

export const refKey = (r: PlanRef): string => `${groupOf(r.apiVersion)}|${r.kind}|${r.namespace}|${r.name}`;
const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : '');

/** Pure: a value as the plan keeps it: redacted, bounded, never a Secret's data. */
function keptValue(value: unknown, secret: boolean, redact: <T>(v: T) => T): unknown {
  if (value === undefined) return undefined;
  if (secret) return SECRET_VALUE;
  const redacted = redact(value);
  const json = JSON.stringify(redacted);
  return json.length > MAX_VALUE_CHARS ? `${json.slice(0, MAX_VALUE_CHARS)}… (${json.length} characters)` : redacted;
}

/** Whether redaction changes `value`: it holds a sensitive string. */
const redacts = (value: unknown, redact: <T>(v: T) => T): boolean =>
  value !== undefined && JSON.stringify(redact(value)) !== JSON.stringify(value);

const isSecret = (r: PlanRef): boolean => r.kind === 'Secret' && groupOf(r.apiVersion) === '';
/** A field under a Secret's data, whose values a plan never holds. */
const secretField = (r: PlanRef, path: readonly (string | number)[]): boolean =>
  isSecret(r) && (path[0] === 'data' || path[0] === 'stringData');

function valueAt(obj: unknown, path: readonly (string | number)[]): unknown {
  let node = obj;
  for (const key of path) {
    if (Array.isArray(node) && typeof key === 'number') node = node[key];
    else if (isPlainObject(node) && typeof key === 'string') node = node[key];
    else return undefined;
  }
  return node;
}

/**
 * Seals what a plan does not show as it is (a value hidden or partly redacted, a value cut to
 * length): the digest is taken over the plan as kept, so without a seal two plans that differ only
 * in a hidden value would have one digest, and an approval of one would let the other through.
 * Keyed (an HMAC under a key the plan's readers do not have, {@link planSealer}): a plain hash of
 * a short secret could be tested against guesses offline by anyone who reads the plan. Not salted
 * per plan: the gate plans again at apply time and goes ahead only on the same digest, so equal
 * plans must seal alike.
 */
export type Sealer = (raw: unknown) => string;

/** Pure: the {@link Sealer} under `key` (the operator's fingerprint key), through a key of its own for this use. */
export function planSealer(key: Uint8Array): Sealer {
  const sealKey = hmacSha256(key).update('helm-operator upgrade-plan seal v1').digest();
  return (raw) =>
    `hmac-sha256:${hmacSha256(sealKey)
      .update(canonicalJson(raw ?? null))
      .digest('hex')
      .slice(0, 32)}`;
}

/** How classifyObject keeps values. */
export interface KeepOptions {
  /** Redacts the desired state's secrets (the reconcile's Redactor, deep). */
  readonly redact: <T>(v: T) => T;
  /**
   * Redacts the secrets of the deployed revision (its values from Secrets and sensitive paths,
   * which the desired state may no longer take from a Secret): a field whose live value holds one
   * shows its before side hidden, whatever it becomes.
   */
  readonly deployed?: <T>(v: T) => T;
  /** Seals what is not kept as it is; without it nothing is sealed (see {@link Sealer}). */
  readonly seal?: Sealer;
}

/** Pure: whether the plan seals anything (it hides or cuts a value). */
export function planSeals(plan: PlanBody): boolean {
  return plan.objects.some((o) => 'sealed' in o || ('fields' in o && o.fields.some((f) => f.sealed !== undefined)));
}

const differs = (kept: unknown, raw: unknown): boolean => JSON.stringify(kept) !== JSON.stringify(raw);

/**
 * Pure: one rendered object's entry, from the live object (undefined: none) and the API server's
 * answer to the dry-run apply; undefined when nothing would change. `keep` hides the desired
 * state's secrets (a redact function alone: nothing else hidden, nothing sealed), its `deployed`
 * the deployed revision's.
 */
export function classifyObject(
  ref: PlanRef,
  live: unknown,
  answer: DryRunAnswer,
  keep: KeepOptions | (<T>(v: T) => T),
): PlanObject | undefined {
  const how: Partial<KeepOptions> = typeof keep === 'function' ? { redact: keep } : keep;
  const redact = how.redact ?? (<T>(v: T): T => v);
  const old = how.deployed ?? (<T>(v: T): T => v);
  const both = <T>(v: T): T => old(redact(v));
  const sealed = (kept: unknown, raw: unknown, at: unknown): { sealed?: string } =>
    how.seal !== undefined && differs(kept, raw) ? { sealed: how.seal({ at, raw }) } : {};
  const conflicts = answer.conflicts.length === 0 ? {} : { conflicts: answer.conflicts };
  if (answer.kind === 'refused') {
    const message = both(answer.message);
    return {
      ...ref,
      action: 'refuse',
      message,
      recreate: isImmutableRefusal(answer.message),
      ...conflicts,
      ...sealed(message, answer.message, [refKey(ref), 'refused']),
    };
  }
  if (live === undefined) {
    // What the apply would make, without what the API server made up for the dry run (a new uid
    // and creation time each time): the same creation must digest alike, or its approval is stale.
    const content = comparable(answer.after);
    const object = isSecret(ref) ? SECRET_VALUE : keptValue(content, false, redact);
    return { ...ref, action: 'create', object, ...sealed(object, content, [refKey(ref), 'create']) };
  }
  const paths = changedFields(live, answer.after);
  if (paths.length === 0) return undefined;
  const fields = paths.slice(0, MAX_FIELDS).map((p): PlanField => {
    const secret = secretField(ref, p);
    const [was, will] = [valueAt(live, p), valueAt(answer.after, p)];
    // A field with a sensitive value on one side held one on the other too, which the redactor
    // may not know (the Secret a CR takes it from now holds the new value): both sides hidden.
    const hidden = !secret && (redacts(was, redact) || redacts(will, redact));
    // A value the deployed revision took from a Secret, which the desired state no longer does
    // (moved to a ConfigMap or the spec): the old secret is still live, so its side stays hidden.
    const wasSecret = !secret && redacts(was, old);
    const before = (hidden || wasSecret) && was !== undefined ? SECRET_VALUE : keptValue(was, secret, both);
    const after = hidden && will !== undefined ? SECRET_VALUE : keptValue(will, secret, redact);
    const path = dottedPath(p);
    const kept = { before, after };
    return {
      path,
      ...(before === undefined ? {} : { before }),
      ...(after === undefined ? {} : { after }),
      ...sealed(kept, { before: was, after: will }, [refKey(ref), path]),
    };
  });
  if (paths.length > MAX_FIELDS) {
    // Not listed, but bound all the same: the approval of this plan is of these changes too.
    const rest = paths.slice(MAX_FIELDS).map((p) => [dottedPath(p), valueAt(live, p), valueAt(answer.after, p)]);
    fields.push({ path: `(${paths.length - MAX_FIELDS} more fields)`, ...sealed(undefined, rest, [refKey(ref), 'more']) });
  }
  const volumeTemplates = paths.some((p) => p[0] === 'spec' && p[1] === 'volumeClaimTemplates') ? { volumeTemplates: true as const } : {};
  return { ...ref, action: 'change', fields, ...conflicts, ...volumeTemplates };
}

/**
 * Pure: the objects of the deployed revision the next one no longer renders: helm deletes them,
 * but for those annotated `helm.sh/resource-policy: keep`, which it leaves in place.
 */
export function deletedObjects(
  deployed: readonly (PlanRef & { readonly annotations: Readonly<Record<string, string>> })[],
  rendered: readonly PlanRef[],
): PlanObject[] {
  const next = new Set(rendered.map(refKey));
  return deployed
    .filter((d) => !next.has(refKey(d)))
    .map((d): PlanObject => {
      const ref = { apiVersion: d.apiVersion, kind: d.kind, namespace: d.namespace, name: d.name };
      return d.annotations[RESOURCE_POLICY_ANNOTATION] === 'keep' ? { ...ref, action: 'delete', kept: true } : { ...ref, action: 'delete' };
    });
}

const order = (a: PlanRef, b: PlanRef): number => refKey(a).localeCompare(refKey(b));

/** Pure: the plan with its digest; objects, hooks and CRDs in a fixed order, so equal plans digest alike. */
export function sealPlan(body: PlanBody): UpgradePlan {
  const sorted: PlanBody = {
    ...body,
    objects: [...body.objects].sort(order),
    hooks: [...body.hooks].sort((a, b) => `${a.kind}/${a.name}`.localeCompare(`${b.kind}/${b.name}`)),
    crds: [...body.crds].sort((a, b) => a.name.localeCompare(b.name)),
  };
  return { ...sorted, digest: planDigest(sorted) };
}

/** Pure: `sha256:<hex>` of the canonical JSON of the plan's body (its digest field left out). */
export function planDigest(body: PlanBody): string {
  const { digest: _digest, ...rest } = body as PlanBody & { digest?: string };
  return `sha256:${createHash('sha256').update(canonicalJson(rest)).digest('hex')}`;
}

export function planCounts(plan: PlanBody): PlanCounts {
  const count = (action: PlanObject['action']): number => plan.objects.filter((o) => o.action === action).length;
  const conflicts = plan.objects.reduce((n, o) => n + ('conflicts' in o ? (o.conflicts?.length ?? 0) : 0), 0);
  return {
    create: count('create'),
    change: count('change'),
    delete: count('delete'),
    refuse: count('refuse'),
    conflicts,
    hooks: plan.hooks.length,
    crds: plan.crds.length,
  };
}

function objectRisks(o: PlanObject): Risk[] {
  const conflict: Risk[] = 'conflicts' in o && (o.conflicts?.length ?? 0) > 0 ? ['conflict'] : [];
  switch (o.action) {
    case 'delete':
      return o.kept === true ? [] : ['delete'];
    case 'refuse':
      return [...(o.recreate ? (['recreate'] as const) : []), ...conflict];
    case 'change':
      return [...(o.volumeTemplates === true ? (['volumeTemplates'] as const) : []), ...conflict];
    case 'create':
      return [];
  }
}

/** Pure: the risks `approval: risky` holds a plan for. */
export function planRisks(plan: PlanBody): Risk[] {
  const risks = new Set<Risk>(plan.objects.flatMap(objectRisks));
  if (plan.crds.length > 0) risks.add('crd');
  return RISKS.filter((r) => risks.has(r));
}

/** Pure: one line for conditions and events: `2 to create, 1 to change, 1 to delete; risky: delete`. */
export function describePlan(c: PlanCounts, risks: readonly Risk[]): string {
  const parts = [
    [c.create, 'to create'],
    [c.change, 'to change'],
    [c.delete, 'to delete'],
    [c.refuse, 'refused by the API server'],
    [c.conflicts, 'field conflicts'],
    [c.hooks, 'hooks'],
    [c.crds, 'CRD changes'],
  ] as const;
  const shown = parts.filter(([n]) => n !== 0).map(([n, what]) => `${n} ${what}`);
  return `${shown.length === 0 ? 'no object changes' : shown.join(', ')}${risks.length === 0 ? '' : `; risky: ${risks.join(', ')}`}`;
}
