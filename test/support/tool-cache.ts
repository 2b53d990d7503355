/** The project's tool cache (hack/tools.sh's CACHE_ROOT): $HELM_OPERATOR_CACHE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/helm-operator-ts. */
import os from 'node:os';
import path from 'node:path';

export function toolCacheDir(): string {
  return (
    process.env.HELM_OPERATOR_CACHE_DIR ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'helm-operator-ts')
  );
}
