/**
 * The release's objects after helm deployed a revision: kept for later reconciles, owned by the
 * CR, and summarised for the Ready condition.
 */
import type { ReleaseInfo } from '../core/helm-port.js';
import type { Deployment } from '../core/outcome.js';
import type { DesiredObject } from '../objects/release-object-types.js';
import type { DeployedRelease } from '../status/status.js';
import { subjectOf, type ActionContext } from '../core/action-context.js';

export async function deploymentOf(
  ctx: ActionContext,
  release: ReleaseInfo,
  options: { readonly created: boolean },
): Promise<Deployment & { release: DeployedRelease }> {
  const objects = await ctx.manifests.remember(ctx.name, ctx.uid, release);
  const seen = await ctx.objects.adopt(subjectOf(ctx), objects, { created: options.created });
  return { release: deployedRelease(release), inventory: entriesOf(objects), ready: await ctx.objects.readiness(objects, seen) };
}

export const entriesOf = (objects: readonly DesiredObject[]): Deployment['inventory'] => objects.map((o) => o.entry);

export function deployedRelease(r: ReleaseInfo): DeployedRelease {
  return {
    name: r.name,
    namespace: r.namespace,
    revision: r.revision,
    chart: r.chart.name,
    chartVersion: r.chart.version,
    ...(r.chart.appVersion === undefined ? {} : { appVersion: r.chart.appVersion }),
  };
}
