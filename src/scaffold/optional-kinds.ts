/**
 * Kinds a chart renders only with other values than its defaults: what a CR can switch on
 * (`ingress.enabled: true` → an Ingress), which the operator's RBAC must allow before a CR asks
 * for it. Found by rendering with the chart's `false` booleans switched on: all at once (one render
 * when nothing new appears), then one at a time to say which value enables which kind. A render
 * that fails (a switch that needs other values) is noted, never fatal.
 */
import { groupOf } from '../util/group-kind.js';
import type { RenderedObject } from './rbac.js';
import { falseToggles, formatPath, switchedOn, type ValuePath } from './value-toggles.js';

/** Renders the chart with these values over its defaults; rejects when helm cannot. */
export type Render = (values: Record<string, unknown>) => Promise<RenderedObject[]>;

export interface OptionalGroup {
  /** The values that render these objects, e.g. `ingress.enabled=true` (ORed when several do). */
  readonly when: string;
  readonly objects: readonly RenderedObject[];
}

export interface OptionalKinds {
  /** Each new kind in exactly one group: the switches that each render it alone, or all together. */
  readonly groups: readonly OptionalGroup[];
  /** Switches whose render alone failed: what they turn on is not known. */
  readonly unrenderable: readonly string[];
  /** How many switches were tried (capped at {@link MAX_TOGGLES}), and how many values.yaml has. */
  readonly tried: number;
  readonly found: number;
}

/** A chart with more switches than this is explored on its first ones only (each is a helm render). */
export const MAX_TOGGLES = 64;
const CONCURRENCY = 4;

const kindKey = (o: RenderedObject): string => `${groupOf(o.apiVersion)}\0${o.kind}`;

async function tryRender(render: Render, values: Record<string, unknown>): Promise<RenderedObject[] | undefined> {
  try {
    return await render(values);
  } catch {
    return undefined;
  }
}

/** Renders each switch alone, a few at a time. */
async function eachAlone(render: Render, toggles: readonly ValuePath[]): Promise<(RenderedObject[] | undefined)[]> {
  const out: (RenderedObject[] | undefined)[] = [];
  for (let i = 0; i < toggles.length; i += CONCURRENCY) {
    out.push(...(await Promise.all(toggles.slice(i, i + CONCURRENCY).map((t) => tryRender(render, switchedOn([t]))))));
  }
  return out;
}

/** Pure: objects of kinds not in `base`, grouped by the set of switches whose render has that kind. */
export function groupNewKinds(
  base: readonly RenderedObject[],
  alone: readonly { readonly toggle: string; readonly objects: readonly RenderedObject[] | undefined }[],
  together: readonly RenderedObject[] | undefined,
  allToggles: readonly string[],
): OptionalGroup[] {
  const known = new Set(base.map(kindKey));
  const byKind = new Map<string, { toggles: string[]; objects: RenderedObject[] }>();
  const note = (o: RenderedObject, toggle: string | undefined): void => {
    const k = kindKey(o);
    if (known.has(k)) return;
    const entry = byKind.get(k) ?? { toggles: [], objects: [] };
    byKind.set(k, entry);
    if (toggle !== undefined && !entry.toggles.includes(toggle)) entry.toggles.push(toggle);
    if (!entry.objects.some((x) => JSON.stringify(x) === JSON.stringify(o))) entry.objects.push(o);
  };
  for (const a of alone) for (const o of a.objects ?? []) note(o, a.toggle);
  for (const o of together ?? []) note(o, undefined);
  const groups = new Map<string, RenderedObject[]>();
  for (const { toggles, objects } of byKind.values()) {
    const when =
      toggles.length > 0
        ? toggles.map((t) => `${t}=true`).join(' or ')
        : `several switches together (${allToggles.map((t) => `${t}=true`).join(', ')})`;
    groups.set(when, [...(groups.get(when) ?? []), ...objects]);
  }
  return [...groups].map(([when, objects]) => ({ when, objects }));
}

/** What the chart renders beyond `base` when its `false` booleans (in `values`, its values.yaml) are switched on. */
export async function optionalKinds(render: Render, values: unknown, base: readonly RenderedObject[]): Promise<OptionalKinds> {
  const found = falseToggles(values).length;
  const toggles = falseToggles(values, MAX_TOGGLES);
  const names = toggles.map(formatPath);
  if (toggles.length === 0) return { groups: [], unrenderable: [], tried: 0, found };
  const known = new Set(base.map(kindKey));
  const together = await tryRender(render, switchedOn(toggles));
  if (together !== undefined && together.every((o) => known.has(kindKey(o))))
    return { groups: [], unrenderable: [], tried: toggles.length, found };
  const alone = (await eachAlone(render, toggles)).map((objects, i) => ({ toggle: names[i] ?? '', objects }));
  return {
    groups: groupNewKinds(base, alone, together, names),
    unrenderable: alone.filter((a) => a.objects === undefined).map((a) => a.toggle),
    tried: toggles.length,
    found,
  };
}
