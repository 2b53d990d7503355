import { versionArgs } from '../args.js';
import { HelmError } from '../errors.js';
import { HelmOutputError, parseHelmVersion } from '../parse.js';
import type { HelmRunner } from '../runner.js';
import { READ_DEADLINE_MS } from '../timeouts.js';
import type { HelmVersion } from '../types.js';

/** `helm version`. Rejects with reason `HelmNotFound` for a missing binary or a helm older than 3.13. */
export async function version(runner: HelmRunner): Promise<HelmVersion> {
  const stdout = await runner.run('version', versionArgs(), { deadlineMs: READ_DEADLINE_MS });
  try {
    return parseHelmVersion(stdout);
  } catch (err) {
    const reason = err instanceof HelmOutputError ? err.message : String(err);
    throw new HelmError({ reason: 'HelmNotFound', verb: 'version', summary: `${runner.binary}: ${reason}` });
  }
}

/** The binary's version, detected once (concurrent callers share the run; a failure is not cached). */
export function versionOnce(runner: HelmRunner): () => Promise<HelmVersion> {
  let detected: Promise<HelmVersion> | undefined;
  return () => {
    detected ??= version(runner).catch((err: unknown) => {
      detected = undefined;
      throw err;
    });
    return detected;
  };
}
