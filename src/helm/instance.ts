/**
 * Telling one operator process from another across restarts, for what a killed one leaves behind
 * (values files, helm processes). A pid alone does not: in the image node is PID 1 at every start
 * of the container, so a restarted operator has its predecessor's pid. A process start is named by
 * its pid and its start time (clock ticks since boot, field 22 of /proc/<pid>/stat), which no later
 * process with that pid shares. Linux first; elsewhere, a random id stands for the start time.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

/** `<pid>.<start>`. */
export type InstanceId = string;

const INSTANCE = /^(\d+)\.([0-9a-f]+)$/;

/** The start time of process `pid` as /proc gives it; undefined when there is no such process (or no /proc). */
export function startTime(pid: number, proc = '/proc'): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`${proc}/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): a zombie has ended, whatever its parent does about it.
  if (fields[0] === 'Z') return undefined;
  return fields[19];
}

let self: InstanceId | undefined;

/** This process's start. */
export function selfInstance(): InstanceId {
  self ??= `${process.pid}.${startTime(process.pid) ?? randomBytes(6).toString('hex')}`;
  return self;
}

export function parseInstance(id: string): { readonly pid: number; readonly start: string } | undefined {
  const m = INSTANCE.exec(id);
  return m === null ? undefined : { pid: Number(m[1]), start: m[2] ?? '' };
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, but another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether no process runs as `pid` (a zombie has ended; without /proc it still counts as running). */
export function pidEnded(pid: number): boolean {
  return HAS_PROC ? startTime(pid) === undefined : !pidAlive(pid);
}

const HAS_PROC = existsSync('/proc/self/stat');

/**
 * Whether the process start `id` names has ended: its pid is gone, or now runs a later process
 * (this one included). Where /proc cannot tell, a live pid counts as the same process.
 */
export function instanceEnded(id: InstanceId): boolean {
  if (id === selfInstance()) return false;
  const parsed = parseInstance(id);
  if (parsed === undefined) return false;
  if (parsed.pid === process.pid) return true;
  const start = startTime(parsed.pid);
  if (start !== undefined) return start !== parsed.start;
  return pidEnded(parsed.pid);
}

/** A process's environment, from /proc; undefined when it cannot be read (gone, another user's, no /proc). */
function environ(pid: number, proc: string): Map<string, string> | undefined {
  let raw: string;
  try {
    raw = readFileSync(`${proc}/${pid}/environ`, 'utf8');
  } catch {
    return undefined;
  }
  const env = new Map<string, string>();
  for (const entry of raw.split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  return env;
}

/** A process found by {@link markedProcesses}: its pid, its start, and the instance it is marked with. */
export interface MarkedProcess {
  readonly pid: number;
  readonly start: string;
  readonly instance: InstanceId;
}

/**
 * Processes whose environment has `marker` set, and `match` (variable → value) as given: the
 * helm processes an operator started carry its instance id in `marker`. Those of other users are
 * not readable and not listed.
 */
export function markedProcesses(marker: string, match: Readonly<Record<string, string>>, proc = '/proc'): MarkedProcess[] {
  let entries: string[];
  try {
    entries = readdirSync(proc);
  } catch {
    return [];
  }
  const found: MarkedProcess[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    const env = environ(pid, proc);
    const instance = env?.get(marker);
    if (env === undefined || instance === undefined) continue;
    if (!Object.entries(match).every(([k, v]) => env.get(k) === v)) continue;
    const start = startTime(pid, proc);
    if (start !== undefined) found.push({ pid, start, instance });
  }
  return found;
}
