/**
 * Builds one watch's reconciler and the collaborators it is given: its manifest cache, the
 * release's objects, the uninstaller, and what is forgotten of a CR whose release is gone. The
 * reconciler builds none of them, so its orchestration is tested against fakes of the same ports.
 */
import type { ObjectClient } from '../k8s/objects.js';
import {
  Uninstaller,
  ManifestCache,
  releaseOwnerOf,
  HelmReconciler,
  type HelmReconcilerOptions,
  CrdsClient,
  ReleaseObjects,
  type DependentsPort,
  healthRules,
} from '../reconciler/index.js';

type Built = 'objects' | 'reader' | 'manifests' | 'uninstaller' | 'forget' | 'crds';

export interface ReleaseReconcilerOptions extends Omit<HelmReconcilerOptions, Built> {
  /** Generic access to the release's objects (ownership, drift repair, uninstall-wait). */
  readonly objects: ObjectClient;
  /** The shared dependents cache; undefined when the watch turns dependent watches off. */
  readonly dependents?: DependentsPort;
  /** The controller's name, for metrics. */
  readonly controller: string;
  /** How many batches a namespace's bulk delete is split into (the kind's workers). */
  readonly uninstallLanes?: number;
}

export function releaseReconciler(o: ReleaseReconcilerOptions): HelmReconciler {
  const { objects: client, dependents, uninstallLanes, ...rest } = o;
  const manifests = new ManifestCache(o.isNamespaced);
  const forget = (namespace: string, name: string): void => {
    manifests.forget(namespace, name);
    o.plans?.held.forget(namespace, name);
    o.crs.forget(namespace, name);
    o.metrics?.forget(o.controller, namespace, name);
  };
  const objects = new ReleaseObjects({
    objects: client,
    ...(dependents === undefined ? {} : { dependents }),
    chartName: o.watch.chart.name,
    health: healthRules(o.watch.healthChecks ?? []),
    onDriftCorrected: (kind) => o.metrics?.driftCorrected(o.controller, kind),
    onDriftConflict: (kind) => o.metrics?.driftConflict(o.controller, kind),
  });
  const uninstaller = new Uninstaller({
    owner: releaseOwnerOf(o.watch),
    crs: o.crs,
    objects: client,
    cache: o.cache,
    requeue: o.wakeups,
    forget,
    onUninstalled: (by, count) => o.metrics?.releasesUninstalled(o.controller, by, count),
    ...(uninstallLanes === undefined ? {} : { lanes: uninstallLanes }),
  });
  return new HelmReconciler({ ...rest, objects, reader: client, manifests, uninstaller, forget, crds: new CrdsClient(client) });
}
