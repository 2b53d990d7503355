/**
 * Who helm acts as for a CR, and through what: the watch's ServiceAccount of the CR's namespace
 * (impersonated), through the helm gateway when the watch confines its releases or acts as a
 * ServiceAccount (docs/adr/0045); none of it for a watch that acts as the operator itself.
 */
import type { GatewayPolicy } from '../../k8s/gateway/policy.js';
import { helmActingAs, type HelmPort } from './helm-port.js';
import { VALUES_SOURCE_LABEL } from '../desired/values-from.js';

/** What a watch says of who its releases' helm acts as (see the Watch type's fields of these names). */
interface IdentityWatch {
  readonly serviceAccountName?: string;
  readonly confineToNamespace: boolean;
  readonly allowClusterScoped: readonly string[];
  readonly allowKinds?: readonly string[];
}

/** helm for the CR at `namespace/name` as its watch says, every failure's text passed through `redact`; and the user it acts as. */
export function helmActingFor(
  helm: HelmPort,
  w: IdentityWatch,
  at: { readonly namespace: string; readonly name: string },
  redact: (text: string) => string,
): { helm: HelmPort; identity: string | undefined } {
  const identity = serviceAccountUser(at.namespace, w.serviceAccountName);
  return {
    helm: helmActingAs(helm, {
      ...(identity === undefined ? {} : { impersonate: identity }),
      redact,
      ...gatewayPolicy(w, at.namespace, at.name, identity),
    }),
    identity,
  };
}

/**
 * Pure: the helm gateway policy of a release, for watches whose releases must stay within their
 * namespace (`confineToNamespace`) or to some kinds (`allowKinds`), or whose identity is not the operator's (a ServiceAccount: then
 * `lookup()` must not read Secrets its values-from references could not): none otherwise, and helm
 * talks to the API server directly as in operator-sdk (docs/adr/0045).
 */
export function gatewayPolicy(
  w: Omit<IdentityWatch, 'serviceAccountName'>,
  namespace: string,
  release: string,
  identity: string | undefined,
): { gateway?: GatewayPolicy } {
  if (!w.confineToNamespace && identity === undefined && w.allowKinds === undefined) return {};
  return {
    gateway: {
      namespace,
      releases: [release],
      confineWrites: w.confineToNamespace,
      allowClusterScoped: w.allowClusterScoped,
      readableLabel: { key: VALUES_SOURCE_LABEL, value: 'true' },
      ...(w.allowKinds === undefined ? {} : { allowKinds: w.allowKinds }),
    },
  };
}

/** The user a ServiceAccount of the CR's namespace authenticates as, for impersonation. */
export function serviceAccountUser(namespace: string, serviceAccount: string | undefined): string | undefined {
  return serviceAccount === undefined ? undefined : `system:serviceaccount:${namespace}:${serviceAccount}`;
}
