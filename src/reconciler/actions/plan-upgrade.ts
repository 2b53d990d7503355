/**
 * The plan of a pending upgrade (docs/adr/0083): the I/O edge of upgrade-plan.ts. helm renders
 * the next revision against the server (`upgrade --install --dry-run=server`, the same render the
 * upgrade makes: `lookup()` and capabilities answered by the cluster), the manifest gets what the
 * upgrade's post-render gives it (the ownership stamp and the settled fields of ADR 0072), and
 * the API server answers, per object, a dry-run server-side apply as helm's field manager: what
 * the object would become, the fields it would take from other managers, or its refusal. Nothing
 * is written: one helm process, and per object one GET and one or two dry-run PATCHes.
 */
import { planChartCrds } from '../desired/chart-crds.js';
import { inventoryOf, parseManifest, renderedBody, type ManifestObject } from '../objects/inventory.js';
import { Redactor, redactedDeep } from '../status/redaction.js';
import { readSecretPaths } from '../desired/secret-paths.js';
import { asHelmApplies } from '../objects/release-objects.js';
import { stampOwnership } from '../objects/render-ownership.js';
import type { ReleaseRecord } from '../decide/state.js';
import {
  classifyObject,
  deletedObjects,
  hookEvents,
  sealPlan,
  upgradeHooks,
  type PlanCrd,
  type KeepOptions,
  type PlanHook,
  type PlanObject,
  type PlanRef,
  type UpgradePlan,
} from '../plan/upgrade-plan.js';
import { ownerOf, releaseRequest, subjectOf, type ActionContext, type Desired } from '../core/action-context.js';
import { settlePlan } from './upgrade.js';
import { settleManifest } from './upgrade-render.js';

/**
 * The plan of upgrading the release from revision `from` to `desired`; with no `from`, of
 * installing it (revision 0: nothing deleted, the install hooks; `plan diff` of a CR not yet there).
 */
export async function planUpgrade(
  ctx: ActionContext,
  desired: Desired,
  from: Pick<ReleaseRecord, 'revision' | 'labels'> | undefined,
): Promise<UpgradePlan> {
  const rendered = await ctx.helm.render({ ...releaseRequest(ctx, desired), dryRun: 'server' });
  const applied = parseManifest(await asUpgradeApplies(ctx, rendered));
  const hooks: PlanHook[] = [];
  const release: ManifestObject[] = [];
  for (const o of applied) {
    const events = hookEvents(o.annotations);
    if (events === undefined) release.push(o);
    else hooks.push({ kind: o.kind, name: o.name, events });
  }
  const entries = await inventoryOf(release, ctx.namespace, ctx.isNamespaced);
  const redact = <T>(v: T): T => redactedDeep(v, (t) => ctx.redact(t));
  const deployed = await deployedSecrets(ctx, from);
  const keep: KeepOptions = { redact, deployed: <T>(v: T): T => deployed.deep(v), seal: desired.seal };
  const objects: PlanObject[] = [];
  for (const [i, o] of release.entries()) {
    const entry = entries[i];
    if (entry === undefined) continue;
    const planned = await planObject(ctx, entry, o, keep);
    if (planned !== undefined) objects.push(planned);
  }
  if (from !== undefined) objects.push(...deletedObjects(await deployedObjects(ctx, from), entries));
  return sealPlan({
    release: ctx.name,
    namespace: ctx.namespace,
    fromRevision: from?.revision ?? 0,
    chart: { name: ctx.watch.chart.name, version: ctx.watch.chart.version },
    objects,
    hooks: upgradeHooks(hooks, from === undefined ? 'install' : 'upgrade'),
    crds: await crdChanges(ctx),
  });
}

/** The manifest as the upgrade's post-render would hand it to helm (context.ts applyRequest, upgrade.ts). */
async function asUpgradeApplies(ctx: ActionContext, manifest: string): Promise<string> {
  const stamped = await stampOwnership(manifest, {
    owner: ownerOf(ctx),
    chartName: ctx.watch.chart.name,
    namespace: ctx.namespace,
    isNamespaced: ctx.isNamespaced,
  });
  const serverSide = (await ctx.helm.major()) === 4 && !ctx.annotations.upgradeForce;
  // The conflicts are the plan's to list, not a reason to stop planning.
  return settleManifest(stamped, ctx, { ...settlePlan(ctx, serverSide).plan, failOnConflict: false });
}

async function planObject(ctx: ActionContext, ref: PlanRef, o: ManifestObject, keep: KeepOptions): Promise<PlanObject | undefined> {
  const body = asHelmApplies(renderedBody(o), ref.namespace, { namespace: ctx.namespace, name: ctx.name });
  const live = await ctx.objects.current(ref);
  const answer = await ctx.objects.dryRunApply(subjectOf(ctx), body, { after: true });
  return classifyObject(ref, live, answer, keep);
}

/**
 * The secrets of the deployed revision, as its own record names them (secret-paths.ts): the live
 * objects still hold them where the desired state no longer takes them from a Secret. Read from
 * helm's storage only when the revision recorded any (one helm process).
 */
async function deployedSecrets(ctx: ActionContext, from: Pick<ReleaseRecord, 'revision' | 'labels'> | undefined): Promise<Redactor> {
  const paths = from === undefined ? [] : readSecretPaths(from.labels);
  if (from === undefined || paths.length === 0) return new Redactor();
  return new Redactor(
    await ctx.helm.storedStrings({ release: ctx.name, namespace: ctx.namespace, revision: from.revision, paths, signal: ctx.signal }),
  );
}

/** The deployed revision's objects: kept since its install or upgrade, else read from helm. */
async function deployedObjects(
  ctx: ActionContext,
  from: Pick<ReleaseRecord, 'revision'>,
): Promise<(PlanRef & { readonly annotations: Readonly<Record<string, string>> })[]> {
  const kept = ctx.manifests.get(ctx.namespace, ctx.name, ctx.uid, from.revision);
  if (kept !== undefined) return kept.map((d) => ({ ...d.entry, annotations: d.rendered.annotations }));
  const release = await ctx.helm.status(ctx.name, ctx.namespace);
  const objects = parseManifest(release?.manifest ?? '');
  const entries = await inventoryOf(objects, ctx.namespace, ctx.isNamespaced);
  return entries.map((e, i) => ({ ...e, annotations: objects[i]?.annotations ?? {} }));
}

/** The chart's CRDs the upgrade would create or replace, or refuse (`crds: CreateReplace` only; chart-crds.ts). */
async function crdChanges(ctx: ActionContext): Promise<PlanCrd[]> {
  const crds = ctx.watch.chart.crds ?? [];
  const port = ctx.crds;
  if (ctx.watch.crds !== 'CreateReplace' || crds.length === 0 || port === undefined) return [];
  const live = new Map(await Promise.all(crds.map(async (c) => [c.name, await port.get(c.name)] as const)));
  const plan = planChartCrds(crds, live);
  if (plan.kind === 'unsafe')
    return plan.refusals.map((r) => ({
      name: r.crd.name,
      change: 'unsafe',
      findings: r.changes.map((c) => `${c.path}: ${c.message} (${c.check})`),
    }));
  return plan.applies.map((a) => ({ name: a.crd.name, change: a.kind }));
}
