/**
 * Every metric an alert rule or a dashboard query names is one the operator exports: compared with
 * the operator's own registry (every metric registered, histograms with their _bucket/_sum/_count),
 * in config/ and in the copies `init` writes into a new project.
 * promtool's checks of the same rules are in test/integration/production/alert-rules.test.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { exportedSeriesNames as exported } from '../../support/prometheus.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const PREFIXES = ['helm_operator_', 'controller_runtime_', 'workqueue_', 'leader_election_', 'process_', 'nodejs_', 'rest_client_'];

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
  type?: string;
  targets?: { expr: string }[];
  /** A row's panels. */
  panels?: Panel[];
}
const allPanels = (panels: readonly Panel[]): Panel[] => panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
const dashboard = (file: string): { panels: Panel[]; templating: { list: { definition?: string }[] } } =>
  JSON.parse(readFileSync(path.join(ROOT, file), 'utf8')) as { panels: Panel[]; templating: { list: { definition?: string }[] } };
const dashboardExprs = (file: string): string[] => {
  const d = dashboard(file);
  return [
    ...allPanels(d.panels).flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
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

  it.each(['config/prometheus/alerts.yaml', 'src/scaffold/templates/files/config/prometheus/alerts.yaml.tmpl'])(
    '%s names only exported metrics, each alert at least one',
    async (file) => {
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
    },
  );

  it.each(['config/grafana/helm-operator.json', 'src/scaffold/templates/files/config/grafana/helm-operator.json.tmpl'])(
    '%s names only exported metrics, each query and panel at least one',
    async (file) => {
      const exprs = dashboardExprs(file);
      expect(exprs.length).toBeGreaterThanOrEqual(15);
      expect(unknown(exprs, await exported())).toEqual([]);
      // A query whose metric name lost its prefix (a typo) names none: it would pass the check above.
      expect(exprs.filter((e) => metricNames(e).length === 0)).toEqual([]);
      const empty = allPanels(dashboard(file).panels).filter((p) => p.type !== 'row' && (p.targets ?? []).length === 0);
      expect(empty).toEqual([]);
    },
  );
});
