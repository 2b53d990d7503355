/**
 * `helm-operator plan diff -f cr.yaml` (docs/plans.md): the plan of a CR manifest, made by the very
 * reconciler `run` would build for its watch (the same ports, identity and helm gateway), outside
 * any controller. helm renders against the server and every object is a dry run: nothing on the
 * cluster is created or changed. It acts with the caller's kubeconfig, so what the caller may not
 * read (helm's release Secrets, a values Secret) it cannot plan.
 */
import type { Watch } from '../config/watch.js';
import { HelmClient } from '../helm/index.js';
import type { CustomResource } from '../k8s/custom-resources.js';
import { loadKubeConfig } from '../k8s/kubeconfig.js';
import type { UpgradePlan } from '../reconciler/index.js';
import type { Logger } from '../telemetry/logger.js';
import { Operator } from './operator.js';

export interface PlanPreviewSettings {
  /** Undefined: the default kubeconfig. */
  readonly kubeconfig?: string;
  readonly helmBinary: string;
  /** `run`'s `--default-service-account`: a watch without `serviceAccountName` acts as this one. */
  readonly defaultServiceAccount?: string;
  readonly log: Logger;
  /** The operator's fingerprint key, where the caller could read it: hidden values then seal as the operator's plan seals them. */
  readonly fingerprintKey?: Uint8Array;
}

export async function previewPlan(settings: PlanPreviewSettings, watch: Watch, cr: CustomResource): Promise<UpgradePlan> {
  const { log } = settings;
  const kubeconfig = settings.kubeconfig === undefined ? {} : { kubeconfig: settings.kubeconfig };
  const helm = new HelmClient({ binary: settings.helmBinary, log: log.child({ component: 'helm' }), ...kubeconfig });
  const operator = new Operator({
    kubeConfig: loadKubeConfig(settings.kubeconfig),
    helm,
    log,
    defaultReconcilePeriodMs: 0,
    maxConcurrentReconciles: 1,
    namespaces: cr.metadata.namespace === undefined ? [] : [cr.metadata.namespace],
    ...(settings.defaultServiceAccount === undefined ? {} : { defaultServiceAccount: settings.defaultServiceAccount }),
    ...(settings.fingerprintKey === undefined ? {} : { fingerprintKey: settings.fingerprintKey }),
  });
  // Confined and impersonating watches' helm goes through it, as in the operator.
  await operator.startGateway();
  try {
    return await operator.previewPlan(watch, cr, new AbortController().signal);
  } finally {
    await operator.stop();
  }
}
