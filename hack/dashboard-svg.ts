/**
 * A picture of config/grafana/helm-operator.json for the docs (docs/images/dashboard.svg): each
 * panel's own queries evaluated by a real Prometheus, drawn where the dashboard places the panel.
 * Not Grafana's rendering (no Grafana in the tool cache): stat panels show their value, time series
 * their current value per series, tables their first rows.
 *
 *   node --import tsx hack/dashboard-svg.ts http://127.0.0.1:9090 docs/images/dashboard.svg
 *
 * test/integration/production/alert-rules.test.ts writes it from its scenarios' Prometheus when
 * DASHBOARD_SVG names the output file.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const DASHBOARD = path.join(ROOT, 'config/grafana/helm-operator.json');
/** Grafana's grid: 24 columns, rows of 30 px; drawn at this scale. */
const COLUMN = 50;
const ROW = 30;
const MAX_LINES = 5;

interface Panel {
  readonly type: string;
  readonly title: string;
  readonly gridPos: { readonly x: number; readonly y: number; readonly w: number; readonly h: number };
  readonly targets?: readonly { readonly expr: string; readonly legendFormat?: string }[];
}

interface Sample {
  readonly metric: Record<string, string>;
  readonly value: readonly [number, string];
}

const escape = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** Pure: a value as a dashboard shows it (integers plain, others to 3 significant digits). */
export const formatValue = (v: string): string => {
  const n = Number(v);
  if (!Number.isFinite(n)) return v;
  return Number.isInteger(n) ? String(n) : n.toPrecision(3);
};

/** Pure: a series' legend: the legendFormat filled in, else its labels. */
export const legend = (metric: Record<string, string>, format: string | undefined): string => {
  if (format !== undefined && format !== '' && format !== '__auto')
    return format.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, l: string) => metric[l] ?? '');
  const labels = Object.entries(metric).filter(([k]) => !['__name__', 'job', 'instance'].includes(k));
  return labels.length === 0 ? '' : labels.map(([k, v]) => `${k}=${v}`).join(' ');
};

/** Pure: one panel's SVG group from the samples of each of its targets. */
export function panelSvg(panel: Panel, results: readonly (readonly Sample[])[]): string {
  const { x, y, w, h } = panel.gridPos;
  const [px, py, pw, ph] = [x * COLUMN, y * ROW, w * COLUMN, h * ROW];
  const parts = [
    `<rect x="${px + 2}" y="${py + 2}" width="${pw - 4}" height="${ph - 4}" rx="4" fill="#181b1f" stroke="#2c3235"/>`,
    `<text x="${px + 10}" y="${py + 20}" fill="#ccccdc" font-size="13" font-weight="bold">${escape(panel.title)}</text>`,
  ];
  if (panel.type === 'stat') {
    const v = results[0]?.[0]?.value[1];
    parts.push(
      `<text x="${px + pw / 2}" y="${py + ph / 2 + 16}" fill="#73bf69" font-size="34" text-anchor="middle">${escape(v === undefined ? 'No data' : formatValue(v))}</text>`,
    );
  } else {
    const lines = results.flatMap((samples, i) =>
      samples.map((s) => {
        const name = legend(s.metric, panel.targets?.[i]?.legendFormat);
        return `${name === '' ? '' : `${name}: `}${formatValue(s.value[1])}`;
      }),
    );
    const shown = lines.length === 0 ? ['No data'] : lines.slice(0, MAX_LINES);
    if (lines.length > MAX_LINES) shown.push(`… ${lines.length - MAX_LINES} more`);
    shown.forEach((l, i) => {
      const maxChars = Math.floor((pw - 20) / 6.5);
      const text = l.length > maxChars ? `${l.slice(0, maxChars - 1)}…` : l;
      parts.push(
        `<text x="${px + 10}" y="${py + 42 + i * 16}" fill="#9fa7b3" font-size="11" font-family="monospace">${escape(text)}</text>`,
      );
    });
  }
  return `<g>${parts.join('')}</g>`;
}

/** The dashboard's `$controller` variable as "every controller". */
const withVariables = (expr: string): string => expr.replace(/\$controller/g, '.*');

async function instant(prometheus: string, expr: string): Promise<Sample[]> {
  const res = await fetch(`${prometheus}/api/v1/query?query=${encodeURIComponent(withVariables(expr))}`);
  if (res.status !== 200) throw new Error(`Prometheus answered ${res.status} to ${expr}: ${await res.text()}`);
  const body = (await res.json()) as { data: { resultType: string; result: Sample[] | [number, string] } };
  // A scalar (none in the dashboard today) as one unlabelled sample.
  return body.data.resultType === 'scalar' ? [{ metric: {}, value: body.data.result as [number, string] }] : (body.data.result as Sample[]);
}

/** The SVG of the dashboard with every query evaluated now by `prometheus` (its base URL). */
export async function dashboardSvg(prometheus: string, file = DASHBOARD): Promise<string> {
  const d = JSON.parse(await readFile(file, 'utf8')) as { title: string; panels: Panel[] };
  const groups: string[] = [];
  for (const p of d.panels) {
    if (p.type === 'row') continue;
    const results = await Promise.all((p.targets ?? []).map((t) => instant(prometheus, t.expr)));
    groups.push(panelSvg(p, results));
  }
  const width = 24 * COLUMN;
  const height = Math.max(...d.panels.map((p) => (p.gridPos.y + p.gridPos.h) * ROW)) + 40;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 -40 ${width} ${height}" font-family="sans-serif">`,
    `<rect x="0" y="-40" width="${width}" height="${height}" fill="#111217"/>`,
    `<text x="10" y="-14" fill="#ccccdc" font-size="16">${escape(d.title)} (config/grafana/helm-operator.json, queries evaluated by Prometheus)</text>`,
    ...groups,
    '</svg>',
    '',
  ].join('\n');
}

if (path.resolve(process.argv[1] ?? '') === import.meta.filename) {
  const [prometheus, out] = process.argv.slice(2);
  if (prometheus === undefined || out === undefined) {
    console.error('usage: node --import tsx hack/dashboard-svg.ts <prometheus-url> <out.svg>');
    process.exit(2);
  }
  await writeFile(out, await dashboardSvg(prometheus));
}
