/**
 * The red-team tier's tally. Each attack appends one JSON line (which configuration, whether it
 * held) to a records file; the global teardown folds them into redteam-report.json and prints
 * "N attacks, N held".
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const REPORT_DIR = path.resolve(import.meta.dirname, '../.report');
const RECORDS = path.join(REPORT_DIR, 'records.jsonl');
export const REPORT_FILE = path.join(REPORT_DIR, 'redteam-report.json');

/**
 * `holds`: the attack must fail in this configuration (a crash, a starvation, a leak, or any attack
 * on the recommended configuration). `by-design`: docs/multi-tenancy.md says this configuration does
 * not protect against it (escalation and reads in the default configuration, reads and escalation
 * through the chart's own kinds in the scaffolded one); it is run and its
 * outcome shown, never counted as held.
 */
export type Expectation = 'holds' | 'by-design';

export interface AttackRecord {
  readonly id: string;
  readonly title: string;
  readonly config: string;
  readonly expectation: Expectation;
  /** The attack failed: the protection held. */
  readonly held: boolean;
  /** How the operator ended the CRs of the attack (`name: Type/Reason`). */
  readonly outcomes: readonly string[];
  /** The protection this attack waits for, when it has not landed (the test is `it.fails`). */
  readonly missing?: string;
  /** Why it did not hold, first line. */
  readonly why?: string;
}

export function recordAttack(r: AttackRecord): void {
  mkdirSync(REPORT_DIR, { recursive: true });
  appendFileSync(RECORDS, `${JSON.stringify(r)}\n`);
}

export function resetRecords(): void {
  rmSync(RECORDS, { force: true });
}

export interface RedteamReport {
  readonly finishedAt: string;
  readonly wallTimeMs: number;
  readonly attacks: number;
  readonly held: number;
  readonly byDesign: number;
  readonly byDesignSucceeded: number;
  readonly records: AttackRecord[];
}

function readRecords(): AttackRecord[] {
  if (!existsSync(RECORDS)) return [];
  return readFileSync(RECORDS, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as AttackRecord);
}

/** Pure: the figures of a run from its records. */
export function summarize(records: readonly AttackRecord[], wallTimeMs: number): RedteamReport {
  const must = records.filter((r) => r.expectation === 'holds');
  const byDesign = records.filter((r) => r.expectation === 'by-design');
  return {
    finishedAt: new Date().toISOString(),
    wallTimeMs,
    attacks: must.length,
    held: must.filter((r) => r.held).length,
    byDesign: byDesign.length,
    byDesignSucceeded: byDesign.filter((r) => !r.held).length,
    records: [...records],
  };
}

const verdict = (r: AttackRecord): string => {
  if (r.expectation === 'by-design') return r.held ? 'did not succeed' : 'succeeded (by design)';
  return r.held ? 'held' : 'NOT HELD';
};

const line = (r: AttackRecord): string =>
  [
    `  ${verdict(r).padEnd(21)} [${r.config}] ${r.id} ${r.title}${r.missing === undefined ? '' : ` (waits for: ${r.missing})`}`,
    ...(r.outcomes.length === 0 ? [] : [`${' '.repeat(26)}outcome: ${r.outcomes.join('; ')}`]),
    ...(r.why === undefined || r.held ? [] : [`${' '.repeat(26)}${r.why}`]),
  ].join('\n');

export function formatReport(r: RedteamReport): string {
  const configs = [...new Set(r.records.map((x) => x.config))];
  const perConfig = configs.map((c) => {
    const must = r.records.filter((x) => x.config === c && x.expectation === 'holds');
    return `  ${c}: ${must.length} attacks, ${must.filter((x) => x.held).length} held`;
  });
  const must = r.records.filter((x) => x.expectation === 'holds');
  const byDesign = r.records.filter((x) => x.expectation === 'by-design');
  return [
    '',
    '=== red-team tier report ===',
    ...must.map(line),
    ...perConfig,
    `${r.attacks} attacks, ${r.held} held`,
    '',
    `not protected by design in the default and scaffolded configurations (docs/multi-tenancy.md): ${r.byDesign} run, ${r.byDesignSucceeded} succeeded`,
    ...byDesign.map(line),
    `wall time: ${(r.wallTimeMs / 1000).toFixed(1)}s; report: ${path.relative(process.cwd(), REPORT_FILE)}`,
    '',
  ].join('\n');
}

export function writeReport(wallTimeMs: number): string {
  const report = summarize(readRecords(), wallTimeMs);
  mkdirSync(REPORT_DIR, { recursive: true });
  writeFileSync(REPORT_FILE, `${JSON.stringify(report, null, 2)}\n`);
  return formatReport(report);
}
