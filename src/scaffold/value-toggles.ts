/**
 * The switches of a chart's values.yaml: booleans that are `false` by default (`ingress.enabled`,
 * `autoscaling.enabled`, `metrics.serviceMonitor.enabled`). Turning one on is how a CR makes the
 * chart render a kind its defaults do not, which the operator's RBAC must then allow. Pure.
 */
import { isPlainObject } from '../util/plain-object.js';

/** A value's path as keys (a key may itself contain dots, so it is not a dotted string). */
export type ValuePath = readonly string[];

/** How a path reads in messages and in role.yaml: `ingress.enabled`, or `a."b.c"` for a key with dots. */
export const formatPath = (p: ValuePath): string => p.map((k) => (/^[A-Za-z0-9_-]+$/.test(k) ? k : JSON.stringify(k))).join('.');

/**
 * Every `false` boolean of `values`, in document order. Lists are not entered (an entry's switch
 * needs the entry, which the chart's defaults define), nor are more than `max` switches returned.
 */
export function falseToggles(values: unknown, max = Number.POSITIVE_INFINITY): ValuePath[] {
  const out: ValuePath[] = [];
  const walk = (v: unknown, at: ValuePath): void => {
    if (!isPlainObject(v)) return;
    for (const [k, child] of Object.entries(v)) {
      if (out.length >= max) return;
      if (child === false) out.push([...at, k]);
      else walk(child, [...at, k]);
    }
  };
  walk(values, []);
  return out;
}

/** Values that set each of `paths` to true (helm merges them over the chart's defaults). */
export function switchedOn(paths: readonly ValuePath[]): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const p of paths) {
    const last = p.at(-1);
    if (last === undefined) continue;
    let node = root;
    for (const k of p.slice(0, -1)) {
      const next = node[k];
      const child: Record<string, unknown> = isPlainObject(next) ? next : {};
      node[k] = child;
      node = child;
    }
    node[last] = true;
  }
  return root;
}
