/**
 * The names helm's Secret storage driver gives a release's records
 * (`sh.helm.release.v1.<release>.v<revision>`). Here, below both, because the helm layer reads the
 * records and the Kubernetes gateway guards them, and neither may import the other.
 */
export const storageSecretName = (release: string, revision: number): string => `${storagePrefix(release)}${revision}`;

/** What every record of `release` starts with. */
export const storagePrefix = (release: string): string => `sh.helm.release.v1.${release}.v`;
