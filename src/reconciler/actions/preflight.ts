/**
 * With `confineToNamespace`, the release is rendered before helm installs or upgrades it, and
 * refused when it would create anything outside the CR's namespace, or a cluster-scoped kind the
 * watch does not allow. Nothing is created; only a change of the spec or the chart can help.
 */
import { NoKindMatchError } from '../../k8s/restmapper.js';
import { Reason } from '../status/conditions.js';
import { confinementViolations } from '../decide/confinement.js';
import { inventoryOf, parseManifest, type InventoryEntry, type ManifestObject } from '../objects/inventory.js';
import type { Outcome } from '../core/outcome.js';
import { failureOf, releaseRequest, type ActionContext, type Desired } from '../core/action-context.js';

/**
 * undefined: helm may go ahead. A render that fails is the install or upgrade (`reason`) failing
 * as helm itself would: counted against the retries of this desired state.
 */
export async function checkConfinement(ctx: ActionContext, desired: Desired, reason: Reason): Promise<Outcome | undefined> {
  if (!ctx.watch.confineToNamespace) return undefined;
  let manifest: string;
  try {
    manifest = await ctx.helm.render({ ...releaseRequest(ctx, desired), dryRun: ctx.watch.dryRunOption });
  } catch (err) {
    return failureOf(ctx, err, { reason, event: 'RenderFailed', counts: desired });
  }
  const served: ManifestObject[] = [];
  const unknown: InventoryEntry[] = [];
  for (const o of parseManifest(manifest)) {
    if (await isServed(ctx, o)) served.push(o);
    else unknown.push({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.namespace ?? '', name: o.name });
  }
  const entries = await inventoryOf(served, ctx.namespace, ctx.isNamespaced);
  const violations = confinementViolations(
    entries,
    { namespace: ctx.namespace, allowClusterScoped: ctx.watch.allowClusterScoped },
    unknown,
  );
  if (violations.length === 0) return undefined;
  const message = `the release would create objects outside namespace ${ctx.namespace}, which this watch confines it to: ${violations.join(', ')}`;
  return { kind: 'refused', reason: Reason.NamespaceConfinementViolation, message, retry: false, event: true, stage: 'release' };
}

/** Whether the API server serves the object's kind (a kind it does not know cannot be confined). */
async function isServed(ctx: ActionContext, o: ManifestObject): Promise<boolean> {
  try {
    await ctx.isNamespaced(o.apiVersion, o.kind);
    return true;
  } catch (err) {
    if (err instanceof NoKindMatchError) return false;
    throw err;
  }
}
