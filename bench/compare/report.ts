/**
 * Turns the rounds into rows (median over rounds per operator; the ratio is the median of each
 * round's ours/operator-sdk, both measured back to back in that round), a text table with the
 * issue's targets, the JSON of everything measured, and an SVG chart of the ratios.
 *
 * The chart is drawn with Apache ECharts' server-side SVG renderer (no DOM, no browser): a
 * maintained charting library instead of hand-written SVG.
 */
import { init } from 'echarts';
import type { Limits } from './cgroup.js';
import type { LowerBound, OperatorRound, Phase } from './scenarios.js';

export interface CompareResult {
  readonly startedAt: string;
  readonly n: number;
  readonly concurrency: number | 'auto';
  readonly rounds: number;
  readonly idleSeconds: number;
  readonly tries: number;
  readonly machine: { readonly cpus: number; readonly memGiB: number; readonly uptimeBefore: string; readonly uptimeAfter: string };
  readonly versions: Readonly<Record<string, string>>;
  readonly ours: readonly OperatorRound[];
  readonly sdk: readonly OperatorRound[];
  readonly lowerBound: readonly LowerBound[];
  /** `--cpu-limit` / `--memory-limit`: each operator ran in a cgroup with these; absent: no limit. */
  readonly limits?: Limits;
}

export interface Row {
  readonly metric: string;
  readonly unit: string;
  readonly ours: number;
  readonly sdk: number;
  /** Median of the per-round ratios ours/operator-sdk. */
  readonly ratio: number;
  readonly lowerBound?: number;
  /** A target from issue 15, and whether the measurement meets it. */
  readonly target?: { readonly text: string; readonly met: boolean };
}

/** The middle value; for an even count the mean of the two middle ones (two rounds must not report their minimum). */
export function median(xs: readonly number[]): number {
  const sorted = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
}

export function percentile(xs: readonly number[], p: number): number {
  const sorted = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

const MiB = 1024 * 1024;

interface Metric {
  readonly metric: string;
  readonly unit: string;
  readonly of: (r: OperatorRound) => number;
  readonly lowerBound?: (l: LowerBound) => number;
  /** `n`: the run's number of CRs, for targets that depend on it. */
  readonly target?: (row: Omit<Row, 'target'>, n: number) => { text: string; met: boolean };
  /** Only in a run under `--cpu-limit` (the cgroup's counters). */
  readonly limited?: true;
}

const METRICS: readonly Metric[] = [
  {
    metric: 'converge: create N CRs → all Deployed=True',
    unit: 's',
    of: (r) => r.converge.seconds,
    lowerBound: (l) => l.applySeconds,
    target: (row) => ({
      text: 'ratio ≤ 1.0 and ≤ 2× lower bound',
      met: row.ratio <= 1 && row.lowerBound !== undefined && row.ours <= 2 * row.lowerBound,
    }),
  },
  { metric: 'CPU during converge (helm children included)', unit: 'CPU-s', of: (r) => r.converge.process.cpuSeconds },
  { metric: '  of which the operator process itself', unit: 'CPU-s', of: (r) => r.converge.process.rootCpuSeconds },
  { metric: '  CPU during converge, cgroup (cpuacct)', unit: 'CPU-s', of: (r) => r.converge.cgroup?.cpuSeconds ?? NaN, limited: true },
  { metric: '  throttled time during converge', unit: 's', of: (r) => r.converge.cgroup?.throttledSeconds ?? NaN, limited: true },
  { metric: '  throttled periods during converge', unit: '%', of: (r) => throttledShare(r.converge), limited: true },
  { metric: 'helm processes during converge', unit: 'proc', of: (r) => r.converge.helmExecutions ?? r.converge.process.children.helm ?? 0 },
  { metric: 'API requests during converge', unit: 'req', of: (r) => r.converge.apiRequests },
  {
    metric: 'delete all N CRs → CRs and objects gone',
    unit: 's',
    of: (r) => r.deleteAll.seconds,
    lowerBound: (l) => l.deleteSeconds,
    target: (row) => ({ text: 'ratio ≤ 0.8', met: row.ratio <= 0.8 }),
  },
  { metric: 'CPU during delete-all', unit: 'CPU-s', of: (r) => r.deleteAll.process.cpuSeconds },
  {
    metric: 'helm processes during delete-all',
    unit: 'proc',
    of: (r) => r.deleteAll.helmExecutions ?? r.deleteAll.process.children.helm ?? 0,
  },
  { metric: 'API requests during delete-all', unit: 'req', of: (r) => r.deleteAll.apiRequests },
  { metric: '  throttled time during delete-all', unit: 's', of: (r) => r.deleteAll.cgroup?.throttledSeconds ?? NaN, limited: true },
  {
    metric: 'cgroup memory peak (page cache included)',
    unit: 'MiB',
    of: (r) => Math.max(r.converge.cgroup?.memoryPeakBytes ?? NaN, r.deleteAll.cgroup?.memoryPeakBytes ?? NaN) / MiB,
    limited: true,
  },
  {
    metric: 'operator RSS when ready, before CRs',
    unit: 'MiB',
    of: (r) => r.rssReadyBytes / MiB,
    target: (row) => ({ text: 'ours ≤ 80 MiB', met: row.ours <= 80 }),
  },
  {
    metric: 'operator RSS peak during converge',
    unit: 'MiB',
    of: (r) => r.converge.process.rootRssPeakBytes / MiB,
    target: (row, n) =>
      n >= 1000
        ? { text: 'ratio ≤ 1.0 and ≤ 150 MiB (N ≥ 1000)', met: row.ratio <= 1 && row.ours <= 150 }
        : { text: 'ratio ≤ 1.0 (and ≤ 150 MiB at N=1000)', met: row.ratio <= 1 },
  },
  { metric: 'RSS peak during converge, with children', unit: 'MiB', of: (r) => r.converge.process.treeRssPeakBytes / MiB },
  { metric: 'operator RSS after idle', unit: 'MiB', of: (r) => r.idle.process.rootRssEndBytes / MiB },
  {
    metric: 'idle CPU',
    unit: 'CPU-s',
    of: (r) => r.idle.process.cpuSeconds,
    target: (row) => ({ text: 'ratio ≤ 0.1', met: row.ratio <= 0.1 }),
  },
  { metric: 'idle API requests', unit: 'req', of: (r) => r.idle.apiRequests },
  {
    metric: 'idle helm processes',
    unit: 'proc',
    of: (r) => r.idle.helmExecutions ?? r.idle.process.children.helm ?? 0,
    target: (row) => ({ text: 'ours = 0', met: row.ours === 0 }),
  },
  { metric: 'spec change → Deployment updated, p50', unit: 'ms', of: (r) => percentile(r.specChangeMs, 50) },
  { metric: 'spec change → Deployment updated, p95', unit: 'ms', of: (r) => percentile(r.specChangeMs, 95) },
  {
    metric: 'drift: Deployment deleted → back, p50',
    unit: 'ms',
    of: (r) => percentile(r.driftMs, 50),
    target: (row) => ({ text: 'ratio ≤ 0.3', met: row.ratio <= 0.3 }),
  },
  { metric: 'drift: Deployment deleted → back, p95', unit: 'ms', of: (r) => percentile(r.driftMs, 95) },
];

/** Percent of the phase's CFS periods in which the quota ran out. */
function throttledShare(p: Phase): number {
  return p.cgroup === undefined || p.cgroup.periods === 0 ? NaN : (100 * p.cgroup.throttledPeriods) / p.cgroup.periods;
}

/** `1 CPU, 512 MiB`. */
export const limitText = (l: Limits): string => `${l.cpus} CPU, ${Math.round(l.memoryBytes / MiB)} MiB`;

export function rows(result: CompareResult): Row[] {
  return METRICS.filter((m) => m.limited !== true || result.limits !== undefined).map((m) => {
    const ours = result.ours.map(m.of);
    const sdk = result.sdk.map(m.of);
    const ratios = ours.map((o, i) => o / (sdk[i] ?? NaN));
    const base = {
      metric: m.metric,
      unit: m.unit,
      ours: median(ours),
      sdk: median(sdk),
      ratio: median(ratios),
      ...(m.lowerBound === undefined ? {} : { lowerBound: median(result.lowerBound.map(m.lowerBound)) }),
    };
    return { ...base, ...(m.target === undefined ? {} : { target: m.target(base, result.n) }) };
  });
}

const fmt = (x: number | undefined): string => {
  if (x === undefined || !Number.isFinite(x)) return '–';
  if (x === 0) return '0';
  const abs = Math.abs(x);
  return abs >= 100 ? x.toFixed(0) : abs >= 10 ? x.toFixed(1) : x.toFixed(2);
};

/** A Markdown table, so the same text goes to the terminal and to docs/benchmarks.md. */
export function table(result: CompareResult): string {
  const lines = [
    `N=${result.n}, concurrency ${result.concurrency === 'auto' ? 'auto (ours self-tuned, operator-sdk its default 2)' : result.concurrency}, ${result.rounds} interleaved round(s), idle ${result.idleSeconds} s, ${result.tries} tries for latencies` +
      (result.limits === undefined
        ? ''
        : `; each operator limited to ${limitText(result.limits)} (a cgroup, helm children included; the control plane outside it)`),
    '',
    '| metric | unit | ours | operator-sdk | ratio | lower bound | target |',
    '|---|---|---:|---:|---:|---:|---|',
  ];
  for (const r of rows(result)) {
    const target = r.target === undefined ? '' : `${r.target.met ? 'met' : 'MISSED'}: ${r.target.text}`;
    lines.push(`| ${r.metric} | ${r.unit} | ${fmt(r.ours)} | ${fmt(r.sdk)} | ${fmt(r.ratio)}× | ${fmt(r.lowerBound)} | ${target} |`);
  }
  return lines.join('\n');
}

/** Horizontal bars of ours/operator-sdk per metric (log scale: 0.05× and 20× are equally far from 1). */
export function svgChart(result: CompareResult): string {
  const data = rows(result)
    .filter((r) => Number.isFinite(r.ratio) && r.ratio > 0)
    .reverse();
  const chart = init(null, null, { renderer: 'svg', ssr: true, width: 900, height: 80 + data.length * 28 });
  chart.setOption({
    animation: false,
    title: {
      text: `ours ÷ operator-sdk helm-operator, N=${result.n}${result.limits === undefined ? '' : `, each limited to ${limitText(result.limits)}`} (< 1 is better)`,
      left: 'center',
      textStyle: { fontSize: 14 },
    },
    grid: { left: 330, right: 60, top: 40, bottom: 30 },
    xAxis: { type: 'log', logBase: 10, min: 0.01, max: 10, axisLabel: { formatter: '{value}×' } },
    yAxis: { type: 'category', data: data.map((r) => r.metric), axisLabel: { fontSize: 11 } },
    series: [
      {
        type: 'bar',
        data: data.map((r) => ({
          value: Math.min(10, Math.max(0.01, r.ratio)),
          itemStyle: { color: r.ratio <= 1 ? '#3a8f3a' : '#c0504d' },
        })),
        label: { show: true, position: 'right', formatter: (p: { dataIndex: number }) => `${fmt(data[p.dataIndex]?.ratio)}×` },
        markLine: {
          symbol: 'none',
          silent: true,
          data: [{ xAxis: 1 }],
          lineStyle: { color: '#333', type: 'dashed' },
          label: { show: false },
        },
      },
    ],
  });
  const svg = chart.renderToSVGString();
  chart.dispose();
  return svg;
}
