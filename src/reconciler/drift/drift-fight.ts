/**
 * A fight: another controller owns a field the chart also sets (vault's injector writing its CA
 * into a webhook's `caBundle`), so each repair is undone and repair would go on forever. Pure
 * decisions over records kept in the CR's status (so a restart remembers them): the same field of
 * the same object restored FIGHT_RESTORES times within FIGHT_WINDOW_MS, each time after the same
 * other field manager wrote it, and written by it again, is a fight; that field alone is then no
 * longer restored, nor taken by an upgrade (upgrade-fields.ts). Another deployed revision or spec
 * generation starts the counts over and keeps the fights; another set of ignore rules starts over.
 */
import type { DriftFightField, DriftFights } from '../status/status.js';

/** Restores of one field tolerated; the same manager's next write of it is a fight. */
export const FIGHT_RESTORES = 3;
/** Restores further apart than this are not one fight (a human's occasional edit). */
export const FIGHT_WINDOW_MS = 10 * 60_000;
/** Status holds at most this many fields; conflicts are kept first, then the latest. */
export const MAX_FIGHT_FIELDS = 16;

/** What the records belong to. */
export interface FightKey {
  readonly revision: number;
  readonly generation?: number | undefined;
  /** The fingerprint of the ignore rules in force (drift-ignore.ts). */
  readonly rules: string;
}

export interface FightObject {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/** A field about to be restored, and the field manager that wrote the value being replaced. */
export interface Rewrite {
  /** RFC 6901. */
  readonly path: string;
  readonly manager: string;
}

const sameObject = (f: DriftFightField, o: FightObject): boolean =>
  f.kind === o.kind && f.name === o.name && (f.namespace ?? '') === o.namespace;

/**
 * Pure: the records that hold for `key`. Another revision or generation starts the counts over but
 * keeps the fights found: the other manager still writes the field, and upgrades leave it to it
 * too (docs/adr/0072). Other ignore rules start over with none: the rules may settle it now.
 */
export function fightsFor(prior: DriftFights | undefined, key: FightKey): DriftFights {
  const same =
    prior !== undefined &&
    prior.revision === key.revision &&
    (prior.generation ?? undefined) === (key.generation ?? undefined) &&
    prior.rules === key.rules;
  if (same) return prior;
  const kept = prior !== undefined && prior.rules === key.rules ? prior.fields.filter((f) => f.conflict === true) : [];
  return {
    revision: key.revision,
    ...(key.generation === undefined ? {} : { generation: key.generation }),
    rules: key.rules,
    fields: kept,
  };
}

/** Pure: the fields of `object` that a fight took out of repair (pointers). */
export function heldPaths(fights: DriftFights, object: FightObject): string[] {
  return fights.fields.filter((f) => f.conflict === true && sameObject(f, object)).map((f) => f.path);
}

export interface Judgement {
  readonly fights: DriftFights;
  /** Pointers of `object` to leave as they are in this repair. */
  readonly hold: readonly string[];
  /** The fights this judgement found: reported once each. */
  readonly declared: readonly DriftFightField[];
}

/**
 * Pure: counts the restores `rewrites` of `object` are about to make. A field whose record is
 * of the same manager and within the window counts one more; one restored FIGHT_RESTORES times
 * already is a fight and is held; any other starts a record at 1. Records out of the window are
 * dropped, fights kept.
 */
export function judgeRewrites(fights: DriftFights, object: FightObject, rewrites: readonly Rewrite[], now: Date): Judgement {
  const time = now.getTime();
  const live = (f: DriftFightField): boolean => f.conflict === true || time - Date.parse(f.since) <= FIGHT_WINDOW_MS;
  let fields = fights.fields.filter(live);
  const hold: string[] = [];
  const declared: DriftFightField[] = [];
  for (const r of rewrites) {
    const existing = fields.find((f) => sameObject(f, object) && f.path === r.path);
    let next: DriftFightField;
    if (existing?.conflict === true) {
      hold.push(r.path);
      continue;
    } else if (existing !== undefined && existing.manager === r.manager) {
      next = existing.restores >= FIGHT_RESTORES ? { ...existing, conflict: true } : { ...existing, restores: existing.restores + 1 };
    } else {
      next = {
        kind: object.kind,
        ...(object.namespace === '' ? {} : { namespace: object.namespace }),
        name: object.name,
        path: r.path,
        manager: r.manager,
        restores: 1,
        since: now.toISOString(),
      };
    }
    if (next.conflict === true) {
      hold.push(r.path);
      declared.push(next);
    }
    fields = [...fields.filter((f) => f !== existing), next];
  }
  return { fights: { ...fights, fields: bounded(fields) }, hold, declared };
}

/**
 * Pure: `now` with the restores a judgement counted on `object`'s `paths` taken back (the object
 * changed before the repair's write, or the write changed nothing): those records return to what
 * they were `before` that judgement. A fight it declared stays, since it rests on restores made
 * earlier; records of other objects and fields are left as they are. Counting an attempt as a
 * restore would make a few conflicting writes in a row (a Deployment's status updates while it
 * rolls out) look like a fight.
 */
export function unrestored(now: DriftFights, before: DriftFights, object: FightObject, paths: readonly string[]): DriftFights {
  const counted = new Set(
    now.fields.filter((f) => f.conflict !== true && sameObject(f, object) && paths.includes(f.path)).map((f) => f.path),
  );
  const taken = (f: DriftFightField): boolean => sameObject(f, object) && counted.has(f.path);
  return { ...now, fields: bounded([...now.fields.filter((f) => !taken(f)), ...before.fields.filter(taken)]) };
}

function bounded(fields: readonly DriftFightField[]): DriftFightField[] {
  if (fields.length <= MAX_FIGHT_FIELDS) return [...fields];
  const conflicts = fields.filter((f) => f.conflict === true);
  const others = fields.filter((f) => f.conflict !== true).sort((a, b) => b.since.localeCompare(a.since));
  return [...conflicts, ...others].slice(0, MAX_FIGHT_FIELDS);
}

export function describeObject(o: FightObject): string {
  return `${o.kind} ${o.namespace === '' ? '' : `${o.namespace}/`}${o.name}`;
}

/**
 * Pure: what a fight's condition and event say: the object, the field, the other manager, and
 * the ignore rule that would settle it.
 */
export function conflictMessage(f: DriftFightField): string {
  const object = describeObject({ kind: f.kind, namespace: f.namespace ?? '', name: f.name });
  const rule = `{paths: [${f.path}], target: {kind: ${f.kind}, name: ${f.name}}}`;
  return (
    `${object}: field ${f.path} is written by field manager "${f.manager}" again after each repair ` +
    `(restored ${f.restores} times since ${f.since}); it is no longer restored, nor taken by upgrades, until the ignore rules change, ` +
    `and the rest of the release still is. To leave it to "${f.manager}" for good, add the rule ${rule} to the watch's driftIgnore ` +
    `(or to the CR's helm.sdk.operatorframework.io/drift-ignore annotation where the watch allows it)`
  );
}
