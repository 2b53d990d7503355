/** Fits the helm client to the reconciler's port, and maps helm's error reasons to retry policy. */
import { HelmError, type HelmClient, type HelmErrorReason } from '../helm/index.js';
import type { HelmFailure, HelmPort } from '../reconciler/helm-port.js';

export function helmPort(client: HelmClient): HelmPort {
  return {
    major: async () => (await client.version()).major,
    install: (r) => client.as(r.impersonate).install(r),
    upgrade: (r) => client.as(r.impersonate).upgrade(r),
    uninstall: (r) => client.as(r.impersonate).uninstall(r),
    rollback: (r) => client.as(r.impersonate).rollback(r),
    status: (release, namespace, identity) => client.as(identity?.impersonate).status(release, namespace),
    // `helm template` is offline, so only the server dry run acts as someone.
    render: (r) => (r.dryRun === 'server' ? client.as(r.impersonate).serverDryRun(r) : client.template(r)),
    running: (release, namespace) => client.running(release, namespace),
  };
}

/** Failures that depend only on the CR's spec or the chart: retrying the same input fails the same way. */
const INPUT_ERRORS: ReadonlySet<HelmErrorReason> = new Set(['ValuesSchemaInvalid', 'ChartInvalid', 'RenderFailed', 'InvalidReleaseName', 'ReleaseTooLarge']);

export function describeHelmError(err: unknown): HelmFailure {
  if (err instanceof HelmError) return { summary: err.summary, retryable: !INPUT_ERRORS.has(err.reason) };
  return { summary: err instanceof Error ? err.message : String(err), retryable: true };
}
