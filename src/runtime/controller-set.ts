/**
 * The running controllers, by name. Controllers added while the set runs start at once, so a
 * watches.yaml reload can add and remove kinds without a restart. When the set runs is the
 * manager's decision (manager.ts: leader election, shutdown).
 */
import type { Logger } from '../telemetry/logger.js';
import type { StopOptions } from './controller.js';

/** What the set needs of a controller; `Controller` implements it. */
export interface ManagedController {
  readonly name: string;
  start(): Promise<void>;
  stop(how?: StopOptions): Promise<void>;
  hasSynced(): boolean;
}

export class DuplicateControllerError extends Error {
  override readonly name = 'DuplicateControllerError';
}

export class ControllerSet<C extends ManagedController = ManagedController> {
  readonly #controllers = new Map<string, C>();
  readonly #log: Logger;
  #running = false;

  constructor(options: { readonly log: Logger }) {
    this.#log = options.log;
  }

  /**
   * Registers `controller`; if the set is running, also starts it and resolves once it has
   * synced (a failed start unregisters it again and rejects).
   */
  async add(controller: C): Promise<void> {
    if (this.#controllers.has(controller.name)) {
      throw new DuplicateControllerError(`a controller named ${controller.name} is already registered`);
    }
    this.#controllers.set(controller.name, controller);
    if (!this.#running) return;
    try {
      await controller.start();
    } catch (err) {
      this.#controllers.delete(controller.name);
      throw err;
    }
  }

  /** Unregisters and stops the named controller; false if there was none. */
  async remove(name: string): Promise<boolean> {
    const controller = this.#controllers.get(name);
    if (controller === undefined) return false;
    this.#controllers.delete(name);
    await controller.stop();
    return true;
  }

  get(name: string): C | undefined {
    return this.#controllers.get(name);
  }

  names(): string[] {
    return [...this.#controllers.keys()];
  }

  /** Starts every controller; if any fails to start, stops them all and rethrows the first error. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    const controllers = [...this.#controllers.values()];
    const results = await Promise.allSettled(controllers.map((c) => c.start()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed === undefined) return;
    this.#log.error({ error: failed.reason }, 'a controller failed to start; stopping all');
    await this.stop();
    throw failed.reason;
  }

  /**
   * Stops every controller concurrently: gracefully, each bounded by `how.timeoutMs` or its own
   * shutdown timeout, or cancelling at once (lost leadership).
   */
  async stop(how?: StopOptions): Promise<void> {
    this.#running = false;
    const results = await Promise.allSettled([...this.#controllers.values()].map((c) => c.stop(how)));
    for (const r of results) if (r.status === 'rejected') this.#log.error({ error: r.reason }, 'a controller failed to stop');
  }

  /** True when every registered controller has synced (vacuously true with none). */
  hasSynced(): boolean {
    for (const c of this.#controllers.values()) if (!c.hasSynced()) return false;
    return true;
  }
}
