/** Names derived from a group/version/kind and a domain, and their validation (pure). */

export interface ApiNames {
  /** The group as given (`cache`), possibly empty. */
  readonly group: string;
  readonly domain: string;
  /** `cache.example.com`, or the domain alone for an empty group. */
  readonly fullGroup: string;
  readonly version: string;
  readonly kind: string;
  /** `nginxes` */
  readonly plural: string;
  /** `nginx` */
  readonly singular: string;
}

export class InvalidNameError extends Error {
  override readonly name = 'InvalidNameError';
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;
const VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;

/** English plural of a lower-case word, as kubebuilder's (flect) for the usual kind names. */
export function pluralize(word: string): string {
  if (/(s|x|z|ch|sh)$/.test(word)) return `${word}es`;
  if (/[^aeiou]y$/.test(word)) return `${word.slice(0, -1)}ies`;
  return `${word}s`;
}

/** A DNS-1123 subdomain: dot-separated labels, at most 253 characters. */
export function isDnsSubdomain(s: string): boolean {
  return s.length > 0 && s.length <= 253 && s.split('.').every((l) => l.length <= 63 && DNS1123_LABEL.test(l));
}

export function validateDomain(domain: string): void {
  if (!isDnsSubdomain(domain))
    throw new InvalidNameError(
      `--domain "${domain}" must be a DNS subdomain of lower-case letters, digits, '-' and '.' (e.g. example.com)`,
    );
}

export function validateProjectName(name: string): void {
  if (!DNS1123_LABEL.test(name) || name.length > 40) {
    throw new InvalidNameError(
      `project name "${name}" must be a DNS label of at most 40 characters (lower-case letters, digits, '-'): it names the namespace <name>-system and prefixes every object; set --project-name`,
    );
  }
}

export function apiNames(gvk: { group: string; version: string; kind: string }, domain: string): ApiNames {
  if (!KIND.test(gvk.kind))
    throw new InvalidNameError(`--kind "${gvk.kind}" must be CamelCase: an upper-case letter, then letters and digits (e.g. Nginx)`);
  if (!VERSION.test(gvk.version))
    throw new InvalidNameError(`--version "${gvk.version}" must look like v1, v1alpha1 or v2beta3 (a Kubernetes API version)`);
  if (gvk.group !== '' && !isDnsSubdomain(gvk.group))
    throw new InvalidNameError(`--group "${gvk.group}" must be lower-case letters, digits, '-' and '.' (e.g. cache)`);
  const fullGroup = gvk.group === '' ? domain : `${gvk.group}.${domain}`;
  if (!isDnsSubdomain(fullGroup) || !fullGroup.includes('.'))
    throw new InvalidNameError(`API group "${fullGroup}" (--group + --domain) must be a DNS subdomain with at least one dot`);
  const singular = gvk.kind.toLowerCase();
  const plural = pluralize(singular);
  if (plural.length > 63) throw new InvalidNameError(`--kind "${gvk.kind}" is too long: its plural "${plural}" exceeds 63 characters`);
  return { group: gvk.group, domain, fullGroup, version: gvk.version, kind: gvk.kind, plural, singular };
}

/** `helm create`'s chart names and Go's CamelCase of a chart name, for a default kind. */
export function kindFromChartName(chart: string): string {
  return chart
    .split(/[^A-Za-z0-9]+/)
    .filter((p) => p !== '')
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join('')
    .replace(/^[0-9]+/, '');
}
