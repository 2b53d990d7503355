/**
 * What the reconciler needs from the world besides helm (helm-port.ts): release storage, the
 * release's objects, metrics. The operator wires concrete clients in; unit tests wire fakes.
 */
import type { CustomResourceClient } from '../k8s/custom-resources.js';
import type { ReleaseObjects } from './release-objects.js';
import type { ReleaseRecord } from './state.js';

export interface ReleaseStoragePort {
  records(namespace: string, release: string): Promise<ReleaseRecord[]>;
  recordsOf(namespace: string, releases: readonly string[]): Promise<Map<string, ReleaseRecord[]>>;
  /** The record of revision `revision` alone, when it is still the latest and deployed; else undefined. */
  deployed(namespace: string, release: string, revision: number): Promise<ReleaseRecord[] | undefined>;
}

/** What the reconciler does with the CRs of its kind (src/k8s/custom-resources.ts implements it). */
export type CustomResourcesPort = Pick<CustomResourceClient, 'get' | 'addFinalizer' | 'removeFinalizers' | 'patchStatus'>;

/** What actions do with the release's live objects (release-objects.ts implements it). */
export type ReleaseObjectsPort = Pick<ReleaseObjects, 'adopt' | 'repairDrift' | 'readiness'>;

/** Release-level metrics (src/telemetry/metrics.ts implements them). */
export interface ReconcilerMetrics {
  releaseState(controller: string, namespace: string, name: string, state: string): void;
  driftCorrected(controller: string, kind: string): void;
  forget(controller: string, namespace: string, name: string): void;
  /** Drops every CR of a controller that was stopped (a watches.yaml reload removed or restarted it). */
  forgetController(controller: string): void;
}
