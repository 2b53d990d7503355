/**
 * The bundle's upgrade edge: which CSV the new one replaces (`spec.replaces`), from the bundle the
 * previous `make bundle` left in bundle/. operator-sdk leaves `replaces` to the author; here the
 * previous version is on disk, so `make bundle VERSION=0.0.2` after 0.0.1 writes
 * `replaces: <package>.v0.0.1`. Pure. See docs/adr/0057-chart-updates-and-bundle-upgrades.md.
 */
import semver from 'semver';
import { isPlainObject } from '../util/plain-object.js';

/** What the previous bundle's CSV says about itself. */
export interface PreviousCsv {
  readonly name: string;
  readonly version: string;
  readonly replaces?: string;
}

export interface UpgradeEdge {
  /** The CSV name to write as `spec.replaces`; undefined writes none. */
  readonly replaces?: string;
  readonly notes: readonly string[];
}

/** The previous bundle's CSV (parsed YAML), if it is one. */
export function previousCsv(doc: unknown): PreviousCsv | undefined {
  if (!isPlainObject(doc) || doc.kind !== 'ClusterServiceVersion' || !isPlainObject(doc.metadata) || !isPlainObject(doc.spec))
    return undefined;
  const { name } = doc.metadata;
  const { version, replaces } = doc.spec;
  if (typeof name !== 'string' || typeof version !== 'string') return undefined;
  return { name, version, ...(typeof replaces === 'string' ? { replaces } : {}) };
}

/**
 * The `replaces` for `packageName` at `version`: the base CSV's own (config/manifests) wins; else
 * the previous bundle's CSV when it is an older version of the same package; the same version
 * again keeps what that bundle replaced (regenerating is idempotent); a newer or foreign one
 * writes none and says why.
 */
export function upgradeEdge(o: { packageName: string; version: string; baseReplaces?: string; previous?: PreviousCsv }): UpgradeEdge {
  if (o.baseReplaces !== undefined)
    return { replaces: o.baseReplaces, notes: [`replaces ${o.baseReplaces}: from the base CSV in config/manifests`] };
  const p = o.previous;
  if (p === undefined) return { notes: [] };
  if (!p.name.startsWith(`${o.packageName}.v`))
    return { notes: [`no replaces: the bundle directory held ${p.name}, not a version of package ${o.packageName}`] };
  if (semver.valid(p.version) === null)
    return { notes: [`no replaces: the bundle directory held ${p.name}, whose version ${p.version} is not semantic`] };
  const order = semver.compare(p.version, o.version);
  if (order === 0)
    return p.replaces === undefined
      ? { notes: [] }
      : { replaces: p.replaces, notes: [`replaces ${p.replaces}: kept from the bundle of the same version`] };
  if (order > 0)
    return {
      notes: [
        `no replaces: the bundle directory held ${p.name}, newer than ${o.version} (set spec.replaces in the base CSV to choose one)`,
      ],
    };
  return { replaces: p.name, notes: [`replaces ${p.name}: the previous bundle (an upgrade edge for OLM)`] };
}
