/** What a scaffolded project pins: this package's name and version, and the Node of its image. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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
  const env = readFileSync(new URL('hack/versions.env', root), 'utf8');
  const node = /^NODE_VERSION=(\S+)$/m.exec(env)?.[1];
  if (node === undefined) throw new Error('hack/versions.env of the runtime package has no NODE_VERSION');
  return { runtimePackage: pkg.name, runtimeVersion: pkg.version, nodeVersion: node, packageRoot: fileURLToPath(root) };
}
