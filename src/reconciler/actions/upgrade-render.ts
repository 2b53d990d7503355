/**
 * The upgrade's own post-render step, after the ownership stamp (render-ownership.ts): each
 * object's fields that are someone else's settled against the live object (upgrade-fields.ts),
 * and, under `conflictPolicy: fail`, the conflicts helm's apply would meet found by a dry run.
 * A conflict fails the post-render, so helm stops before it stores a revision or applies anything.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { DriftIgnoreRule } from '../../config/drift-ignore-rules.js';
import { readHelmYaml, splitHelmStream } from '../../config/helm-yaml.js';
import { isPlainObject } from '../../util/plain-object.js';
import { MANIFEST_READ } from '../objects/inventory.js';
import { RELEASE_FIELD_MANAGERS } from '../objects/release-objects.js';
import { rewrittenDocument } from '../objects/render-ownership.js';
import type { DriftFights } from '../status/status.js';
import { conflictsMessage, heldFields, pointerOf, settleHeld, type UpgradeConflict } from '../objects/upgrade-fields.js';
import { subjectOf, type ActionContext } from '../core/action-context.js';

export interface SettlePlan {
  readonly rules: readonly DriftIgnoreRule[];
  /** Fight records whose held fields an upgrade leaves alone (those of the rules in force). */
  readonly fights: DriftFights | undefined;
  /** helm applies server-side (v4, not a forced replace). */
  readonly serverSide: boolean;
  /** `conflictPolicy: fail`: stop before helm when its apply would take a field from another manager. */
  readonly failOnConflict: boolean;
}

/** An upgrade `conflictPolicy: fail` stopped: its message names every field (upgrade-fields.ts). */
export class UpgradeConflictError extends Error {
  override readonly name = 'UpgradeConflictError';
}

/** Whether `plan` can change anything: the common case (no rules, no fights, `force`) reads nothing. */
export function settles(plan: SettlePlan): boolean {
  return plan.failOnConflict || plan.rules.length > 0 || (plan.fights?.fields.some((f) => f.conflict === true) ?? false);
}

interface Applied {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, unknown> };
  [key: string]: unknown;
}

const isApplied = (doc: unknown): doc is Applied =>
  isPlainObject(doc) &&
  typeof doc.apiVersion === 'string' &&
  typeof doc.kind === 'string' &&
  isPlainObject(doc.metadata) &&
  typeof doc.metadata.name === 'string' &&
  doc.metadata.name !== '';

/** `manifest` with every object settled; throws UpgradeConflictError for what `conflictPolicy: fail` refuses. */
export async function settleManifest(manifest: string, ctx: ActionContext, plan: SettlePlan): Promise<string> {
  if (!settles(plan)) return manifest;
  const conflicts: UpgradeConflict[] = [];
  const out: string[] = [];
  for (const chunk of splitHelmStream(manifest)) {
    const doc = readDocument(chunk);
    out.push(isApplied(doc) ? await settleDocument(chunk, doc, { ctx, plan, conflicts }) : chunk);
  }
  if (conflicts.length > 0) throw new UpgradeConflictError(conflictsMessage(conflicts));
  return out.join('---\n');
}

/** The document of `doc` as the upgrade applies it; the conflicts its apply would meet go to `conflicts`. */
async function settleDocument(
  chunk: string,
  doc: Applied,
  pass: { ctx: ActionContext; plan: SettlePlan; conflicts: UpgradeConflict[] },
): Promise<string> {
  const { ctx, plan, conflicts } = pass;
  const namespace = doc.metadata.namespace ?? ((await ctx.isNamespaced(doc.apiVersion, doc.kind).catch(() => true)) ? ctx.namespace : '');
  const object = { kind: doc.kind, namespace, name: doc.metadata.name };
  const labels = Object.fromEntries(
    Object.entries(doc.metadata.labels ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
  const held = heldFields(plan.rules, plan.fights, { ...object, labels });
  const live = held.length === 0 ? undefined : await ctx.objects.current({ apiVersion: doc.apiVersion, ...object });
  const settled = settleHeld(doc, live, held, { serverSide: plan.serverSide, ours: RELEASE_FIELD_MANAGERS });
  if (plan.failOnConflict && plan.serverSide) {
    const body = { ...settled, metadata: { ...settled.metadata, ...(namespace === '' ? {} : { namespace }) } } as KubernetesObject;
    for (const c of await ctx.objects.applyConflicts(subjectOf(ctx), body)) {
      const pointer = pointerOf(c.field, body);
      conflicts.push({ object, field: c.field, manager: c.manager, ...(pointer === undefined ? {} : { pointer }) });
    }
  }
  return settled === doc ? chunk : rewrittenDocument(chunk, settled);
}

function readDocument(chunk: string): unknown {
  try {
    return readHelmYaml(chunk, MANIFEST_READ);
  } catch {
    return undefined;
  }
}
