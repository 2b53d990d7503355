/** What every chaos scenario shares: a seeded random source, the operator under test, the wait for a helm child. */
import { CoreV1Api, PatchStrategy, setHeaderOptions, type CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { ensureCrd, NGINX, NGINX_CHART } from '../../support/operator.js';
import { spawnOperator, watchEntry, watchesFile, type OperatorProcess } from '../../integration/production/support.js';
import { mulberry32 } from '../../support/mulberry32.js';
import { helmChildren } from './processes.js';

/** mulberry32: a small seeded PRNG, so a failing run replays with CHAOS_SEED. */
export function seededRandom(salt: number): () => number {
  return mulberry32(Number(process.env.CHAOS_SEED ?? 13) * 7919 + salt);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface StartOptions {
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** Wait for the controllers to start (false for a standby replica). Default true. */
  readonly ready?: boolean;
}

export interface OperatorUnderTest {
  readonly file: string;
  start(o?: StartOptions): Promise<OperatorProcess>;
  remove(): Promise<void>;
}

/**
 * The nginx sample chart (`extraWatch`: more lines for its watches entry, e.g. overrideValues), run
 * by the real `helm-operator run` over `namespaces`, with a long resync so an idle operator idles.
 */
export async function operatorUnderTest(kc: KubeConfig, namespaces: readonly string[], extraWatch = ''): Promise<OperatorUnderTest> {
  await ensureCrd(kc, NGINX);
  const w = await watchesFile(watchEntry(NGINX, NGINX_CHART, extraWatch));
  return {
    file: w.file,
    start: async ({ args = [], env = {}, ready = true } = {}) => {
      const p = spawnOperator({
        watchesFile: w.file,
        namespace: namespaces.join(','),
        args: ['--reconcile-period', '10m', '--max-concurrent-reconciles', '4', ...args],
        env,
      });
      if (ready) await p.waitForLog('the controllers to start', (l) => l.msg === 'All controllers started and synced', 60_000);
      return p;
    },
    remove: w.remove,
  };
}

/** Waits (polling /proc every few ms) for the operator to run `helm <verb>`; returns its pid. */
export async function helmRunning(operatorPid: number, verb: string, timeoutMs = 30_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const h = helmChildren(operatorPid).find((c) => c.verb === verb);
    if (h !== undefined) return h.pid;
    await sleep(5);
  }
  throw new Error(`the operator ran no helm ${verb} within ${timeoutMs} ms`);
}

export async function createNamespaces(kc: KubeConfig, names: readonly string[]): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await Promise.all(names.map((name) => core.createNamespace({ body: { metadata: { name } } })));
}

/**
 * Replaces a CR's whole spec with a JSON patch: no resourceVersion precondition (the operator's
 * status writes bump it all the time) and no merge, so keys absent from `spec` are gone.
 */
export async function replaceSpec(custom: CustomObjectsApi, namespace: string, name: string, spec: unknown): Promise<void> {
  await custom.patchNamespacedCustomObject(
    {
      group: NGINX.group,
      version: NGINX.version,
      plural: NGINX.plural,
      namespace,
      name,
      body: [{ op: 'replace', path: '/spec', value: spec }],
    },
    setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
  );
}
