import { uninstallArgs } from '../args.js';
import { writerCall, type CallOptions, type VerbContext } from '../call.js';
import { isHelmError } from '../errors.js';
import { uninstalledRelease } from '../parse.js';

export interface UninstallOptions extends CallOptions {
  readonly release: string;
  /** More releases of the namespace, uninstalled by the same helm process after `release` (helm stops at the first failure). */
  readonly also?: readonly string[];
  readonly namespace: string;
  /** Wait until the resources are gone. Default false. */
  readonly wait?: boolean;
  readonly keepHistory?: boolean;
  readonly description?: string;
  /**
   * Called with each release as helm reports it uninstalled, while the process goes on with the
   * next ones (a batch's callers can finish their CRs meanwhile). Not called for a release that
   * was not there.
   */
  readonly onUninstalled?: (release: string) => void;
}

/** `helm uninstall`; a release that does not exist is `{ found: false }`, not an error. */
export async function uninstall(h: VerbContext, opts: UninstallOptions): Promise<{ found: boolean }> {
  const { major, timeoutMs, ctx } = await writerCall(h, opts);
  try {
    const { onUninstalled } = opts;
    const onLine =
      onUninstalled === undefined
        ? undefined
        : (line: string): void => {
            const release = uninstalledRelease(line);
            if (release !== undefined) onUninstalled(release);
          };
    await h.runner.run('uninstall', uninstallArgs({ ...opts, timeoutMs }, major), {
      ...ctx,
      releases: 1 + (opts.also?.length ?? 0),
      ...(onLine ? { onLine } : {}),
    });
    return { found: true };
  } catch (err) {
    if (isHelmError(err, 'ReleaseNotFound')) return { found: false };
    throw err;
  }
}
