/**
 * Hot reload of watches.yaml and the charts it names (`run --watch-config`, the `make run` dev loop).
 *
 * Filesystem events only say "something may have changed"; what happens is decided by content:
 * - events are debounced (an editor's save is several events; a chart edit touches many files);
 * - then the watches file is re-read (through any symlink, so a ConfigMap's `..data` swap is seen)
 *   and hashed; an unchanged file with no chart event is a no-op;
 * - otherwise it is parsed and validated (charts loaded and digested). An invalid file is logged with
 *   its file:line message and the last good configuration keeps running;
 * - an invalid one whose charts are the reason is worse than stale: helm reads a chart path at every
 *   install and upgrade, so a kind whose chart has turned unsafe since it was applied (a symlink
 *   out of it added, a schema `$ref` helm would fetch) is stopped until the file loads again;
 * - a valid one whose text + chart digests differ from the applied configuration is handed to
 *   `apply` (the Operator adds/removes kinds and restarts a kind whose chart changed). A failed apply
 *   (a CRD not installed yet, say) is retried with backoff until it succeeds or the file changes.
 *
 * Watching: the watches file's **directory** (not the file, whose inode an atomic save or a
 * ConfigMap update replaces), non-recursively, plus each chart path recursively. Reloads run one at
 * a time; events during a reload cause one more reload after it.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { systemClock, type Clock, type Timer } from '../util/clock.js';
import { Backoff, type BackoffOptions } from '../runtime/backoff.js';
import type { Logger } from '../telemetry/logger.js';
import { ChartError, loadChartInfo } from './chart.js';
import type { Watch } from './watch.js';
import { chartRefusal, parseWatches } from './watches.js';
import { WatchesError } from './watches-problems.js';

export type ChangeSource = 'config' | 'chart';

export interface ConfigReloaderOptions {
  /** The watches file as given on the command line. */
  readonly file: string;
  /** Makes the running operator match `watches`; a rejection is retried with backoff. */
  readonly apply: (watches: readonly Watch[]) => Promise<unknown>;
  readonly log: Logger;
  /** Quiet time after the last event before reloading. Default 500 ms. */
  readonly debounceMs?: number;
  /** Retries of a failed apply; default 1 s doubling to 30 s. */
  readonly retry?: Omit<BackoffOptions, 'clock'>;
  readonly clock?: Clock;
  /** For tests; default reads the file. */
  readonly readText?: (file: string) => Promise<string>;
  /** For tests; default {@link parseWatches} relative to the file's directory. */
  readonly parse?: (text: string, file: string) => Promise<Watch[]>;
  /** For tests; default {@link unsafeChartReason}. */
  readonly checkChart?: (watch: Watch) => Promise<string | undefined>;
}

/**
 * Why helm must no longer run a watch's chart as it is on disk now, or undefined: a chart that
 * merely fails to load (an edit half saved) makes helm fail, not read outside the chart.
 */
export async function unsafeChartReason(watch: Watch): Promise<string | undefined> {
  try {
    return chartRefusal(await loadChartInfo(watch.chart.path), watch.allowSchemaRefs);
  } catch (err) {
    if (err instanceof ChartError && err.reason === 'escaping-symlink') return err.message;
    return undefined;
  }
}

export type ReloadOutcome = 'unchanged' | 'applied' | 'invalid' | 'unreadable' | 'apply-failed';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** What identifies a configuration: the file text plus the content digest of every chart it uses. */
export function configurationHash(text: string, watches: readonly Watch[]): string {
  return sha256(JSON.stringify([sha256(text), ...watches.map((w) => `${w.chart.path}@${w.chart.digest}`)]));
}

export const chartPaths = (watches: readonly Watch[]): string[] => [...new Set(watches.map((w) => w.chart.path))].sort();

export class ConfigReloader {
  readonly #o: ConfigReloaderOptions;
  readonly #clock: Clock;
  readonly #debounceMs: number;
  readonly #backoff: Backoff;
  readonly #readText: (file: string) => Promise<string>;
  readonly #parse: (text: string, file: string) => Promise<Watch[]>;
  /** Hash of the file text last looked at (valid or not). */
  #seenTextHash: string | undefined;
  /** {@link configurationHash} of what is running. */
  #appliedHash: string | undefined;
  #chartPaths: string[] = [];
  /** What is running, to stop a kind whose chart turns unsafe while the file does not load. */
  #applied: readonly Watch[] = [];
  readonly #checkChart: (watch: Watch) => Promise<string | undefined>;
  #chartTouched = false;
  #debounce: Timer | undefined;
  #retry: Timer | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #lastOutcome: ReloadOutcome | undefined;
  readonly #chartListeners: ((paths: readonly string[]) => void)[] = [];

  constructor(options: ConfigReloaderOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    this.#debounceMs = options.debounceMs ?? 500;
    this.#backoff = new Backoff({ ...options.retry, clock: this.#clock });
    this.#readText = options.readText ?? ((f) => readFile(f, 'utf8'));
    this.#parse = options.parse ?? ((text, file) => parseWatches(text, { file, baseDir: dirname(resolve(file)) }));
    this.#checkChart = options.checkChart ?? unsafeChartReason;
  }

  /**
   * Reads and validates the file for start-up and records it as the applied configuration (the
   * caller starts the operator with it).
   *
   * @throws {WatchesError} when the file is unreadable or invalid.
   */
  async initial(): Promise<Watch[]> {
    let text: string;
    try {
      text = await this.#readText(this.#o.file);
    } catch (err) {
      const reason = `cannot read watches file: ${(err as Error).message}`;
      throw new WatchesError(this.#o.file, [{ file: this.#o.file, reason, message: `${this.#o.file}: ${reason}` }], { cause: err });
    }
    const watches = await this.#parse(text, this.#o.file);
    this.#seenTextHash = sha256(text);
    this.#appliedHash = configurationHash(text, watches);
    this.#applied = watches;
    this.#setChartPaths(watches);
    return watches;
  }

  /** The chart paths of the applied configuration. */
  get chartPaths(): readonly string[] {
    return this.#chartPaths;
  }

  /** Calls `listener` whenever the chart paths of the applied configuration change. */
  onChartPaths(listener: (paths: readonly string[]) => void): void {
    this.#chartListeners.push(listener);
  }

  /** The outcome of the last reload, for tests and diagnostics. */
  get lastOutcome(): ReloadOutcome | undefined {
    return this.#lastOutcome;
  }

  /** A filesystem event: (re)starts the debounce timer. */
  notify(source: ChangeSource): void {
    if (this.#closed) return;
    if (source === 'chart') this.#chartTouched = true;
    this.#debounce?.cancel();
    this.#debounce = this.#clock.setTimeout(() => {
      this.#debounce = undefined;
      this.#trigger();
    }, this.#debounceMs);
  }

  /** Resolves once no reload is running or pending (debounce timers excluded). */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  close(): void {
    this.#closed = true;
    this.#debounce?.cancel();
    this.#retry?.cancel();
  }

  #trigger(): void {
    if (this.#closed) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = this.#loop().finally(() => {
      this.#running = undefined;
    });
  }

  async #loop(): Promise<void> {
    do {
      this.#again = false;
      this.#retry?.cancel();
      this.#lastOutcome = await this.#reloadOnce();
      if (this.#lastOutcome === 'apply-failed' && !this.#closed) this.#scheduleRetry();
      else if (this.#lastOutcome !== 'unchanged') this.#backoff.reset();
    } while (this.#shouldRunAgain());
  }

  /** Set by events that arrived while the reload ran (a method, so the loop re-reads the field). */
  #shouldRunAgain(): boolean {
    return this.#again && !this.#closed;
  }

  #scheduleRetry(): void {
    const delay = this.#backoff.next();
    this.#o.log.info({ retryInMs: delay }, 'Will retry applying the watches file');
    this.#retry = this.#clock.setTimeout(() => {
      this.#chartTouched = true; // force a full reload even though the text is unchanged
      this.#trigger();
    }, delay);
  }

  async #reloadOnce(): Promise<ReloadOutcome> {
    const file = this.#o.file;
    let text: string;
    try {
      text = await this.#readText(file);
    } catch (err) {
      this.#o.log.error({ file, error: (err as Error).message }, 'Cannot read the watches file; keeping the last good configuration');
      return 'unreadable';
    }
    const textHash = sha256(text);
    if (textHash === this.#seenTextHash && !this.#chartTouched) return 'unchanged';
    this.#seenTextHash = textHash;
    this.#chartTouched = false;
    let watches: Watch[];
    try {
      watches = await this.#parse(text, file);
    } catch (err) {
      if (!(err instanceof WatchesError)) throw err;
      this.#o.log.error({ file, error: err.message }, 'Invalid watches file; keeping the last good configuration');
      await this.#stopUnsafeKinds();
      return 'invalid';
    }
    const hash = configurationHash(text, watches);
    if (hash === this.#appliedHash) {
      this.#o.log.debug({ file }, 'Watches file and charts unchanged');
      return 'unchanged';
    }
    try {
      const result = await this.#o.apply(watches);
      this.#appliedHash = hash;
      this.#applied = watches;
      this.#setChartPaths(watches);
      this.#o.log.info({ file, kinds: watches.length, ...summary(result) }, 'Applied the reloaded watches file');
      return 'applied';
    } catch (err) {
      this.#o.log.error({ file, error: err instanceof Error ? err.message : String(err) }, 'Applying the reloaded watches file failed');
      return 'apply-failed';
    }
  }

  /**
   * Stops the running kinds whose chart is now unsafe and keeps the others. The applied hash is
   * forgotten, so the next file that loads is applied in full (the stopped kinds come back).
   * A failed apply is logged: the next chart event retries it.
   */
  async #stopUnsafeKinds(): Promise<void> {
    const reasons = await Promise.all(this.#applied.map((w) => this.#checkChart(w)));
    const unsafe = this.#applied.filter((_w, i) => reasons[i] !== undefined);
    if (unsafe.length === 0) return;
    const keep = this.#applied.filter((w) => !unsafe.includes(w));
    const stopped = unsafe.map((w) => w.kind);
    this.#o.log.error(
      { file: this.#o.file, stopped, reasons: reasons.filter((r) => r !== undefined) },
      'A running chart turned unsafe; its kind is stopped until the watches file loads again',
    );
    try {
      await this.#o.apply(keep);
      this.#applied = keep;
      this.#appliedHash = undefined;
    } catch (err) {
      this.#o.log.error(
        { file: this.#o.file, stopped, error: err instanceof Error ? err.message : String(err) },
        'Stopping the kinds of unsafe charts failed',
      );
    }
  }

  #setChartPaths(watches: readonly Watch[]): void {
    const paths = chartPaths(watches);
    if (paths.join('\0') === this.#chartPaths.join('\0')) return;
    this.#chartPaths = paths;
    for (const listener of this.#chartListeners) listener(paths);
  }
}

/** `{added, removed, restarted}` from Operator.apply, when that is what `apply` returned. */
function summary(result: unknown): Record<string, unknown> {
  if (typeof result !== 'object' || result === null) return {};
  const r = result as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of ['added', 'removed', 'restarted']) if (Array.isArray(r[k])) out[k] = r[k];
  return out;
}

/** After watching a new chart path, when to re-check it for edits made while the watch was set up. */
const RESCAN_AFTER_WATCH_MS = 1_500;

export interface ConfigWatcher {
  /**
   * Settles once chokidar has scanned the watches file's directory and the chart paths: edits
   * from then on are seen; an edit made before may yield no event.
   */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

const onceReady = (watcher: FSWatcher): Promise<void> =>
  new Promise((resolve) => {
    watcher.once('ready', () => {
      resolve();
    });
  });

/**
 * Feeds `reloader` with chokidar events: the watches file's directory (depth 0) and every chart path
 * of the applied configuration (recursively; updated after each successful reload).
 */
export function watchConfigFiles(reloader: ConfigReloader, file: string, log: Logger): ConfigWatcher {
  const onError = (err: unknown): void => {
    log.warn({ error: err }, 'file watcher error');
  };
  const config: FSWatcher = watch(dirname(resolve(file)), { ignoreInitial: true, depth: 0 });
  config.on('all', () => {
    reloader.notify('config');
  });
  config.on('error', onError);
  const charts: FSWatcher = watch([...reloader.chartPaths], { ignoreInitial: true });
  charts.on('all', () => {
    reloader.notify('chart');
  });
  charts.on('error', onError);
  let watched = [...reloader.chartPaths];
  reloader.onChartPaths((now) => {
    const gone = watched.filter((p) => !now.includes(p));
    const added = now.filter((p) => !watched.includes(p));
    if (gone.length > 0) charts.unwatch(gone);
    if (added.length > 0) {
      charts.add(added);
      // A new path is scanned asynchronously: an edit made meanwhile yields no event, so look
      // once more when the watch is surely in place (a no-op when nothing changed).
      setTimeout(() => {
        reloader.notify('chart');
      }, RESCAN_AFTER_WATCH_MS).unref();
    }
    watched = [...now];
    log.debug({ charts: now }, 'watching chart paths');
  });
  return {
    ready: Promise.all([onceReady(config), onceReady(charts)]).then(() => undefined),
    close: async () => {
      reloader.close();
      await Promise.all([config.close(), charts.close()]);
    },
  };
}
