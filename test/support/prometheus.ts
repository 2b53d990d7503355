import { OperatorMetrics } from '../../src/telemetry/metrics.js';
import { ShardMetrics } from '../../src/telemetry/shard-metrics.js';

/** Every sample of `name` in Prometheus text output whose labels include `labels`. */
function samples(text: string, name: string, labels: Record<string, string>): number[] {
  const out: number[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    const got = new Map([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l): [string, string] => [l[1] ?? '', l[2] ?? '']));
    if (Object.entries(labels).every(([k, v]) => got.get(k) === v)) out.push(Number(m[3]));
  }
  return out;
}

/** The value of one sample in Prometheus text output; undefined when the series is absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return samples(text, name, labels)[0];
}

/** The sum of every series of `name` whose labels include `labels` (0 when there is none). */
export function total(text: string, name: string, labels: Record<string, string> = {}): number {
  return samples(text, name, labels).reduce((a, b) => a + b, 0);
}

/**
 * Every metric the operator registers, by name and type: a fresh {@link OperatorMetrics} registry
 * with what registers later added (`helm_operator_concurrency_limit` on its first value, sharding's
 * metrics with `--sharding`), so nothing the operator can export is missing.
 */
export async function registeredMetrics(): Promise<{ name: string; type: string }[]> {
  const metrics = new OperatorMetrics({ version: 'test' });
  metrics.concurrencyLimit(4);
  new ShardMetrics(metrics.registry).owned(0);
  return (await metrics.registry.getMetricsAsJSON()).map((m) => ({ name: m.name, type: String(m.type) }));
}

/** The series names a scrape can hold: each metric's name, and a histogram's `_bucket`, `_sum` and `_count`. */
export async function exportedSeriesNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const m of await registeredMetrics()) {
    names.add(m.name);
    if (m.type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(m.name + s);
  }
  return names;
}
