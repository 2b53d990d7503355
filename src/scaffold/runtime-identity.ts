/** What a scaffolded project pins: this package's name and version, and the Node of its image. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { pinnedVersion } from '../config/pinned-versions.js';

export interface RuntimeIdentity {
  readonly runtimePackage: string;
  readonly runtimeVersion: string;
  readonly nodeVersion: string;
  /** This package's directory (installed: what its tarball held; a checkout: the repository). */
  readonly packageRoot: string;
}

const root = new URL('../../', import.meta.url);

export function runtimeIdentity(): RuntimeIdentity {
  const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { name: string; version: string };
  return {
    runtimePackage: pkg.name,
    runtimeVersion: pkg.version,
    nodeVersion: pinnedVersion('NODE_VERSION'),
    packageRoot: fileURLToPath(root),
  };
}
