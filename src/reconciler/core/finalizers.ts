/** The finalizer that holds a CR until its release is uninstalled: operator-sdk's name, so CRs it made keep working. */
export const FINALIZER = 'helm.sdk.operatorframework.io/uninstall-release';
/** operator-sdk's earlier name; still honoured and removed on delete. */
export const LEGACY_FINALIZER = 'helm.sdk.operatorframework.io/uninstall-helm-release';
export const FINALIZERS: readonly string[] = [FINALIZER, LEGACY_FINALIZER];
