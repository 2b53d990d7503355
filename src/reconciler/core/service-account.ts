/**
 * A watch that acts as a ServiceAccount (serviceAccountName, --default-service-account) needs it
 * to exist in the CR's namespace before helm runs: the API server impersonates a name whether or
 * not the account exists, and RBAC bound to that name (or to every ServiceAccount's group) would
 * still apply. A missing one is said once per reconcile period, naming what to create.
 */
import { isStatus } from '../../k8s/errors.js';
import { Reason } from '../status/conditions.js';
import type { Outcome } from './outcome.js';
import type { ObjectReaderPort } from './ports.js';

type Refusal = Extract<Outcome, { kind: 'refused' }>;

/** Undefined when `serviceAccount` (undefined: the operator acts itself) exists in `namespace`. */
export async function missingServiceAccount(
  objects: ObjectReaderPort,
  namespace: string,
  serviceAccount: string | undefined,
): Promise<Refusal | undefined> {
  if (serviceAccount === undefined) return undefined;
  try {
    const found = await objects.get({ apiVersion: 'v1', kind: 'ServiceAccount', namespace, name: serviceAccount });
    if (found !== undefined) return undefined;
  } catch (err) {
    if (isStatus(err, 403)) {
      throw new Error(
        `the operator may not get ServiceAccount ${serviceAccount} of namespace ${namespace}, which it checks before acting as it: grant the operator get on serviceaccounts`,
        { cause: err },
      );
    }
    throw err;
  }
  return {
    kind: 'refused',
    reason: Reason.ServiceAccountNotFound,
    message: missingMessage(namespace, serviceAccount),
    retry: false,
    event: true,
    stage: 'input',
    recheck: 'period',
  };
}

export function missingMessage(namespace: string, serviceAccount: string): string {
  return (
    `ServiceAccount ${serviceAccount} not found in namespace ${namespace}: this kind's releases are installed as system:serviceaccount:${namespace}:${serviceAccount} ` +
    `(serviceAccountName or --default-service-account), so nothing was installed. Create the ServiceAccount ${serviceAccount} in ${namespace} and bind it a Role ` +
    "granting what the chart creates, plus Secrets (helm's release storage); this is checked again at the reconcile period"
  );
}
