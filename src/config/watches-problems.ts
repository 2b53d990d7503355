/**
 * What is wrong with a watches file, and where: every problem carries its file:line:column, entry
 * and field, so all of them can be reported at once in file order.
 */
import type { Document, LineCounter, Node, YAMLMap } from 'yaml';

export interface WatchesProblem {
  readonly file: string;
  /** 1-based. */
  readonly line?: number;
  /** 1-based. */
  readonly column?: number;
  /** 0-based index of the entry in the list. */
  readonly entry?: number;
  /** `group/version, Kind=Kind` (Go's GroupVersionKind.String) when known. */
  readonly gvk?: string;
  /** Dotted path to the value, e.g. `selector.matchExpressions[0].operator`. */
  readonly field?: string;
  /** The problem on its own. */
  readonly reason: string;
  /** `file:line:column: entry N (gvk): field "f": reason`. */
  readonly message: string;
}

/** A watches file that cannot be used; `problems` lists everything wrong, in file order. */
export class WatchesError extends Error {
  override readonly name = 'WatchesError';
  readonly file: string;
  /** Of the first problem, like the fields below. */
  readonly line?: number;
  readonly column?: number;
  readonly entry?: number;
  readonly field?: string;
  readonly problems: readonly WatchesProblem[];

  constructor(file: string, problems: readonly WatchesProblem[], options?: ErrorOptions) {
    const n = problems.length;
    super([`invalid watches file ${file}: ${n} problem${n === 1 ? '' : 's'}`, ...problems.map((p) => p.message)].join('\n'), options);
    this.file = file;
    this.problems = problems;
    const first = problems[0];
    this.line = first?.line;
    this.column = first?.column;
    this.entry = first?.entry;
    this.field = first?.field;
  }
}

export const quote = (s: string): string => JSON.stringify(s);

export interface ParseContext {
  readonly file: string;
  readonly doc: Document;
  readonly lines: LineCounter;
  readonly env: NodeJS.ProcessEnv;
  readonly problems: WatchesProblem[];
}

export interface EntryContext {
  readonly pc: ParseContext;
  readonly index: number;
  readonly node: YAMLMap;
  readonly gvk?: string;
}

interface ProblemInput {
  /** The node the problem is about; falls back to the entry. */
  readonly node?: Node | null;
  readonly field?: string;
  /** False when the reason already names the field (unknown fields). */
  readonly showField?: boolean;
  readonly reason: string;
}

export function formatProblem(p: Omit<WatchesProblem, 'message'>, showField: boolean): string {
  const parts = [p.line === undefined ? p.file : `${p.file}:${p.line}:${p.column ?? 1}`];
  if (p.entry !== undefined) parts.push(p.gvk === undefined ? `entry ${p.entry}` : `entry ${p.entry} (${p.gvk})`);
  if (showField && p.field !== undefined) parts.push(`field ${quote(p.field)}`);
  parts.push(p.reason);
  return parts.join(': ');
}

export function addProblem(pc: ParseContext, entry: EntryContext | undefined, input: ProblemInput): void {
  const offset = (input.node ?? entry?.node)?.range?.[0];
  const pos = offset === undefined ? undefined : pc.lines.linePos(offset);
  const base = {
    file: pc.file,
    line: pos?.line,
    column: pos?.col,
    entry: entry?.index,
    gvk: entry?.gvk,
    field: input.field,
    reason: input.reason,
  };
  pc.problems.push({ ...base, message: formatProblem(base, input.showField ?? true) });
}

export const fail = (ctx: EntryContext, node: Node | null | undefined, field: string, reason: string): void => {
  addProblem(ctx.pc, ctx, { node, field, reason });
};

export function posLine(pc: ParseContext, node: Node): number {
  return pc.lines.linePos(node.range?.[0] ?? 0).line;
}

export function gvkString(group: string, version: string, kind: string): string {
  return `${group}/${version}, Kind=${kind}`;
}

/** Parse errors, first line only: the location moves into our own `file:line:col:` prefix. */
export function yamlProblems(pc: ParseContext): void {
  for (const err of pc.doc.errors) {
    const pos = err.linePos?.[0];
    const reason = (err.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    const base = { file: pc.file, line: pos?.line, column: pos?.col, reason };
    pc.problems.push({ ...base, message: formatProblem(base, false) });
  }
}

export function entryProblem(pc: ParseContext, index: number, node: Node | undefined, reason: string): WatchesProblem {
  const pos = node?.range === undefined || node.range === null ? undefined : pc.lines.linePos(node.range[0]);
  const base = { file: pc.file, line: pos?.line, column: pos?.col, entry: index, reason };
  return { ...base, message: formatProblem(base, false) };
}

export function byPosition(a: WatchesProblem, b: WatchesProblem): number {
  return (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0);
}
