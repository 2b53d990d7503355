/**
 * CPU and memory of a process tree, read from /proc. operator-sdk's helm-operator is one process;
 * ours spawns a helm child per install/upgrade/uninstall, so every figure covers the whole tree:
 *
 * - CPU = the root's utime+stime, plus cutime+cstime (children it has reaped), plus the
 *   utime+stime of descendants still running. A child's time moves from the third term to the
 *   second when it is reaped, so the sum never double-counts and never loses a finished child.
 * - RSS of the root alone, and of the root plus its live descendants.
 * - Child processes: every distinct descendant pid seen (sampling every `intervalMs` can miss one
 *   that lives shorter than that; our operator's metrics give the exact helm count).
 */
import { readdir, readFile } from 'node:fs/promises';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux x86-64
const PAGE_BYTES = 4096;

interface Stat {
  readonly pid: number;
  readonly ppid: number;
  readonly comm: string;
  /** utime + stime, seconds. */
  readonly own: number;
  /** cutime + cstime, seconds. */
  readonly reaped: number;
  readonly rssBytes: number;
}

async function readStat(pid: number): Promise<Stat | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm may contain spaces and parentheses: fields resume after the last ')'.
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const f = text.slice(close + 2).split(' ');
  const n = (i: number): number => Number(f[i - 3]);
  return {
    pid,
    ppid: n(4),
    comm,
    own: (n(14) + n(15)) / TICKS_PER_SECOND,
    reaped: (n(16) + n(17)) / TICKS_PER_SECOND,
    rssBytes: n(24) * PAGE_BYTES,
  };
}

export interface TreeSample {
  readonly at: number;
  /** CPU seconds of the whole tree since the root started. */
  readonly cpuSeconds: number;
  /** CPU seconds of the root process alone (for us: the node side, without helm). */
  readonly rootCpuSeconds: number;
  readonly rootRssBytes: number;
  readonly treeRssBytes: number;
  readonly children: readonly { readonly pid: number; readonly comm: string }[];
}

/** One reading of the tree rooted at `root`, or undefined once the root has exited. */
export async function sampleTree(root: number): Promise<TreeSample | undefined> {
  const rootStat = await readStat(root);
  if (rootStat === undefined) return undefined;
  const pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d)).map(Number);
  const stats = (await Promise.all(pids.map(readStat))).filter((s): s is Stat => s !== undefined);
  const byParent = new Map<number, Stat[]>();
  for (const s of stats) byParent.set(s.ppid, [...(byParent.get(s.ppid) ?? []), s]);
  const descendants: Stat[] = [];
  for (let frontier = [root]; frontier.length > 0;) {
    const next = frontier.flatMap((p) => byParent.get(p) ?? []);
    descendants.push(...next);
    frontier = next.map((s) => s.pid);
  }
  return {
    at: performance.now(),
    cpuSeconds: rootStat.own + rootStat.reaped + descendants.reduce((sum, d) => sum + d.own, 0),
    rootCpuSeconds: rootStat.own,
    rootRssBytes: rootStat.rssBytes,
    treeRssBytes: rootStat.rssBytes + descendants.reduce((sum, d) => sum + d.rssBytes, 0),
    children: descendants.map((d) => ({ pid: d.pid, comm: d.comm })),
  };
}

/** What a {@link TreeSampler} saw between two marks. */
export interface Window {
  readonly seconds: number;
  readonly cpuSeconds: number;
  /** The root alone; cpuSeconds − rootCpuSeconds is what its children (helm) used. */
  readonly rootCpuSeconds: number;
  readonly rootRssStartBytes: number;
  readonly rootRssPeakBytes: number;
  readonly rootRssEndBytes: number;
  readonly treeRssPeakBytes: number;
  /** Distinct descendant processes seen, by command name. */
  readonly children: Readonly<Record<string, number>>;
  readonly peakLiveChildren: number;
}

/** Samples a process tree every `intervalMs` until stopped; `window()` summarises a span. */
export class TreeSampler {
  readonly #samples: TreeSample[] = [];
  #timer: NodeJS.Timeout | undefined;
  #busy = false;

  constructor(
    private readonly root: number,
    private readonly intervalMs = 200,
  ) {}

  start(): void {
    this.#timer = setInterval(() => {
      if (this.#busy) return;
      this.#busy = true;
      void this.sample().finally(() => (this.#busy = false));
    }, this.intervalMs);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Takes one sample now (the edges of a window must be exact, not up to an interval late). */
  async sample(): Promise<TreeSample | undefined> {
    const s = await sampleTree(this.root);
    if (s !== undefined) this.#samples.push(s);
    return s;
  }

  /** A mark: the index of a sample taken now. */
  async mark(): Promise<number> {
    await this.sample();
    return this.#samples.length - 1;
  }

  window(from: number, to: number): Window {
    const span = this.#samples.slice(from, to + 1);
    const first = span[0];
    const last = span.at(-1);
    if (first === undefined || last === undefined) throw new Error('empty sampling window (did the operator exit?)');
    const seen = new Map<number, string>();
    for (const s of span) for (const c of s.children) seen.set(c.pid, c.comm);
    const children: Record<string, number> = {};
    for (const comm of seen.values()) children[comm] = (children[comm] ?? 0) + 1;
    return {
      seconds: (last.at - first.at) / 1000,
      cpuSeconds: last.cpuSeconds - first.cpuSeconds,
      rootCpuSeconds: last.rootCpuSeconds - first.rootCpuSeconds,
      rootRssStartBytes: first.rootRssBytes,
      rootRssPeakBytes: Math.max(...span.map((s) => s.rootRssBytes)),
      rootRssEndBytes: last.rootRssBytes,
      treeRssPeakBytes: Math.max(...span.map((s) => s.treeRssBytes)),
      children,
      peakLiveChildren: Math.max(...span.map((s) => s.children.length)),
    };
  }
}
