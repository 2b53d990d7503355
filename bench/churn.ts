/**
 * Churn (issue 28): the same N CRs of one namespace created, converged, deleted all at once and
 * created again, cycle after cycle, against our operator run as the image runs it (the bundled
 * executable with the image's node flags).
 *
 *   npm run bench -- --churn [--n 100] [--cycles 8] [--concurrency 2] [--settle-seconds 10] [--out DIR] [--keep-cluster]
 *                            [--heap-snapshots]
 *
 * After each cycle, once every CR is gone: the release Secrets and the Deployments and Services
 * left in the namespace (all must be 0: a CR's finalizer comes off only after its release is
 * uninstalled), and the operator's RSS after `--settle-seconds` of quiet, next to its RSS after the
 * first cycle (the reference): per-CR state that outlived its CR would grow it cycle after cycle.
 * Writes churn-N<n>.json and churn-N<n>.md into --out (default .cache/bench-churn).
 * --heap-snapshots: the operator also writes a V8 heap snapshot after each cycle (SIGUSR2, after a
 * full GC, before RSS is read) into its work directory, to compare what survived the cycles.
 */
import { readdir, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { HttpMethod } from '@kubernetes/client-node';
import { RawClient, resourcePath } from '../src/k8s/raw-client.js';
import { mapBounded } from '../src/runtime/bounded.js';
import { isDeployed, NamespaceWatch, NGINX } from './compare/cluster.js';
import { prepare, positive } from './compare/main.js';
import { startOperator, sumCounter } from './compare/operators.js';
import { createNamespace, crName, deleteNamespace, SPEC } from './compare/scenarios.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const MiB = 1024 * 1024;

const say = (msg: string): void => {
  process.stderr.write(`[bench-churn ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};

interface Cycle {
  readonly cycle: number;
  readonly convergeSeconds: number;
  readonly deleteSeconds: number;
  readonly releasesLeft: number;
  readonly objectsLeft: number;
  readonly rssAfterBytes: number;
  readonly rssPeakBytes: number;
  /** V8's own figures at the same moment (prom-client's nodejs_* gauges): what of RSS is the JS heap. */
  readonly heapUsedBytes: number;
  readonly heapTotalBytes: number;
  readonly externalBytes: number;
}

interface ChurnResult {
  readonly startedAt: string;
  readonly n: number;
  readonly concurrency: number | 'auto';
  readonly settleSeconds: number;
  readonly machine: { readonly cpus: number; readonly memGiB: number };
  readonly nodeOptions: string;
  readonly rssReadyBytes: number;
  readonly cycles: readonly Cycle[];
}

export async function churn(argv: readonly string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: [...argv],
    options: {
      churn: { type: 'boolean' },
      n: { type: 'string', default: '100' },
      cycles: { type: 'string', default: '8' },
      concurrency: { type: 'string', default: '2' },
      'settle-seconds': { type: 'string', default: '10' },
      out: { type: 'string', default: path.join(ROOT, '.cache/bench-churn') },
      'keep-cluster': { type: 'boolean', default: false },
      'heap-snapshots': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const n = positive('n', a.n);
  const cycles = positive('cycles', a.cycles);
  const settleSeconds = positive('settle-seconds', a['settle-seconds']);
  const p = await prepare({
    ns: [n],
    rounds: 1,
    concurrency: positive('concurrency', a.concurrency),
    idleSeconds: settleSeconds,
    tries: 0,
    out: a.out,
    only: 'ours',
    serviceCidr: process.env.SERVICE_CIDR ?? (n > 200 ? '10.0.0.0/16' : ''),
    keepCluster: a['keep-cluster'],
  });
  const ns = await createNamespace(p.scenario, 'churn');
  const snapshots = a['heap-snapshots'];
  const setup = snapshots ? { ...p.setup, oursNodeOptions: [...p.setup.oursNodeOptions, '--heapsnapshot-signal=SIGUSR2'] } : p.setup;
  const op = await startOperator('ours', ns, setup);
  const raw = p.scenario.kc.makeApiClient(RawClient);
  const crs = resourcePath({ ...NGINX, namespace: ns });
  const count = async (group: string, plural: string, labelSelector?: string): Promise<number> => {
    const list = (await raw.request(HttpMethod.GET, resourcePath({ group, version: 'v1', plural, namespace: ns }), {
      ...(labelSelector === undefined ? {} : { query: { labelSelector } }),
    })) as { items?: unknown[] };
    return list.items?.length ?? 0;
  };
  const watch = new NamespaceWatch(p.scenario.kc, ns);
  await watch.start();
  const timeoutMs = Math.max(600_000, n * 9_000);
  const result: ChurnResult = {
    startedAt: new Date().toISOString(),
    n,
    concurrency: p.setup.concurrency,
    settleSeconds,
    machine: { cpus: os.cpus().length, memGiB: Math.round(os.totalmem() / 1024 ** 3) },
    nodeOptions: p.setup.oursNodeOptions.join(' '),
    rssReadyBytes: (await op.sampler.sample())?.rootRssBytes ?? NaN,
    cycles: [],
  };
  const all = Array.from({ length: n }, (_, i) => crName(i + 1));
  try {
    for (let c = 1; c <= cycles; c++) {
      const from = await op.sampler.mark();
      const t0 = performance.now();
      await mapBounded(all, 10, async (name) => {
        await raw.request(HttpMethod.POST, crs, {
          body: { apiVersion: `${NGINX.group}/${NGINX.version}`, kind: NGINX.kind, metadata: { name }, spec: SPEC },
        });
      });
      await watch.until(`${n} CRs Deployed=True`, () => watch.crs.list().filter(isDeployed).length === n, timeoutMs);
      const t1 = performance.now();
      // One request marks them all, as `kubectl delete nginx --all` does.
      await raw.request(HttpMethod.DELETE, crs);
      await watch.until('every CR to be gone', () => watch.crs.list().length === 0, timeoutMs);
      const t2 = performance.now();
      const releasesLeft = await count('', 'secrets', 'owner=helm');
      await new Promise((r) => setTimeout(r, settleSeconds * 1000));
      if (snapshots) await heapSnapshot(op.pid, path.join(setup.workDir, `ours-${ns}`), c);
      const objectsLeft = (await count('apps', 'deployments')) + (await count('', 'services'));
      const to = await op.sampler.mark();
      const window = op.sampler.window(from, to);
      const metrics = (await op.metrics()) ?? '';
      const cycle: Cycle = {
        cycle: c,
        convergeSeconds: (t1 - t0) / 1000,
        deleteSeconds: (t2 - t1) / 1000,
        releasesLeft,
        objectsLeft,
        rssAfterBytes: window.rootRssEndBytes,
        rssPeakBytes: window.rootRssPeakBytes,
        heapUsedBytes: sumCounter(metrics, 'nodejs_heap_size_used_bytes'),
        heapTotalBytes: sumCounter(metrics, 'nodejs_heap_size_total_bytes'),
        externalBytes: sumCounter(metrics, 'nodejs_external_memory_bytes'),
      };
      (result.cycles as Cycle[]).push(cycle);
      say(
        `cycle ${c}/${cycles}: converge ${cycle.convergeSeconds.toFixed(1)} s, delete ${cycle.deleteSeconds.toFixed(1)} s, releases left ${releasesLeft}, objects left ${objectsLeft}, RSS ${(cycle.rssAfterBytes / MiB).toFixed(1)} MiB`,
      );
      await write(a.out, result);
      if (releasesLeft > 0) {
        say(`releases were left behind: stopping (the next cycle's CRs would adopt them)`);
        break;
      }
    }
  } finally {
    await watch.stop();
    await op.stop();
    await deleteNamespace(p.scenario, ns);
    await p.done();
  }
  process.stdout.write(`\n${table(result)}\n`);
}

/** Signals the operator to write a heap snapshot and waits (up to 2 min) until the file is complete. */
async function heapSnapshot(pid: number, dir: string, cycle: number): Promise<void> {
  const before = new Set(await readdir(dir));
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 120_000;
  let last = -1;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1_000));
    const file = (await readdir(dir)).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (file === undefined) continue;
    const { size } = await stat(path.join(dir, file));
    if (size > 0 && size === last) {
      say(`cycle ${cycle}: heap snapshot ${path.join(dir, file)} (${(size / MiB).toFixed(1)} MiB)`);
      return;
    }
    last = size;
  }
  say(`cycle ${cycle}: no heap snapshot within 2 min`);
}

function table(r: ChurnResult): string {
  const first = r.cycles[0]?.rssAfterBytes ?? NaN;
  const rows = r.cycles.map(
    (c) =>
      `| ${c.cycle} | ${c.convergeSeconds.toFixed(1)} s | ${c.deleteSeconds.toFixed(1)} s | ${c.releasesLeft} | ${c.objectsLeft} | ${(c.rssAfterBytes / MiB).toFixed(1)} MiB | ${(c.rssAfterBytes / first).toFixed(2)}× | ${(c.rssPeakBytes / MiB).toFixed(1)} MiB | ${(c.heapUsedBytes / MiB).toFixed(1)} / ${(c.heapTotalBytes / MiB).toFixed(1)} MiB | ${(c.externalBytes / MiB).toFixed(1)} MiB |`,
  );
  return [
    `N=${r.n} CRs, ${r.cycles.length} cycles, concurrency ${r.concurrency}, node ${r.nodeOptions}; RSS when ready ${(r.rssReadyBytes / MiB).toFixed(1)} MiB; RSS read ${r.settleSeconds} s after every CR is gone`,
    '',
    '| cycle | converge | delete all | releases left | Deployments + Services left | RSS after | vs cycle 1 | RSS peak | JS heap used / total | external |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

async function write(out: string, r: ChurnResult): Promise<void> {
  const base = path.join(out, `churn-N${r.n}`);
  await writeFile(`${base}.json`, `${JSON.stringify(r, null, 2)}\n`);
  await writeFile(`${base}.md`, `${table(r)}\n`);
}
