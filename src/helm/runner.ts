/**
 * Runs one helm process: an argument array (no shell), the environment of environment.ts, a
 * deadline, the process table of the release writers, and any failure turned into a HelmError.
 */
import { tmpdir } from 'node:os';
import { execa } from 'execa';
import { silentLogger, type Logger } from '../telemetry/logger.js';
import { withConnectionArgs, type HelmMajor } from './args.js';
import { connectionFor, type CallIdentity, type Connection } from './connection.js';
import { helmEnv, helmHomes, type HelmEnvOptions } from './environment.js';
import { fencedOff, throwIfAborted, toHelmError } from './error-mapping.js';
import { LiveReleases } from './live-releases.js';
import { PostRenderServer, type PostRender } from './post-render.js';
import { FORCE_KILL_AFTER_MS } from './timeouts.js';
import { withValuesFile } from './values-file.js';
import type { HelmExecution } from '../telemetry/metric-hooks.js';

// Part of the runner's options (`observer`); declared in telemetry, which must not import helm.
export type { HelmExecution } from '../telemetry/metric-hooks.js';

export interface RunnerOptions extends Connection, Partial<HelmEnvOptions> {
  /** Path of the helm executable (v3 ≥ 3.13 or v4). */
  readonly binary: string;
  readonly log?: Logger;
  /** Writable directory for helm's cache/config/data homes and the values files. Default `os.tmpdir()`. */
  readonly tmpDir?: string;
  readonly observer?: (e: HelmExecution) => void;
  /**
   * The leader election's lease, when there is one: asked right before a release writer starts,
   * again once it is forked, and before a post-render is answered. A replica that lost its lease
   * while paused starts no helm, kills one it forked, and gives none a rendered manifest to apply.
   */
  readonly fence?: LeaseFence;
}

/**
 * Whether this process still holds its leader lease (runtime/leader.ts answers both questions), or,
 * sharded, its peer lease and the fence of `namespace`'s bucket (runtime/shard-coordinator.ts).
 * `namespace` undefined: the process-wide lease only.
 */
export interface LeaseFence {
  /** By the clock, with no side effect: cheap enough to ask between a fork and the kill it may call for. */
  holds(namespace?: string): boolean;
  /** The same, declaring the loss when the lease is gone, which cancels every reconcile before it returns. */
  check(namespace?: string): boolean;
}

/** One process's run: its deadline, whom it acts as, and what sees its output. */
export interface RunContext {
  readonly release?: string;
  readonly namespace?: string;
  /** Releases the process works on one after the other (`helm uninstall a b c`); 1 when absent. */
  readonly releases?: number;
  /** Process deadline in ms. */
  readonly deadlineMs: number;
  readonly signal?: AbortSignal;
  readonly identity?: CallIdentity;
  /** Sees each line of stdout as helm prints it. */
  readonly onLine?: (line: string) => void;
  readonly redact?: (text: string) => string;
}

/**
 * Verbs that change a release: {@link HelmRunner.running} reports their live processes. `test`
 * creates the hooks' objects and records their outcome in the release.
 */
const RELEASE_WRITERS: ReadonlySet<string> = new Set(['install', 'upgrade', 'rollback', 'uninstall', 'test']);
const MAX_BUFFER = 64 * 1024 * 1024;
/** Verbs that never talk to a cluster, so get no `--kube-*` flags. */
const OFFLINE_VERBS: ReadonlySet<string> = new Set(['template', 'version', 'pull', 'dependency', 'create', 'lint', 'env']);

export class HelmRunner {
  readonly binary: string;
  readonly tmpDir: string;
  readonly log: Logger;
  readonly #opts: RunnerOptions;
  #executions = 0;
  /** Shared with every runner made by {@link withEnv}: one process table. */
  readonly #live: LiveReleases;
  /** Shared like {@link #live}: one loopback listener for every runner's post-renders. */
  readonly #postRender: PostRenderServer;

  constructor(opts: RunnerOptions, live = new LiveReleases(), postRender?: PostRenderServer) {
    this.#opts = opts;
    this.binary = opts.binary;
    this.tmpDir = opts.tmpDir ?? tmpdir();
    this.log = opts.log ?? silentLogger();
    this.#live = live;
    this.#postRender =
      postRender ??
      new PostRenderServer(helmHomes(this.tmpDir).HELM_DATA_HOME, opts.fence === undefined ? undefined : () => this.mayChangeReleases());
  }

  /** Whether helm runs with the invoking user's helm homes (the scaffolding CLI), not private ones. */
  get userHelmHome(): boolean {
    return this.#opts.userHelmHome === true;
  }

  /** The same binary with more environment; the process table carries over. */
  withEnv(env: Readonly<Record<string, string>>): HelmRunner {
    return new HelmRunner({ ...this.#opts, extraEnv: { ...this.#opts.extraEnv, ...env } }, this.#live, this.#postRender);
  }

  /** Runs `fn` with the flags that make helm post-render through `render` (see post-render.ts); `dir`: the run's private directory. */
  withPostRender<T>(dir: string, render: PostRender, major: HelmMajor, fn: (flags: string[]) => Promise<T>): Promise<T> {
    return this.#postRender.with(dir, render, major, fn);
  }

  /** Whether a helm process that changes `release` has not exited yet, a cancelled one included. */
  running(release: string, namespace: string): boolean {
    return this.#live.has(namespace, release);
  }

  /** The fence's check (true without leader election): see HelmClient.mayChangeReleases. */
  mayChangeReleases(): boolean {
    return this.#opts.fence?.check() !== false;
  }

  /** helm processes started so far. */
  get executions(): number {
    return this.#executions;
  }

  /** {@link withValuesFile} under this runner's tmpDir. */
  withValuesFile<T>(values: Readonly<Record<string, unknown>>, fn: (file: string) => Promise<T>): Promise<T> {
    return withValuesFile(this.tmpDir, values, fn);
  }

  /** Spawns helm once; resolves with stdout, rejects with a HelmError. */
  async run(verb: string, verbArgs: string[], ctx: RunContext): Promise<string> {
    const writes = this.#admit(verb, ctx.signal, ctx.namespace);
    const connection = connectionFor(this.#opts, ctx.identity);
    const args = OFFLINE_VERBS.has(verb) ? verbArgs : withConnectionArgs(verbArgs, connection);
    const started = performance.now();
    this.#executions++;
    const untrack =
      writes && ctx.release !== undefined && ctx.namespace !== undefined ? this.#live.track(ctx.namespace, ctx.release) : undefined;
    let outcome: HelmExecution['outcome'] = 'error';
    let reason: string | undefined;
    let fenced = false;
    try {
      const subprocess = execa(this.binary, args, {
        timeout: ctx.deadlineMs,
        killSignal: 'SIGTERM',
        forceKillAfterDelay: FORCE_KILL_AFTER_MS,
        ...(ctx.signal ? { cancelSignal: ctx.signal } : {}),
        env: helmEnv({ ...this.#opts, tmpDir: this.tmpDir }, connection),
        extendEnv: false,
        maxBuffer: MAX_BUFFER,
        stdin: 'ignore',
        ...(ctx.onLine === undefined ? {} : { stdout: this.#lineObserver(ctx.onLine) }),
        reject: true,
      });
      fenced = this.#killIfFenced(subprocess, writes, ctx.signal, ctx.namespace);
      const result = await subprocess;
      outcome = 'success';
      return result.stdout;
    } catch (err) {
      const helmErr = fenced ? fencedOff(verb) : toHelmError(verb, err, ctx.deadlineMs, ctx.redact);
      reason = helmErr.reason;
      // Counted apart: a helm that runs out of --helm-timeout (hooks, waits) is an alert of its own.
      if (helmErr.reason === 'Timeout') outcome = 'timeout';
      throw helmErr;
    } finally {
      untrack?.();
      const durationMs = Math.round(performance.now() - started);
      this.log.debug({ verb, release: ctx.release, namespace: ctx.namespace, durationMs, outcome, reason }, 'helm command finished');
      this.#notify({ verb, outcome, durationMs, ...(ctx.releases === undefined ? {} : { releases: ctx.releases }) });
    }
  }

  /**
   * The fence asked again once helm is forked: a process paused between the first check and the
   * fork (SIGSTOP, a VM stall) resumes in the middle of that synchronous stretch, and its clock
   * then says the lease is gone. helm is killed before it has done anything (uninstall and
   * rollback, which no post-render fences, write as soon as they start); so is a reconcile's read.
   * Killed first, then the loss declared: declaring it cancels every reconcile, which on a thawed
   * machine busy with everything that thawed with it takes long enough for helm to get going.
   * True when it killed helm.
   */
  #killIfFenced(
    subprocess: { kill(signal: NodeJS.Signals): boolean },
    writes: boolean,
    signal: AbortSignal | undefined,
    namespace: string | undefined,
  ): boolean {
    const fence = this.#opts.fence;
    if (fence === undefined || (!writes && signal === undefined) || fence.holds(namespace)) return false;
    subprocess.kill('SIGKILL');
    fence.check(namespace);
    return true;
  }

  /**
   * Whether `verb` changes a release; throws Canceled when it may not start (aborted, or fenced off).
   * The fence is asked first, for every verb: past the renew deadline that question is what declares
   * the lease lost, and the loss aborts every reconcile's signal in the same tick. A thawed
   * replica's reconcile that reaches a read before any timer has run is then refused by its
   * aborted signal, like its writes by the fence. Reads outside a reconcile (`helm version` while
   * standing by) have no signal and run.
   */
  #admit(verb: string, signal: AbortSignal | undefined, namespace: string | undefined): boolean {
    const open = this.#opts.fence?.check(namespace) !== false;
    throwIfAborted(signal, verb);
    const writes = RELEASE_WRITERS.has(verb);
    if (writes && !open) throw fencedOff(verb);
    return writes;
  }

  /** An execa transform that shows each stdout line to `onLine` as it arrives and keeps it in the output. */
  #lineObserver(onLine: (line: string) => void): (line: unknown) => Generator<unknown, void, void> {
    const log = this.log;
    return function* (line: unknown) {
      try {
        if (typeof line === 'string') onLine(line);
      } catch (err) {
        // A caller's bug must not fail the helm command that is running.
        log.warn({ error: err }, 'helm output observer threw');
      }
      yield line;
    };
  }

  #notify(e: HelmExecution): void {
    try {
      this.#opts.observer?.(e);
    } catch (err) {
      // A metrics bug must not turn a helm success into a failure.
      this.log.warn({ error: err, verb: e.verb }, 'helm execution observer threw');
    }
  }
}
