/**
 * What `approval` costs (issue 47, docs/plans.md "Cost"): our operator with the watch's approval
 * `never` (no planning at all) against `risky`, in the same invocation, through the comparison's
 * scenarios (bench/compare/scenarios.ts). Planning is work only when something is pending: a CR in
 * sync makes no dry run and runs no helm, so the idle phase's CPU, API requests and helm processes
 * should not move; a spec change (not risky on helm-charts/nginx) plans once and goes on.
 *
 *   npm run bench -- --approval-idle [--n 20] [--idle-seconds 30] [--tries 2] [--rounds 1]
 *                                    [--approval never,risky] [--concurrency 2] [--out DIR] [--keep-cluster]
 *
 * Round r runs the settings in the given order when r is even, reversed when odd, each in a fresh
 * namespace. Writes approval-idle-N<n>.json and .md into --out (default .cache/bench-approval).
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { prepare, positive, type Prepared } from './compare/main.js';
import { startOperator } from './compare/operators.js';
import { createNamespace, deleteNamespace, runScenarios, type OperatorRound } from './compare/scenarios.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const APPROVALS = ['never', 'risky', 'always'] as const;
type Approval = (typeof APPROVALS)[number];

const say = (msg: string): void => {
  process.stderr.write(`[bench-approval ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};

function parseApprovals(v: string): Approval[] {
  const list = v.split(',').map((s) => s.trim());
  for (const a of list)
    if (!(APPROVALS as readonly string[]).includes(a))
      throw new Error(`--approval takes ${APPROVALS.join(', ')} (comma-separated), got "${a}"`);
  if (list.length < 2) throw new Error('--approval needs at least two settings to compare, e.g. never,risky');
  return list as Approval[];
}

interface Measured {
  readonly approval: Approval;
  readonly round: OperatorRound;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? (s[m] ?? NaN) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};

/** Per setting, the mean of its rounds; the ratio column is each setting against the first. */
export function table(results: readonly Measured[], order: readonly Approval[]): string {
  const mean = (a: Approval, f: (r: OperatorRound) => number): number => {
    const xs = results.filter((r) => r.approval === a).map((r) => f(r.round));
    return xs.reduce((s, x) => s + x, 0) / xs.length;
  };
  const rows: [string, string, (r: OperatorRound) => number, number][] = [
    ['idle CPU', 'CPU-s', (r) => r.idle.process.cpuSeconds, 2],
    ['idle API requests', 'req', (r) => r.idle.apiRequests, 0],
    ['idle helm processes', 'proc', (r) => r.idle.helmExecutions ?? NaN, 0],
    ['converge', 's', (r) => r.converge.seconds, 1],
    ['converge CPU', 'CPU-s', (r) => r.converge.process.cpuSeconds, 1],
    ['spec change (median)', 'ms', (r) => median(r.specChangeMs), 0],
    ['delete-all', 's', (r) => r.deleteAll.seconds, 1],
  ];
  const [first] = order;
  const ratio = (x: number, ref: number): string => (ref === 0 ? (x === 0 ? '1.00×' : '–') : `${(x / ref).toFixed(2)}×`);
  return [
    `| | unit | ${order.map((a) => `approval: ${a}`).join(' | ')} | ${order
      .slice(1)
      .map((a) => `${a} / ${first ?? ''}`)
      .join(' | ')} |`,
    `|---|---|${order.map(() => '---:').join('|')}|${order
      .slice(1)
      .map(() => '---:')
      .join('|')}|`,
    ...rows.map(([name, unit, f, digits]) => {
      const values = order.map((a) => mean(a, f));
      const ref = values[0] ?? NaN;
      return `| ${name} | ${unit} | ${values.map((v) => v.toFixed(digits)).join(' | ')} | ${values
        .slice(1)
        .map((v) => ratio(v, ref))
        .join(' | ')} |`;
    }),
  ].join('\n');
}

/** Our operator with the watch's `approval` set, through the scenarios, in a fresh namespace. */
async function oneSetting(p: Prepared, n: number, approval: Approval, label: string): Promise<OperatorRound> {
  const ns = await createNamespace(p.scenario, `bench-appr-${approval}`);
  say(`${label}: approval ${approval} in ${ns}, N=${n}`);
  const watchesExtra = approval === 'never' ? '' : `  approval: ${approval}\n`;
  const op = await startOperator('ours', ns, { ...p.setup, watchesExtra });
  try {
    const round = await runScenarios({ ...p.scenario, n }, op, ns);
    say(`  idle CPU ${round.idle.process.cpuSeconds.toFixed(2)} s, idle API requests ${round.idle.apiRequests}`);
    return round;
  } finally {
    await op.stop();
    await deleteNamespace(p.scenario, ns);
  }
}

export async function approvalIdle(argv: readonly string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: [...argv],
    options: {
      'approval-idle': { type: 'boolean' },
      n: { type: 'string', default: '20' },
      'idle-seconds': { type: 'string', default: '30' },
      tries: { type: 'string', default: '2' },
      rounds: { type: 'string', default: '1' },
      approval: { type: 'string', default: 'never,risky' },
      concurrency: { type: 'string', default: '2' },
      out: { type: 'string', default: path.join(ROOT, '.cache/bench-approval') },
      'keep-cluster': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const n = positive('n', a.n);
  const tries = positive('tries', a.tries);
  const rounds = positive('rounds', a.rounds);
  const order = parseApprovals(a.approval);
  if (2 * tries > n) throw new Error(`--n must be at least 2 × --tries (${2 * tries}): each latency try uses its own CR`);
  const out = path.resolve(a.out);
  await mkdir(out, { recursive: true });
  const uptime = async (): Promise<string> => (await run('uptime')).stdout.trim();
  const uptimeBefore = await uptime();
  const p = await prepare({
    ns: [n],
    rounds,
    concurrency: a.concurrency === 'auto' ? 'auto' : positive('concurrency', a.concurrency),
    idleSeconds: positive('idle-seconds', a['idle-seconds']),
    tries,
    out,
    only: 'ours',
    serviceCidr: process.env.SERVICE_CIDR ?? '',
    keepCluster: a['keep-cluster'],
  });
  const results: Measured[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      for (const approval of r % 2 === 0 ? order : [...order].reverse()) {
        results.push({ approval, round: await oneSetting(p, n, approval, `round ${r + 1}/${rounds}`) });
      }
    }
    const text = [
      `N=${n}, ${rounds} round(s), idle ${a['idle-seconds']} s, ${tries} spec-change tries; command: npm run bench -- ${argv.join(' ')}`,
      '',
      table(results, order),
      '',
      `machine: ${os.cpus().length} CPUs; before: ${uptimeBefore}; after: ${await uptime()}`,
    ].join('\n');
    const base = path.join(out, `approval-idle-N${n}`);
    await writeFile(`${base}.json`, `${JSON.stringify({ n, rounds, order, results }, null, 2)}\n`);
    await writeFile(`${base}.md`, `${text}\n`);
    process.stdout.write(`\n${text}\n\nwrote ${base}.{json,md}\n`);
  } finally {
    await p.done();
  }
}
