/**
 * The manager owns the operator process's lifecycle, as controller-runtime's `pkg/manager` does
 * (docs/adr/0052): the metrics and health servers, leader election, starting and stopping the
 * controllers, reloading the watches, and stopping cleanly. What the controllers are, how they
 * are built and what the flags mean are not its business: it gets them as ports.
 *
 * States: `idle` → (`standby` while waiting for the Lease) → `starting` → `running` → `stopping`
 * → `stopped`.
 * 1. Servers first, so probes answer while the rest starts (`/readyz` fails until the caches sync).
 * 2. With an elector, wait for the Lease. A standby is *ready*: readiness gates a rolling update,
 *    and a new pod that can never become ready while the old one holds the Lease would deadlock
 *    it (docs/adr/0004).
 * 3. Start the controllers; then watch watches.yaml and the charts, when asked to.
 * 4. Shutdown (the stop signal aborts): stop watching, stop taking keys, let in-flight reconciles
 *    (helm operations) finish for up to the graceful shutdown timeout before cancelling them,
 *    release the Lease, close the servers; {@link Manager.run} resolves.
 * 5. Lost leadership: cancel in-flight reconciles at once (another replica may already be acting),
 *    close the servers; {@link Manager.run} rejects with {@link LeadershipLostError}.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { healthHandler, listenHttp, ping, type Checker, type HttpListener } from '../telemetry/health.js';
import type { Logger } from '../telemetry/logger.js';
import { systemClock, type Clock, type Timer } from '../util/clock.js';
import type { StopOptions } from './controller.js';

/** The work that runs only while leading: the operator's controllers. */
export interface LeaderWork {
  /** Starts the controllers; resolves once their caches synced. */
  start(): Promise<void>;
  /** Stops them (also while `start` runs, or when it never ran): a graceful shutdown or lost leadership. */
  stop(how: StopOptions): Promise<void>;
  hasSynced(): boolean;
  /** Queues every CR once more; how many. */
  resyncAll(): number;
}

/** Leader election as the manager uses it; `LeaderElector` (leader.ts) is the real one. */
export interface Elector {
  readonly identity: string;
  /** Resolves with the reason once leadership, after being acquired, is lost. */
  readonly lost: Promise<Error>;
  /** Whether it leads now (by the clock too: noticing an expired lease loses it, see leader.ts). */
  isLeader(): boolean;
  /** `listener` runs synchronously when leadership is lost, before {@link lost} resolves. */
  onLost(listener: () => void): void;
  /** True once leading; false if `signal` aborts first. */
  acquire(signal: AbortSignal): Promise<boolean>;
  /** Stops renewing and gives the Lease up if held. */
  release(): Promise<void>;
}

/** Reloading watches.yaml and its charts (`--watch-config`). */
export interface ConfigWatch {
  /** Starts watching the files. */
  start(): void;
  /** Stops watching and waits for a reload in progress; harmless when never started. */
  stop(): Promise<void>;
}

/** A listen address; undefined host = every interface. */
export interface ListenAddress {
  readonly host: string | undefined;
  readonly port: number;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface ManagerOptions {
  readonly log: Logger;
  readonly work: LeaderWork;
  /** Undefined: no leader election, the controllers start at once. */
  readonly elector?: Elector;
  /**
   * After taking the Lease, when to reconcile every CR once more (see `#settleAfterTakeover`);
   * undefined: never.
   */
  readonly settleAfterTakeoverMs?: number;
  /** How long in-flight reconciles may run after the stop signal; undefined: each controller's own. */
  readonly gracefulShutdownTimeoutMs?: number;
  readonly configWatch?: ConfigWatch;
  /** Serves `handler` (Prometheus) on `bind`; with its own `listen` (HTTPS, `--metrics-secure`) or plain HTTP. */
  readonly metricsServer?: {
    readonly bind: ListenAddress;
    readonly handler: Handler;
    readonly listen?: (bind: ListenAddress, handler: Handler) => Promise<HttpListener>;
  };
  /** Serves `/healthz` and `/readyz` on this address. */
  readonly healthProbeBindAddress?: ListenAddress;
  /** For tests; default {@link listenHttp}. */
  readonly listen?: (bind: ListenAddress, handler: Handler) => Promise<HttpListener>;
  readonly clock?: Clock;
}

export type ManagerState = 'idle' | 'standby' | 'starting' | 'running' | 'stopping' | 'stopped';

/** Leadership was lost: the process must exit non-zero (another replica may be reconciling). */
export class LeadershipLostError extends Error {
  override readonly name = 'LeadershipLostError';
}

/** A server could not listen (the port is taken, say). */
export class ListenError extends Error {
  override readonly name = 'ListenError';
}

/** After lost leadership, how long cancelled helm processes get to record their state. */
export const LOST_LEADERSHIP_ABORT_GRACE_MS = 3_000;

const formatBind = (b: ListenAddress): string => `${b.host ?? ''}:${b.port}`;

const never = new Promise<never>(() => undefined);

const aborted = (signal: AbortSignal): Promise<void> =>
  signal.aborted
    ? Promise.resolve()
    : new Promise((resolve) => {
        signal.addEventListener(
          'abort',
          () => {
            resolve();
          },
          { once: true },
        );
      });

export class Manager {
  readonly #o: ManagerOptions;
  readonly #clock: Clock;
  #state: ManagerState = 'idle';
  #ran = false;
  #started = false;
  #settle: Timer | undefined;
  readonly #startedOnce = Promise.withResolvers<undefined>();
  /** Resolves once the controllers have started and synced (never, if the manager stops first). */
  readonly started: Promise<undefined> = this.#startedOnce.promise;

  constructor(options: ManagerOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    // Cancelled in the same tick as the loss, not after `lost` resolves: a callback queued
    // meanwhile (a thawed process runs its I/O before its timers) must find its reconcile aborted
    // and start no helm process. run() awaits the same stop.
    options.elector?.onLost(() => {
      void this.#cancelForLostLeadership();
    });
  }

  #cancelForLostLeadership(): Promise<void> {
    return this.#o.work.stop({ timeoutMs: 0, abortGraceMs: LOST_LEADERSHIP_ABORT_GRACE_MS, leadershipLost: true });
  }

  get state(): ManagerState {
    return this.#state;
  }

  /** `/readyz`: caches synced; a standby (not leading, not started) is ready too. */
  readonly ready: Checker = () => {
    const { elector, work } = this.#o;
    if (!this.#started && elector !== undefined && !elector.isLeader()) return;
    if (!this.#started || !work.hasSynced()) throw new Error('informer caches have not synced');
  };

  /**
   * Runs until `stop` aborts (resolves, after a graceful shutdown) or leadership is lost (rejects
   * with {@link LeadershipLostError}, after cancelling). Call once.
   */
  async run(stop: AbortSignal): Promise<void> {
    if (this.#ran) throw new Error('Manager.run() may be called once');
    this.#ran = true;
    const servers: HttpListener[] = [];
    try {
      await this.#startServers(servers);
      await this.#lifecycle(stop);
    } finally {
      this.#state = 'stopped';
      await Promise.all(servers.map((s) => s.close()));
    }
  }

  async #lifecycle(stop: AbortSignal): Promise<void> {
    const { elector, work, log } = this.#o;
    try {
      if (elector !== undefined) {
        this.#state = 'standby';
        if (!(await elector.acquire(stop))) {
          log.info('Stopped before becoming the leader');
          return;
        }
      }
      await this.#lead(stop);
    } finally {
      this.#state = 'stopping';
      await this.#stopWatching();
      if (!this.#started) await work.stop({}).catch(() => undefined);
      await elector?.release();
    }
  }

  async #lead(stop: AbortSignal): Promise<void> {
    const { elector, work, log } = this.#o;
    this.#state = 'starting';
    const starting = work.start().then(() => {
      this.#started = true;
      this.#state = 'running';
      log.info('All controllers started and synced');
      if (!stop.aborted) this.#o.configWatch?.start();
      this.#settleAfterTakeover();
      this.#startedOnce.resolve(undefined);
    });
    const lost = elector?.lost ?? never;
    const event = await Promise.race([
      starting.then(() => never),
      aborted(stop).then(() => 'stop' as const),
      lost.then(() => 'lost' as const),
    ]);
    this.#state = 'stopping';
    await this.#stopWatching();
    if (event === 'lost') {
      // Another replica may be reconciling already: cancel at once instead of finishing.
      await this.#cancelForLostLeadership();
      await starting.catch(() => undefined);
      throw new LeadershipLostError((await lost).message);
    }
    await work.stop(this.#o.gracefulShutdownTimeoutMs === undefined ? {} : { timeoutMs: this.#o.gracefulShutdownTimeoutMs });
    await starting.catch((err: unknown) => {
      log.debug({ error: err }, 'start interrupted by shutdown');
    });
  }

  /**
   * A previous leader's helm can still write a release's storage after this replica took the Lease:
   * a frozen process tree that thaws (a VM stall, a cgroup freeze) runs on until its operator
   * notices it lost the Lease, and nothing fences helm's storage (docs/chaos.md). Once the old
   * leader can no longer believe it leads, twice over, every CR is reconciled once more, so such a
   * late write is repaired then, not at the next reconcile period.
   */
  #settleAfterTakeover(): void {
    const delayMs = this.#o.settleAfterTakeoverMs;
    if (delayMs === undefined || this.#o.elector === undefined) return;
    this.#settle = this.#clock.setTimeout(() => {
      const queued = this.#o.work.resyncAll();
      this.#o.log.info({ queued, afterMs: delayMs }, 'Reconciling every CR once more after taking over leadership');
    }, delayMs);
  }

  async #stopWatching(): Promise<void> {
    this.#settle?.cancel();
    this.#settle = undefined;
    await this.#o.configWatch?.stop();
  }

  /** Starts the servers into `servers` (which the caller closes, also when one fails to listen). */
  async #startServers(servers: HttpListener[]): Promise<void> {
    const { metricsServer, healthProbeBindAddress, log } = this.#o;
    const listen = this.#o.listen ?? listenHttp;
    try {
      if (metricsServer !== undefined) {
        const server = await (metricsServer.listen ?? listen)(metricsServer.bind, metricsServer.handler);
        servers.push(server);
        log.info(
          { bindAddress: formatBind(metricsServer.bind), address: server.address, secure: metricsServer.listen !== undefined },
          'Serving metrics server',
        );
      }
      if (healthProbeBindAddress !== undefined) {
        const readyz = new Map<string, Checker>([
          ['ping', ping],
          ['informers', this.ready],
        ]);
        const server = await listen(healthProbeBindAddress, healthHandler({ healthz: new Map([['ping', ping]]), readyz }, log));
        servers.push(server);
        log.info({ bindAddress: formatBind(healthProbeBindAddress), address: server.address }, 'Serving health probe server');
      }
    } catch (err) {
      throw new ListenError(`cannot listen: ${(err as Error).message}`, { cause: err });
    }
  }
}
