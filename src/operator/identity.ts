/**
 * Who a watch's helm runs and the operator's writes act as (docs/adr/0040-tenancy-model.md): the
 * watch's `serviceAccountName`, else `--default-service-account`, else the operator itself. Only
 * impersonation is a boundary the API server enforces; a watch that runs as the operator lends its
 * rights to whoever may create a CR, through any chart value rendered with `tpl`.
 */
import { qualifiedKind } from '../util/group-kind.js';
import type { Watch } from '../config/watch.js';

export type ActingIdentity =
  | { readonly kind: 'operator' }
  /** A ServiceAccount of each CR's namespace: `watch` from serviceAccountName, `default` from the flag. */
  | { readonly kind: 'watch' | 'default'; readonly serviceAccount: string };

/** The identity `watch` runs as under `defaultServiceAccount` (`--default-service-account`). */
export function actingIdentity(watch: Pick<Watch, 'serviceAccountName'>, defaultServiceAccount: string | undefined): ActingIdentity {
  if (watch.serviceAccountName !== undefined) return { kind: 'watch', serviceAccount: watch.serviceAccountName };
  if (defaultServiceAccount !== undefined) return { kind: 'default', serviceAccount: defaultServiceAccount };
  return { kind: 'operator' };
}

/**
 * The watch as the reconciler runs it: with the default ServiceAccount in place of a missing
 * `serviceAccountName`, so everything keyed on it (helm's `--kube-as-user`, the writes' Impersonate
 * header, values-from's opt-in label, the server dry run) applies alike.
 */
export function withDefaultServiceAccount(watch: Watch, defaultServiceAccount: string | undefined): Watch {
  const identity = actingIdentity(watch, defaultServiceAccount);
  return identity.kind === 'default' ? { ...watch, serviceAccountName: identity.serviceAccount } : watch;
}

/** The `identity` label of `helm_operator_watch_identity`. */
export const identityLabel = (identity: ActingIdentity): string => (identity.kind === 'operator' ? 'operator' : 'serviceaccount');

/** The start warning for a watch that runs as the operator; undefined for one that impersonates. */
export function ownIdentityWarning(
  watch: Pick<Watch, 'kind' | 'group' | 'serviceAccountName'>,
  defaultServiceAccount: string | undefined,
): string | undefined {
  if (actingIdentity(watch, defaultServiceAccount).kind !== 'operator') return undefined;
  const kind = qualifiedKind(watch.kind, watch.group);
  return (
    `Watch ${kind} runs helm with the operator's own identity: whoever may create a ${watch.kind} can create or read, through the chart ` +
    "(a value rendered with tpl, lookup), whatever the operator may. Set serviceAccountName on the watch, or run with --default-service-account, to act as a ServiceAccount of the CR's namespace"
  );
}
