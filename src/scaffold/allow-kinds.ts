/**
 * The `allowKinds` that `create api` writes into a new watch: the kinds the chart renders, as the
 * helm gateway names them (`Kind` for the core group, `Kind.group` otherwise). Written by default so
 * that a CR author's `extraDeploy`-style value cannot make helm create a kind the chart never
 * renders (docs/adr/0040, 0045); the author edits the list like any other key.
 */
import { qualifiedKindOf } from '../util/group-kind.js';
import type { RenderedObject } from './ports.js';

export interface AllowKinds {
  /** Sorted, each once. */
  readonly kinds: readonly string[];
  /** Kinds only other values render, per switch (e.g. `ingress.enabled=true`), not in `kinds`. */
  readonly optional: readonly { readonly when: string; readonly kinds: readonly string[] }[];
}

/** As the gateway names the kind it checks (k8s/gateway/policy.ts): the same function. */
const kindsOf = (objects: readonly RenderedObject[]): string[] =>
  [...new Set(objects.map((o) => qualifiedKindOf(o.apiVersion, o.kind)))].sort();

/**
 * `granted`: the optional kinds are allowed too (`--rbac=all-values`, which grants their RBAC);
 * otherwise they are listed apart, for the watch's comments, as the RBAC rules are.
 */
export function allowKinds(
  objects: readonly RenderedObject[],
  optional: readonly { readonly when: string; readonly objects: readonly RenderedObject[] }[],
  granted: boolean,
): AllowKinds {
  const base = kindsOf(granted ? [...objects, ...optional.flatMap((g) => g.objects)] : objects);
  const extra = granted
    ? []
    : optional.map((g) => ({ when: g.when, kinds: kindsOf(g.objects).filter((k) => !base.includes(k)) })).filter((g) => g.kinds.length > 0);
  return { kinds: base, optional: extra };
}
