/**
 * The strings a revision's stored values (helm's `config`, user-supplied) hold at given paths, for
 * redaction only (docs/adr/0107): a plan hides a live field that still holds a value the deployed
 * revision took from a Secret. The values themselves never leave src/helm: only the scalars at the
 * paths the revision recorded as secret, as text, for a Redactor to look for.
 */
import { getValuesArgs } from '../args.js';
import { releaseContext, type ReadOptions, type VerbContext } from '../call.js';
import { parsed } from '../error-mapping.js';
import { HelmOutputError } from '../parse.js';
import { leafStringsAt, type ValueLeafPath } from '../../util/value-leaves.js';

/** `helm get values --revision N -o json`, reduced to the strings at `paths`; none for no paths (no helm run). */
export async function storedStrings(
  h: VerbContext,
  at: { readonly release: string; readonly namespace: string; readonly revision: number; readonly paths: readonly ValueLeafPath[] },
  opts: ReadOptions = {},
): Promise<string[]> {
  if (at.paths.length === 0) return [];
  await h.major(opts.signal);
  const ctx = releaseContext({ ...opts, release: at.release, namespace: at.namespace }, undefined);
  const stdout = await h.runner.run('get-values', getValuesArgs(at), ctx);
  return parsed('get-values', () => {
    let doc: unknown;
    try {
      doc = JSON.parse(stdout.trim() === '' ? 'null' : stdout);
    } catch {
      throw new HelmOutputError('get values: not JSON');
    }
    return leafStringsAt(doc ?? {}, at.paths);
  });
}
