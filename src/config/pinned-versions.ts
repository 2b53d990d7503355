/**
 * The tool versions this package pins (hack/versions.env, shipped in the package): read as data, not
 * sourced by a shell, so a package path with spaces or quotes changes nothing.
 */
import { readFileSync } from 'node:fs';

/** hack/versions.env of this package: beside dist/ when installed, beside src/ in a checkout. */
const VERSIONS_FILE = new URL('../../hack/versions.env', import.meta.url);

/** `NAME=value` of hack/versions.env; throws naming the variable when it is not there. */
export function pinnedVersion(name: string): string {
  const text = readFileSync(VERSIONS_FILE, 'utf8');
  const value = new RegExp(`^${name}=(\\S+)$`, 'm').exec(text)?.[1];
  if (value === undefined) throw new Error(`hack/versions.env of the runtime package has no ${name}`);
  return value;
}
