/**
 * Every metric an alert rule or a dashboard query names is one the operator exports: compared with
 * the operator's own registry (every metric registered, histograms with their _bucket/_sum/_count).
 * promtool's checks of the same rules are in test/integration/production/alert-rules.test.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { OperatorMetrics } from '../../../src/telemetry/metrics.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const PREFIXES = ['helm_operator_', 'controller_runtime_', 'workqueue_', 'leader_election_', 'process_', 'nodejs_', 'rest_client_'];

/** The series names the operator exports. */
async function exported(): Promise<Set<string>> {
  const metrics = new OperatorMetrics({ version: 'test' });
  metrics.concurrencyLimit(4); // registered on its first value
  const names = new Set<string>();
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    names.add(m.name);
    if (String(m.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(m.name + s);
  }
  return names;
}

/** The metric names a PromQL expression uses: identifiers with an operator prefix, label names, strings and functions aside. */
export function metricNames(expr: string): string[] {
  const noStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const noMatchers = noStrings.replace(/\{[^}]*\}/g, '{}').replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  return [
    ...new Set([...noMatchers.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)].map((m) => m[0]).filter((n) => PREFIXES.some((p) => n.startsWith(p)))),
  ];
}

const unknown = (exprs: readonly string[], names: Set<string>): string[] => exprs.flatMap(metricNames).filter((n) => !names.has(n));

interface Rule {
  alert: string;
  expr: string;
}
const alertFile = (file: string): Rule[] =>
  (parse(readFileSync(path.join(ROOT, file), 'utf8')) as { spec: { groups: { rules: Rule[] }[] } }).spec.groups.flatMap((g) => g.rules);

interface Panel {
  targets?: { expr: string }[];
}
const dashboardExprs = (file: string): string[] => {
  const d = JSON.parse(readFileSync(path.join(ROOT, file), 'utf8')) as { panels: Panel[]; templating: { list: { definition?: string }[] } };
  return [
    ...d.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
    ...d.templating.list.flatMap((v) => (v.definition === undefined ? [] : [v.definition])),
  ];
};

describe('alert rules and dashboard queries', () => {
  it('finds the metric names of an expression, and an unknown one', async () => {
    expect(metricNames('sum by (verb) (increase(helm_operator_helm_executions_total{outcome="timeout"}[15m])) > 0')).toEqual([
      'helm_operator_helm_executions_total',
    ]);
    expect(metricNames('label_values(controller_runtime_reconcile_total, controller)')).toEqual(['controller_runtime_reconcile_total']);
    expect(unknown(['rate(helm_operator_reconciles_failed_total[5m])'], await exported())).toEqual([
      'helm_operator_reconciles_failed_total',
    ]);
  });

  it.each(['config/prometheus/alerts.yaml'])('%s names only exported metrics, each alert at least one', async (file) => {
    const names = await exported();
    const rules = alertFile(file);
    expect(rules.map((r) => r.alert)).toEqual([
      'HelmOperatorReleaseFailed',
      'HelmOperatorNotReady',
      'HelmOperatorDriftConflict',
      'HelmOperatorRolloutHalted',
      'HelmOperatorHelmTimeouts',
      'HelmOperatorQueueSaturated',
      'HelmOperatorLeaderChanges',
      'HelmOperatorNoSuccessfulReconcile',
    ]);
    for (const r of rules) expect(metricNames(r.expr).length, r.alert).toBeGreaterThan(0);
    expect(
      unknown(
        rules.map((r) => r.expr),
        names,
      ),
    ).toEqual([]);
  });

  it.each(['config/grafana/helm-operator.json'])('%s names only exported metrics', async (file) => {
    const exprs = dashboardExprs(file);
    expect(exprs.length).toBeGreaterThanOrEqual(15);
    expect(unknown(exprs, await exported())).toEqual([]);
  });
});
