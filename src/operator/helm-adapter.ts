/** Fits the helm client to the reconciler's port, and maps helm's error reasons to retry policy. */
import { FIELD_CONFLICT, HelmError, NAME_IN_USE, type CallIdentity, type HelmClient, type HelmErrorReason } from '../helm/index.js';
import type { HelmApiGateway } from '../k8s/gateway/gateway.js';
import type { HelmFailure, HelmPort, Identity } from '../reconciler/index.js';

/**
 * `gateway`: where calls whose identity names a gateway policy go (docs/adr/0045); each such call
 * gets a grant of its own, revoked when the helm process ends. Whom helm acts as is decided here
 * alone, per call; src/helm/connection.ts turns it into helm's flags and environment.
 */
export function helmPort(
  client: HelmClient,
  gateway?: HelmApiGateway,
  shardLabels?: (namespace: string) => Readonly<Record<string, string>>,
): HelmPort {
  const via = async <T>(identity: Identity, releases: readonly string[], fn: (call: CallIdentity) => Promise<T>): Promise<T> => {
    const user: CallIdentity = identity.impersonate === undefined ? {} : { impersonate: identity.impersonate };
    const policy = identity.gateway;
    if (policy === undefined) return fn(user);
    if (gateway === undefined) throw new Error('a gateway policy was given, but the operator runs no helm gateway');
    const grant = await gateway.grant({ ...policy, releases: [...new Set([...policy.releases, ...releases])] });
    try {
      return await fn({ ...user, grant: { kubeconfig: grant.kubeconfig, cacheDir: grant.cacheDir } });
    } finally {
      await grant.close();
    }
  };
  return {
    major: async () => (await client.version()).major,
    install: (r) => via(r, [r.release], (call) => client.install({ ...withShard(r, shardLabels), ...call })),
    upgrade: (r) => via(r, [r.release], (call) => client.upgrade({ ...withShard(r, shardLabels), ...call })),
    uninstall: (r) => via(r, [r.release, ...(r.also ?? [])], (call) => client.uninstall({ ...r, ...call })),
    rollback: (r) => via(r, [r.release], (call) => client.rollback({ ...r, ...call })),
    test: (r) => via(r, [r.release], (call) => client.test({ ...r, ...call, logs: true })),
    status: (release, namespace, identity) => via(identity ?? {}, [release], (call) => client.status(release, namespace, call)),
    storedStrings: (r) =>
      via(r, [r.release], (call) =>
        client.storedStrings(r, { ...call, ...(r.signal ? { signal: r.signal } : {}), ...(r.redact ? { redact: r.redact } : {}) }),
      ),
    // `helm template` is offline, so only the server dry run acts as someone.
    render: (r) => (r.dryRun === 'server' ? via(r, [r.release], (call) => client.serverDryRun({ ...r, ...call })) : client.template(r)),
    running: (release, namespace) => client.running(release, namespace),
    mayChangeReleases: () => client.mayChangeReleases(),
  };
}

/**
 * Sharded (docs/adr/0085), every revision records the share it was made under (bucket, fence
 * epoch, replica): helm's history then shows which replica wrote it, and whether it held the share.
 * Added here, past the reconciler's labels, so it never enters the desired state's fingerprint.
 */
function withShard<R extends { readonly namespace: string; readonly labels: Readonly<Record<string, string>> }>(
  r: R,
  shardLabels: ((namespace: string) => Readonly<Record<string, string>>) | undefined,
): R {
  return shardLabels === undefined ? r : { ...r, labels: { ...r.labels, ...shardLabels(r.namespace) } };
}

/** Failures that depend only on the CR's spec or the chart: retrying the same input fails the same way. */
const INPUT_ERRORS: ReadonlySet<HelmErrorReason> = new Set([
  'ValuesSchemaInvalid',
  'ChartInvalid',
  'RenderFailed',
  'InvalidReleaseName',
  'ReleaseTooLarge',
  'ConfinementViolation',
]);

export function describeHelmError(err: unknown): HelmFailure {
  if (err instanceof HelmError) {
    // The gateway's own words (policy.ts) say which rule refused.
    const refusedBy = err.reason !== 'ConfinementViolation' ? undefined : /allowKinds/.test(err.summary) ? 'allowKinds' : 'confinement';
    const nameInUse = err.reason === 'ResourceConflict' && NAME_IN_USE.test(err.summary);
    // The same apply meets the same owner again: what settles it is a rule, a policy or a spec change.
    const fieldConflict = err.reason === 'ResourceConflict' && FIELD_CONFLICT.test(err.summary);
    return {
      summary: err.summary,
      retryable: !INPUT_ERRORS.has(err.reason) && !fieldConflict,
      ...(refusedBy === undefined ? {} : { refusedBy }),
      ...(nameInUse ? { nameInUse } : {}),
      ...(fieldConflict ? { fieldConflict } : {}),
    };
  }
  return { summary: err instanceof Error ? err.message : String(err), retryable: true };
}
