/**
 * OLM's own binaries, from the runtime package's `hack/tools.sh` (docs/adr/0018, 0033): its `olm`
 * and `catalog` operators and CRDs (component olm, OLM built from source at the pinned version),
 * and `opm` / `catalog-serve` (component olm-validate). Built into the shared cache on first use,
 * which needs `go`; later calls find them there.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { pinnedVersion } from '../config/pinned-versions.js';
import { OlmError } from './errors.js';

export interface OlmTools {
  readonly olm: string;
  readonly catalog: string;
  /** OLM's CRDs as its module ships them (deploy/chart/crds). */
  readonly crds: string;
  readonly opm: string;
  readonly catalogServe: string;
  /** The OLM version they were built from (hack/versions.env's OLM_VERSION). */
  readonly version: string;
}

/** hack/ of this package: beside dist/ when installed, beside src/ in a checkout. */
export const HACK_DIR = fileURLToPath(new URL('../../hack/', import.meta.url));

/** The pinned OLM version, without building anything. */
export const pinnedOlmVersion = (): string => pinnedVersion('OLM_VERSION');

/** Builds (or finds) OLM and opm; the build's progress goes to stderr, as `make tools` shows it. */
export async function olmTools(): Promise<OlmTools> {
  const script = path.join(HACK_DIR, 'tools.sh');
  if (!existsSync(script)) throw new OlmError(`${script} is missing: this runtime package is incomplete`);
  const built = await execa('bash', [script, 'olm', 'olm-validate'], { reject: false, stdout: 'inherit', stderr: 'inherit' });
  if (built.exitCode !== 0)
    throw new OlmError(
      `cannot build OLM's binaries (hack/tools.sh olm olm-validate exited ${String(built.exitCode)}; the lines above say why; it needs go >= 1.26)`,
    );
  const dir = async (c: string): Promise<string> => (await execa('bash', [script, 'path', c])).stdout.trim();
  const [olm, validate] = [await dir('olm'), await dir('olm-validate')];
  return {
    olm: path.join(olm, 'olm'),
    catalog: path.join(olm, 'catalog'),
    crds: path.join(olm, 'crds'),
    opm: path.join(validate, 'opm'),
    catalogServe: path.join(validate, 'catalog-serve'),
    version: pinnedOlmVersion(),
  };
}
