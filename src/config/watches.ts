/**
 * watches.yaml: the list that maps each custom resource kind to the Helm chart that implements it.
 *
 * Field meanings follow operator-sdk's Helm operator, with deliberate differences:
 * - validation is strict: unknown keys, wrong types and bad values are errors (operator-sdk silently
 *   ignores unknown keys), and every problem is reported at once with file:line:column;
 * - `chart` may also be a `.tgz` archive, and a relative path resolves from the watches file's directory;
 * - `overrideValues` get `$VAR`/`${VAR}` expansion but no Go templates;
 * - `maxConcurrentReconciles` (from helm-operator-plugins) is honoured per watch;
 * - `dryRunOption: server` needs `confineToNamespace: true`: upgrades are decided by a fingerprint,
 *   not by a dry-run render, so the only render it can change is the confinement pre-flight.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type YAMLMap } from 'yaml';
import { ChartError, loadChartInfo, type ChartInfo } from './chart.js';
import { readOverrideValues } from './override-values.js';
import { readHealthChecks } from './health-checks.js';
import { readReleaseTest } from './release-test.js';
import { labelSelectorToString } from './selector.js';
import { readRollout } from './rollout-policy.js';
import { readDryRun, readTenancy } from './tenancy-fields.js';
import { readApproval } from './approval-fields.js';
import type { Watch } from './watch.js';
import {
  collectFields,
  type FieldNodes,
  readBoolean,
  readConflictPolicy,
  readCrdPolicy,
  readDriftIgnore,
  readGroup,
  readKind,
  readMaxConcurrent,
  readReconcilePeriod,
  readSelector,
  readString,
  readValuePaths,
  readVersion,
} from './watch-fields.js';
import {
  addProblem,
  byPosition,
  entryProblem,
  fail,
  gvkString,
  posLine,
  quote,
  WatchesError,
  yamlProblems,
  type EntryContext,
  type ParseContext,
} from './watches-problems.js';
import { deref, describe, scalarValue } from './yaml-nodes.js';

export interface ParseWatchesOptions {
  /** Shown in messages and recorded in `Watch.source.file`. */
  readonly file: string;
  /** For `$VAR` expansion in overrideValues; defaults to `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
  /** Where relative chart paths resolve from; defaults to the directory of `file`. */
  readonly baseDir?: string;
}

// ---------------------------------------------------------------------------------------------
// Entries

interface Draft {
  readonly index: number;
  readonly line: number;
  readonly node: YAMLMap;
  readonly ctx: EntryContext;
  readonly group: string;
  readonly version?: string;
  readonly kind?: string;
  readonly chartPath?: string;
  readonly rest: Omit<Watch, 'group' | 'version' | 'kind' | 'chart' | 'source'>;
}

function entryGvk(doc: Document, node: YAMLMap): string | undefined {
  const text = (key: string): unknown => scalarValue(deref(doc, node.get(key, true)));
  const group = text('group') ?? '';
  const version = text('version');
  const kind = text('kind');
  if (typeof kind !== 'string' || kind === '') return undefined;
  if (typeof version !== 'string' || typeof group !== 'string') return `Kind=${kind}`;
  return gvkString(group, version, kind);
}

/** `healthChecks` and `test` (docs/adr/0081, 0082), each left out when absent. */
function readHealthGates(ctx: EntryContext, fields: FieldNodes): Pick<Watch, 'healthChecks' | 'test'> {
  const healthChecks = readHealthChecks(ctx, fields.healthChecks);
  const test = readReleaseTest(ctx, fields.test);
  return { ...(healthChecks.length === 0 ? {} : { healthChecks }), ...(test === undefined ? {} : { test }) };
}

function readEntry(pc: ParseContext, index: number, node: YAMLMap): Draft {
  const ctx: EntryContext = { pc, index, node, gvk: entryGvk(pc.doc, node) };
  const fields = collectFields(ctx);
  const group = readGroup(ctx, fields);
  const version = readVersion(ctx, fields);
  const kind = readKind(ctx, fields);
  const chartPath = readString(ctx, fields, 'chart', true);
  const selector = readSelector(ctx, fields);
  const reconcilePeriodMs = readReconcilePeriod(ctx, fields);
  const maxConcurrentReconciles = readMaxConcurrent(ctx, fields);
  const tenancy = readTenancy(ctx, fields);
  const rollout = readRollout(ctx, fields.rollout);
  const driftIgnore = readDriftIgnore(ctx, fields);
  const conflictPolicy = readConflictPolicy(ctx, fields);
  const crds = readCrdPolicy(ctx, fields);
  const approval = readApproval(ctx, fields);
  // Optional fields are left out rather than set to undefined, so `'selector' in watch` means something.
  const rest = {
    watchDependentResources: readBoolean(ctx, fields, 'watchDependentResources', true),
    ...(readBoolean(ctx, fields, 'adoptReleases', false) ? { adoptReleases: true } : {}),
    overrideValues: readOverrideValues(ctx, fields),
    sensitiveValues: readValuePaths(ctx, fields),
    ...(selector === undefined ? {} : { selector }),
    labelSelector: selector === undefined ? '' : labelSelectorToString(selector),
    ...(reconcilePeriodMs === undefined ? {} : { reconcilePeriodMs }),
    ...(maxConcurrentReconciles === undefined ? {} : { maxConcurrentReconciles }),
    dryRunOption: readDryRun(ctx, fields, tenancy.confineToNamespace),
    ...tenancy,
    allowSchemaRefs: readBoolean(ctx, fields, 'allowSchemaRefs', false),
    ...(rollout === undefined ? {} : { rollout }),
    ...(driftIgnore.length === 0 ? {} : { driftIgnore }),
    ...(readBoolean(ctx, fields, 'allowDriftIgnoreAnnotation', false) ? { allowDriftIgnoreAnnotation: true } : {}),
    ...(conflictPolicy === undefined ? {} : { conflictPolicy }),
    ...(crds === undefined ? {} : { crds }),
    ...readHealthGates(ctx, fields),
    ...approval,
  };
  return { index, line: posLine(pc, node), node, ctx, group, version, kind, chartPath: chartPath === '' ? undefined : chartPath, rest };
}

/**
 * One controller per GroupKind: a repeated GVK is an error, and so is the same group and kind at
 * another version, because the API server serves the same objects under every version of a CRD
 * and two controllers would fight over one release.
 */
function checkDuplicates(drafts: readonly Draft[]): void {
  const seen = new Map<string, Draft>();
  for (const d of drafts) {
    if (d.version === undefined || d.kind === undefined) continue;
    const key = `${d.group}/${d.kind}`;
    const first = seen.get(key);
    if (first === undefined) {
      seen.set(key, d);
      continue;
    }
    const gvk = gvkString(d.group, d.version, d.kind);
    const where = `entry ${first.index} (line ${first.line})`;
    const kindNode = deref(d.ctx.pc.doc, d.node.get('kind', true));
    const reason =
      first.version === d.version
        ? `duplicate GVK ${gvk}: also defined by ${where}`
        : `kind ${d.kind} of group ${quote(d.group)} is already watched at version ${first.version} by ${where}; a kind may be watched once, since every version serves the same objects`;
    addProblem(d.ctx.pc, d.ctx, { node: kindNode, field: 'kind', reason });
  }
}

/**
 * Why a loaded chart may not run under a watch, or undefined. The chart's `values.schema.json`
 * references that point outside it are fetched by helm (http, https, file) at every install and
 * upgrade: a network call to wherever the chart's author chose, or a file of the operator's host.
 */
export function chartRefusal(chart: ChartInfo, allowSchemaRefs: boolean): string | undefined {
  const refs = chart.schemaRefs ?? [];
  if (refs.length === 0 || allowSchemaRefs) return undefined;
  const shown = refs.slice(0, 3).map((r) => `${r.keyword} ${quote(r.ref)} in ${r.file}`);
  const more = refs.length > shown.length ? ` and ${refs.length - shown.length} more` : '';
  return `chart ${quote(chart.path)}: helm would fetch, at every install and upgrade, what its values schema references outside itself: ${shown.join(', ')}${more}; inline those definitions into the schema, or set allowSchemaRefs: true to let helm fetch them`;
}

async function loadCharts(drafts: readonly Draft[], baseDir: string): Promise<Map<Draft, ChartInfo>> {
  const cache = new Map<string, Promise<ChartInfo>>();
  const charts = new Map<Draft, ChartInfo>();
  await Promise.all(
    drafts.map(async (d) => {
      if (d.chartPath === undefined) return;
      const abs = resolve(baseDir, d.chartPath);
      const pending = cache.get(abs) ?? loadChartInfo(abs);
      cache.set(abs, pending);
      try {
        const chart = await pending;
        const refused = chartRefusal(chart, d.rest.allowSchemaRefs);
        if (refused === undefined) charts.set(d, chart);
        else fail(d.ctx, deref(d.ctx.pc.doc, d.node.get('chart', true)), 'chart', refused);
      } catch (err) {
        const reason = err instanceof ChartError ? err.message : `cannot load chart ${quote(abs)}: ${(err as Error).message}`;
        fail(d.ctx, deref(d.ctx.pc.doc, d.node.get('chart', true)), 'chart', reason);
      }
    }),
  );
  return charts;
}

// ---------------------------------------------------------------------------------------------
// Document
/** The list's items, or undefined after reporting why there is no usable list. */
function entryNodes(pc: ParseContext): readonly unknown[] | undefined {
  const root = pc.doc.contents;
  if (root === null || (isScalar(root) && root.value === null) || (isSeq(root) && root.items.length === 0)) {
    addProblem(pc, undefined, { node: root, reason: 'no watches defined: expected a list of entries with group, version, kind and chart' });
    return undefined;
  }
  if (!isSeq(root)) {
    addProblem(pc, undefined, { node: root, reason: `expected a list of watches (each entry starting with "- "), got ${describe(root)}` });
    return undefined;
  }
  return root.items;
}

function readEntries(pc: ParseContext, items: readonly unknown[]): Draft[] {
  const drafts: Draft[] = [];
  items.forEach((item, index) => {
    const node = deref(pc.doc, item);
    if (isMap(node)) drafts.push(readEntry(pc, index, node));
    else {
      const dangling = node === undefined && isAlias(item);
      const at = node ?? (isAlias(item) ? item : undefined);
      const problem = dangling ? 'alias refers to an unknown anchor' : `expected a map, got ${describe(node)}`;
      pc.problems.push(entryProblem(pc, index, at, `entry must be a map with group, version, kind and chart; ${problem}`));
    }
  });
  return drafts;
}

function toWatch(d: Draft, chart: ChartInfo, file: string): Watch {
  return {
    group: d.group,
    version: d.version ?? '',
    kind: d.kind ?? '',
    chart,
    ...d.rest,
    source: { file, index: d.index, line: d.line },
  };
}

/**
 * Parses and validates watches.yaml text, loading every chart it names.
 *
 * @throws {WatchesError} listing every problem found (YAML syntax, unknown fields with
 * suggestions, types, values, duplicates, charts), each with file, line and column.
 */
export async function parseWatches(text: string, options: ParseWatchesOptions): Promise<Watch[]> {
  const lines = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: true, lineCounter: lines, uniqueKeys: true });
  const pc: ParseContext = { file: options.file, doc, lines, env: options.env ?? process.env, problems: [] };
  yamlProblems(pc);
  const items = pc.problems.length === 0 ? entryNodes(pc) : undefined;
  if (items === undefined) throw new WatchesError(options.file, pc.problems);
  const drafts = readEntries(pc, items);
  checkDuplicates(drafts);
  // Relative chart paths resolve from the watches file's directory, not the process's working
  // directory. In operator-sdk layouts the two coincide (the image runs in /opt/helm next to
  // watches.yaml and helm-charts/), so nothing changes there, and `--watches-file` works from anywhere.
  const charts = await loadCharts(drafts, options.baseDir ?? dirname(resolve(options.file)));
  if (pc.problems.length > 0) throw new WatchesError(options.file, [...pc.problems].sort(byPosition));
  return drafts.map((d) => {
    const chart = charts.get(d);
    if (chart === undefined) throw new Error(`internal error: no chart for entry ${d.index}`);
    return toWatch(d, chart, options.file);
  });
}

/**
 * Reads and parses a watches file; relative chart paths resolve from its directory.
 *
 * @throws {WatchesError} when the file cannot be read or is invalid.
 */
export async function loadWatches(file: string, env?: NodeJS.ProcessEnv): Promise<Watch[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const reason = `cannot read watches file: ${(err as Error).message}`;
    throw new WatchesError(file, [{ file, reason, message: `${file}: ${reason}` }], { cause: err });
  }
  return parseWatches(text, { file, env, baseDir: dirname(resolve(file)) });
}
