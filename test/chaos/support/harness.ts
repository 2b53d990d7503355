/** What every chaos scenario shares: a seeded random source, the operator under test, the wait for a helm child. */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { ensureCrd, NGINX, NGINX_CHART } from '../../support/operator.js';
import { spawnOperator, watchEntry, watchesFile, type OperatorProcess } from '../../integration/production/support.js';
import { helmChildren } from './processes.js';

/** mulberry32: a small seeded PRNG, so a failing run replays with CHAOS_SEED. */
export function seededRandom(salt: number): () => number {
  let a = (Number(process.env.CHAOS_SEED ?? 13) * 7919 + salt) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface OperatorUnderTest {
  readonly file: string;
  start(extraArgs?: readonly string[], env?: Readonly<Record<string, string>>): Promise<OperatorProcess>;
  remove(): Promise<void>;
}

/**
 * The nginx sample chart under `watches` (extra lines for the entry, e.g. overrideValues), run by
 * the real `helm-operator run` over every namespace, with a long resync so an idle operator is idle.
 */
export async function operatorUnderTest(kc: KubeConfig, extraWatch = ''): Promise<OperatorUnderTest> {
  await ensureCrd(kc, NGINX);
  const w = await watchesFile(watchEntry(NGINX, NGINX_CHART, extraWatch));
  return {
    file: w.file,
    start: async (extraArgs = [], env = {}) => {
      const p = spawnOperator({
        watchesFile: w.file,
        namespace: '',
        args: ['--reconcile-period', '10m', '--max-concurrent-reconciles', '4', ...extraArgs],
        env,
      });
      await p.waitForLog('the controllers to start', (l) => l.msg === 'All controllers started and synced', 60_000);
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

