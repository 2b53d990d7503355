/**
 * The chaos tier's figures. Test files append one JSON line per fault or fuzz batch to a records
 * file; the global teardown folds them into chaos-report.json and prints the table.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { FINDINGS, type Finding } from '../findings.js';

export const REPORT_DIR = path.resolve(import.meta.dirname, '../.report');
const RECORDS = path.join(REPORT_DIR, 'records.jsonl');
export const REPORT_FILE = path.join(REPORT_DIR, 'chaos-report.json');

type RecordLine =
  | { type: 'fault'; kind: string; survived: boolean; recoveryMs: number | null }
  | { type: 'fuzz'; kind: string; inputs: number; failures: number };

function append(line: RecordLine): void {
  mkdirSync(REPORT_DIR, { recursive: true });
  appendFileSync(RECORDS, `${JSON.stringify(line)}\n`);
}

/** One injected fault: whether the verdict held afterwards, and how long recovery took. */
export function recordFault(kind: string, survived: boolean, recoveryMs: number | null): void {
  append({ type: 'fault', kind, survived, recoveryMs });
}

/** A batch of fuzzed inputs of one kind, and how many broke the property. */
export function recordFuzz(kind: string, inputs: number, failures = 0): void {
  append({ type: 'fuzz', kind, inputs, failures });
}

export function resetRecords(): void {
  rmSync(RECORDS, { force: true });
}

export interface FaultFigures {
  readonly kind: string;
  readonly injected: number;
  readonly survived: number;
  readonly recoveryP50Ms: number | null;
  readonly recoveryMaxMs: number | null;
}

export interface ChaosReport {
  readonly finishedAt: string;
  readonly wallTimeMs: number;
  readonly faults: FaultFigures[];
  readonly fuzz: { kind: string; inputs: number; failures: number }[];
  readonly findings: readonly Finding[];
}

const p50 = (xs: number[]): number | null => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)] ?? null;
};

export function summarize(wallTimeMs: number): ChaosReport {
  const lines = existsSync(RECORDS)
    ? readFileSync(RECORDS, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as RecordLine)
    : [];
  const faults = new Map<string, { injected: number; survived: number; ms: number[] }>();
  const fuzz = new Map<string, { inputs: number; failures: number }>();
  for (const l of lines) {
    if (l.type === 'fault') {
      const f = faults.get(l.kind) ?? { injected: 0, survived: 0, ms: [] };
      f.injected++;
      if (l.survived) f.survived++;
      if (l.recoveryMs !== null) f.ms.push(l.recoveryMs);
      faults.set(l.kind, f);
    } else {
      const f = fuzz.get(l.kind) ?? { inputs: 0, failures: 0 };
      f.inputs += l.inputs;
      f.failures += l.failures;
      fuzz.set(l.kind, f);
    }
  }
  return {
    finishedAt: new Date().toISOString(),
    wallTimeMs,
    faults: [...faults].map(([kind, f]) => ({
      kind,
      injected: f.injected,
      survived: f.survived,
      recoveryP50Ms: p50(f.ms),
      recoveryMaxMs: f.ms.length === 0 ? null : Math.max(...f.ms),
    })),
    fuzz: [...fuzz].map(([kind, f]) => ({ kind, ...f })),
    findings: FINDINGS,
  };
}

const secs = (ms: number | null): string => (ms === null ? '-' : `${(ms / 1000).toFixed(1)}s`);

export function formatReport(r: ChaosReport): string {
  const rows = [
    ['fault kind', 'injected', 'survived', 'recovery p50', 'recovery max'],
    ...r.faults.map((f) => [f.kind, String(f.injected), String(f.survived), secs(f.recoveryP50Ms), secs(f.recoveryMaxMs)]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const table = rows.map((row) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')).join('\n');
  const total = r.faults.reduce((a, f) => ({ injected: a.injected + f.injected, survived: a.survived + f.survived }), {
    injected: 0,
    survived: 0,
  });
  const fuzz = r.fuzz.map((f) => `  ${f.kind}: ${f.inputs} inputs, ${f.failures} property failures`).join('\n');
  const findings = r.findings.map((f) => `  - ${f.title}\n    fix: ${f.fix}\n    regression test: ${f.regressionTest}`).join('\n');
  return [
    '',
    '=== chaos tier report ===',
    table,
    `total: ${total.injected} faults injected, ${total.survived} survived`,
    'inputs fuzzed:',
    fuzz === '' ? '  (none)' : fuzz,
    `failures found and fixed: ${r.findings.length}`,
    findings,
    `wall time: ${secs(r.wallTimeMs)}; report: ${path.relative(process.cwd(), REPORT_FILE)}`,
    '',
  ].join('\n');
}

export function writeReport(wallTimeMs: number): string {
  const report = summarize(wallTimeMs);
  mkdirSync(REPORT_DIR, { recursive: true });
  writeFileSync(REPORT_FILE, `${JSON.stringify(report, null, 2)}\n`);
  return formatReport(report);
}
