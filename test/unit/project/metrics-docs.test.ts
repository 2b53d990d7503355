/**
 * docs/production.md's "Metrics" section is the reference of what the operator exports: every
 * metric its registry holds is named there in full (Node.js's default `process_*` and `nodejs_*`
 * as those two patterns), and every alert of config/prometheus/alerts.yaml has a row.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { registeredMetrics } from '../../support/prometheus.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const DEFAULT_PREFIXES = ['process_', 'nodejs_'];

/** The text of docs/production.md from its "## Metrics" heading to the next "## ". */
function metricsSection(): string {
  const doc = readFileSync(path.join(ROOT, 'docs/production.md'), 'utf8');
  const start = doc.indexOf('\n## Metrics\n');
  if (start < 0) throw new Error('docs/production.md has no "## Metrics" section');
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

describe('docs/production.md lists what the operator exports', () => {
  it('names every registered metric in full', async () => {
    const section = metricsSection();
    const names = (await registeredMetrics()).map((m) => m.name);
    expect(names.length).toBeGreaterThan(30);
    const own = names.filter((n) => !DEFAULT_PREFIXES.some((p) => n.startsWith(p)));
    expect(own.filter((n) => !section.includes(`\`${n}\``))).toEqual([]);
    for (const p of DEFAULT_PREFIXES) expect(section).toContain(`\`${p}*\``);
  });

  it('has a row for every alert', () => {
    const rules = parse(readFileSync(path.join(ROOT, 'config/prometheus/alerts.yaml'), 'utf8')) as {
      spec: { groups: { rules: { alert: string }[] }[] };
    };
    const alerts = rules.spec.groups.flatMap((g) => g.rules.map((r) => r.alert));
    expect(alerts.length).toBeGreaterThan(0);
    const section = metricsSection();
    expect(alerts.filter((a) => !section.includes(`| \`${a}\` |`))).toEqual([]);
  });
});
