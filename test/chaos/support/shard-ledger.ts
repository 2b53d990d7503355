/**
 * The proof of issue 46's sharding chaos scenario, read from the cluster alone: a timeline of the
 * shard group's Leases (polled throughout the run), and helm's release history with the share each
 * revision records (ADR 0086). Pure: the test feeds it what it recorded.
 *
 * - Ownership: a bucket's fence names a holder and an epoch (its `leaseTransitions`). An epoch lasts
 *   from the take (the record's acquireTime, the taker's clock) until the fence leaves it: a release
 *   (holder '', renewTime then) or the next take (its acquireTime).
 * - A revision made under `b<bucket>-e<epoch>-<digest>` must name an epoch the fence really had,
 *   with that holder, and (unless helm copied its labels: a rollback) be made while it lasted.
 * - Ownerless: from the moment a share's owner stopped (its release, or its peer Lease's last
 *   renewal when it died or froze) until another replica took the fence.
 */
import type { V1Secret } from '@kubernetes/client-node';
import { SHARD_RELEASE_LABEL } from '../../../src/operator/operator.js';
import type { LeaseRecord } from '../../../src/runtime/leader.js';
import { identityDigest } from '../../../src/runtime/shard-coordinator.js';
import { fenceBucket } from '../../../src/runtime/shard-view.js';
import { decodeRelease } from '../../integration/idioms/harness.js';

/** One record of one Lease of the group, when the poller first saw it. */
export interface LeaseSample {
  readonly at: number;
  readonly name: string;
  readonly role: 'peer' | 'fence' | 'balance';
  readonly record: LeaseRecord;
  /** The balance Lease's published CRs per bucket (docs/adr/0113). */
  readonly weights?: readonly number[];
}

export interface Epoch {
  readonly bucket: number;
  readonly epoch: number;
  readonly holder: string;
  /** The take (acquireTime). */
  readonly from: number;
  /** When the fence left this epoch; undefined while it still holds. */
  readonly to: number | undefined;
  /** Whether it ended by the holder's release (not by a takeover). */
  readonly released: boolean;
}

/** Each bucket's fence records in the order seen (a record seen twice counts once). */
function fenceRecords(group: string, samples: readonly LeaseSample[]): Map<number, LeaseRecord[]> {
  const by = new Map<number, LeaseRecord[]>();
  for (const s of [...samples].sort((a, b) => a.at - b.at)) {
    const b = s.role === 'fence' ? fenceBucket(group, s.name) : undefined;
    if (b === undefined) continue;
    by.set(b, [...(by.get(b) ?? []), s.record]);
  }
  return by;
}

/** Every bucket's epochs, oldest first. */
export function epochs(group: string, samples: readonly LeaseSample[]): Map<number, Epoch[]> {
  const out = new Map<number, Epoch[]>();
  for (const [bucket, records] of fenceRecords(group, samples)) {
    const list: Epoch[] = [];
    let open: { epoch: number; holder: string; from: number } | undefined;
    const close = (to: number, released: boolean): void => {
      if (open !== undefined) list.push({ bucket, ...open, to, released });
      open = undefined;
    };
    for (const r of records) {
      if (r.holderIdentity === '') close(r.renewTime, true);
      else if (open === undefined || open.epoch !== r.leaseTransitions || open.holder !== r.holderIdentity) {
        close(r.acquireTime, false);
        open = { epoch: r.leaseTransitions, holder: r.holderIdentity, from: r.acquireTime };
      }
    }
    if (open !== undefined) list.push({ bucket, ...open, to: undefined, released: false });
    out.set(bucket, list);
  }
  return out;
}

/** Each peer identity's renewal times (its peer Lease's renewTime values), sorted. */
export function renewals(samples: readonly LeaseSample[]): Map<string, number[]> {
  const by = new Map<string, Set<number>>();
  for (const s of samples) {
    if (s.role !== 'peer' || s.record.holderIdentity === '') continue;
    const set = by.get(s.record.holderIdentity) ?? new Set<number>();
    set.add(s.record.renewTime);
    by.set(s.record.holderIdentity, set);
  }
  return new Map([...by].map(([id, set]) => [id, [...set].sort((a, b) => a - b)]));
}

export interface Ownerless {
  readonly bucket: number;
  /** The owner that stopped ('' before the first take). */
  readonly from: string;
  readonly to: string | undefined;
  readonly start: number;
  readonly ms: number;
  readonly why: 'released' | 'owner stopped renewing';
}

/**
 * Every interval in which a bucket that had an owner had none: between an epoch's end (its release,
 * or the old holder's last renewal before a takeover) and the next take; and, at `end`, a bucket
 * released and not taken yet or held by a peer that stopped renewing. The first take of a bucket is
 * the group starting, not a share losing its owner.
 */
export function ownerless(group: string, samples: readonly LeaseSample[], end: number): Ownerless[] {
  const renewed = renewals(samples);
  const lastRenewal = (id: string, before: number): number => {
    const times = (renewed.get(id) ?? []).filter((t) => t <= before);
    return times.at(-1) ?? Number.NEGATIVE_INFINITY;
  };
  const out: Ownerless[] = [];
  for (const [bucket, list] of epochs(group, samples)) {
    for (const [i, e] of list.entries()) {
      const next = list[i + 1];
      const until = next?.from ?? end;
      const start = e.released ? (e.to ?? until) : lastRenewal(e.holder, until);
      if (next === undefined && !e.released) {
        // Still held at the end: ownerless only if its holder stopped renewing.
        const last = lastRenewal(e.holder, end);
        out.push({ bucket, from: e.holder, to: undefined, start: last, ms: end - last, why: 'owner stopped renewing' });
        continue;
      }
      out.push({
        bucket,
        from: e.holder,
        to: next?.holder,
        start,
        ms: until - start,
        why: e.released ? 'released' : 'owner stopped renewing',
      });
    }
  }
  return out;
}

/** One stored revision, decoded from its storage Secret. */
export interface StoredRevision {
  readonly namespace: string;
  readonly release: string;
  readonly revision: number;
  readonly status: string;
  readonly description: string;
  /** helm's info.last_deployed, epoch ms (set once the manifest is rendered, before anything is stored). */
  readonly deployedAt: number;
  /** The value the test varies (`.Values.rev`). */
  readonly rev: string | undefined;
  /** The shard release label (ADR 0086); undefined when absent. */
  readonly shard: string | undefined;
}

/** helm's stored release, the fields read here. */
interface StoredRelease {
  readonly name: string;
  readonly version: number;
  readonly info?: { readonly status?: string; readonly description?: string; readonly last_deployed?: string };
  readonly config?: { readonly rev?: unknown };
}

/** One storage Secret of helm's `secret` driver, decoded. */
export function storedRevision(namespace: string, secret: V1Secret): StoredRevision {
  const rel = decodeRelease(secret.data?.release ?? '') as unknown as StoredRelease;
  const info = rel.info ?? {};
  return {
    namespace,
    release: rel.name,
    revision: rel.version,
    status: info.status ?? '',
    description: info.description ?? '',
    deployedAt: Date.parse(info.last_deployed ?? ''),
    rev: typeof rel.config?.rev === 'string' ? rel.config.rev : undefined,
    shard: secret.metadata?.labels?.[SHARD_RELEASE_LABEL],
  };
}

export const isRollback = (r: StoredRevision): boolean => r.description.startsWith('Rollback to');

/** Parses `b<bucket>-e<epoch>-<digest>`. */
export function parseShard(label: string): { bucket: number; epoch: number; digest: string } | undefined {
  const m = /^b(\d+)-e(\d+)-([0-9a-f]{12})$/.exec(label);
  return m === null ? undefined : { bucket: Number(m[1]), epoch: Number(m[2]), digest: m[3] ?? '' };
}

/**
 * What is wrong with `r`'s share: no label, a label naming no epoch the fence had (or another
 * holder), or, for a revision helm made from the operator's own call (not a rollback, whose labels
 * helm copies from the revision it goes back to), a time outside that epoch.
 */
export function shareProblems(
  r: StoredRevision,
  bucketOf: (namespace: string) => number,
  byBucket: ReadonlyMap<number, Epoch[]>,
): string[] {
  const key = `${r.namespace}/${r.release} revision ${r.revision} (${r.description})`;
  if (r.shard === undefined) return [`${key}: no shard label`];
  const s = parseShard(r.shard);
  if (s === undefined) return [`${key}: shard label ${r.shard} names no ownership`];
  if (s.bucket !== bucketOf(r.namespace)) return [`${key}: shard label ${r.shard} names bucket ${s.bucket}, not ${bucketOf(r.namespace)}`];
  const e = (byBucket.get(s.bucket) ?? []).find((x) => x.epoch === s.epoch);
  if (e === undefined) return [`${key}: bucket ${s.bucket} never had epoch ${s.epoch} (${r.shard})`];
  if (identityDigest(e.holder) !== s.digest)
    return [`${key}: epoch ${s.epoch} of bucket ${s.bucket} was ${e.holder}'s, the label says ${s.digest}`];
  if (isRollback(r)) return [];
  if (r.deployedAt < e.from || (e.to !== undefined && r.deployedAt > e.to))
    return [
      `${key}: made at ${new Date(r.deployedAt).toISOString()} outside epoch ${s.epoch} of bucket ${s.bucket} (${new Date(e.from).toISOString()} - ${e.to === undefined ? 'now' : new Date(e.to).toISOString()})`,
    ];
  return [];
}

/**
 * A revision helm completed from the operator's install or upgrade. A rollback is helm's copy of an
 * older revision; a pending revision left by a killed helm is marked superseded by the rollback that
 * unlocks it, but keeps helm's "Preparing upgrade" / "Initial install underway" description.
 */
export const isApplied = (r: StoredRevision): boolean =>
  (r.status === 'deployed' || r.status === 'superseded') && /^(Install|Upgrade) complete$/.test(r.description);

/**
 * Exactly once: of the revisions that were applied ({@link isApplied}), no two carry the same value;
 * each value applied was once desired; the latest revision is deployed with the final one.
 */
export function historyProblems(key: string, revisions: readonly StoredRevision[], desired: readonly string[]): string[] {
  const problems: string[] = [];
  const seen = new Map<string, number[]>();
  for (const r of revisions.filter(isApplied)) seen.set(r.rev ?? '', [...(seen.get(r.rev ?? '') ?? []), r.revision]);
  for (const [rev, revs] of seen) {
    if (revs.length > 1) problems.push(`${key}: value ${rev} applied ${revs.length} times (revisions ${revs.join(', ')})`);
    if (!desired.includes(rev)) problems.push(`${key}: value ${rev} applied but never desired`);
  }
  return [...problems, ...latestProblems(key, revisions, desired.at(-1))];
}

/** The latest revision is deployed with the desired value. */
function latestProblems(key: string, revisions: readonly StoredRevision[], want: string | undefined): string[] {
  const latest = [...revisions].sort((a, b) => b.revision - a.revision)[0];
  if (latest === undefined) return [`${key}: no release`];
  if (latest.status !== 'deployed') return [`${key}: latest revision ${latest.revision} is ${latest.status}`];
  return latest.rev === want ? [] : [`${key}: deployed value ${String(latest.rev)}, desired ${String(want)}`];
}
