/** Release naming: the CR's name, checked against helm's rules before helm ever sees it. */
import { qualifiedKind } from '../../util/group-kind.js';

/** helm's own limit (the release Secret name and label values must fit). */
export const MAX_RELEASE_NAME_LENGTH = 53;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Returns why `name` cannot be a helm release name, or undefined when it can. */
export function releaseNameProblem(name: string): string | undefined {
  if (name.length > MAX_RELEASE_NAME_LENGTH) {
    return (
      `release name "${name}" is ${name.length} characters long; helm allows at most ${MAX_RELEASE_NAME_LENGTH}. ` +
      `Rename the resource to ${MAX_RELEASE_NAME_LENGTH} characters or fewer`
    );
  }
  if (!DNS1123_SUBDOMAIN.test(name)) {
    return `release name "${name}" is not a valid DNS-1123 name (lower-case letters, digits, '-' and '.')`;
  }
  return undefined;
}

/**
 * A label value naming the kind that owns a release, `Kind.group` (`Kind` for the core group).
 * Label values are capped at 63 characters; a longer one keeps its start and a hash of the whole.
 */
export function ownerKindLabel(kind: string, group: string): string {
  const full = qualifiedKind(kind, group);
  if (full.length <= 63 && DNS1123_LABEL.test(full.toLowerCase().replaceAll('.', '-'))) return full;
  let hash = 0;
  for (const ch of full) hash = (Math.imul(hash, 31) + ch.charCodeAt(0)) >>> 0;
  return `${full.slice(0, 54).replace(/[^A-Za-z0-9]+$/, '')}-${hash.toString(16).padStart(8, '0')}`;
}
