/**
 * Kubernetes Events about a CR (what `kubectl describe` shows), with client-go-style aggregation:
 * the same event repeated within `aggregateWindowMs` bumps `count` on one Event instead of piling up
 * new ones. Recording never fails nor waits for the API server: like client-go's recorder, `record`
 * queues the write and returns, so an Event costs a reconcile no round trip. Writes about one object
 * stay in order (its aggregation depends on it); an event that cannot be written, or that finds
 * MAX_PENDING writes queued already, is logged and dropped.
 */
import { randomBytes } from 'node:crypto';
import type { CoreV1Event } from '@kubernetes/client-node';
import { HttpMethod, PatchStrategy, type KubeConfig } from './client-node.js';
import type { Logger } from '../telemetry/logger.js';
import { describeError } from './errors.js';
import { RawClient, resourcePath } from './raw-client.js';

export type EventType = 'Normal' | 'Warning';

export interface EventTarget {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly uid?: string; readonly resourceVersion?: string };
}

export interface EventRecorder {
  /** Queues an Event about `target`; returns at once. */
  record(target: EventTarget, type: EventType, reason: string, message: string): void;
}

interface Seen {
  readonly name: string;
  readonly namespace: string;
  count: number;
  lastAt: number;
}

const MAX_MESSAGE = 1024;

/** Events kept for aggregation at most (client-go's event cache holds 4096). */
const MAX_AGGREGATED = 10_000;

/** Queued writes beyond which new events are dropped (client-go's broadcaster queue holds 1000). */
const MAX_PENDING = 1000;

const eventsPath = (namespace: string): string => resourcePath({ group: '', version: 'v1', plural: 'events', namespace });

export class KubeEventRecorder implements EventRecorder {
  readonly #raw: RawClient;
  readonly #seen = new Map<string, Seen>();
  /** The last queued write per involved object: the next one about it waits for it. */
  readonly #tails = new Map<string, Promise<void>>();
  #pending = 0;

  constructor(
    kc: KubeConfig,
    private readonly component: string,
    private readonly log: Logger,
    private readonly aggregateWindowMs = 10 * 60_000,
  ) {
    this.#raw = kc.makeApiClient(RawClient);
  }

  record(target: EventTarget, type: EventType, reason: string, message: string): void {
    if (this.#pending >= MAX_PENDING) {
      this.log.warn({ reason, pending: this.#pending }, 'Could not record event: too many events waiting to be written');
      return;
    }
    const meta = target.metadata ?? {};
    const object = meta.uid ?? `${meta.namespace ?? ''}/${meta.name ?? ''}`;
    this.#pending++;
    const tail: Promise<void> = (this.#tails.get(object) ?? Promise.resolve())
      .then(() => this.#write(target, type, reason, message))
      .finally(() => {
        this.#pending--;
        if (this.#tails.get(object) === tail) this.#tails.delete(object);
      });
    this.#tails.set(object, tail);
  }

  /** Resolves once every event queued so far is written or dropped, or after `timeoutMs`. */
  async flush(timeoutMs: number): Promise<void> {
    const timer = new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref());
    await Promise.race([Promise.all(this.#tails.values()).then(() => undefined), timer]);
  }

  /** Never rejects. */
  async #write(target: EventTarget, type: EventType, reason: string, message: string): Promise<void> {
    const meta = target.metadata ?? {};
    const namespace = meta.namespace ?? 'default';
    const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message;
    const key = [meta.uid, type, reason, text].join('\u0000');
    const now = Date.now();
    try {
      const seen = this.#seen.get(key);
      if (seen !== undefined && now - seen.lastAt < this.aggregateWindowMs) {
        seen.count++;
        seen.lastAt = now;
        // Moved to the end: the map stays ordered by lastAt, so expired entries are at its start.
        this.#seen.delete(key);
        this.#seen.set(key, seen);
        await this.#raw.request(HttpMethod.PATCH, `${eventsPath(seen.namespace)}/${encodeURIComponent(seen.name)}`, {
          body: { count: seen.count, lastTimestamp: new Date(now) },
          contentType: PatchStrategy.MergePatch,
        });
        return;
      }
      const name = `${meta.name ?? 'unknown'}.${now.toString(16)}${randomBytes(2).toString('hex')}`;
      const body: CoreV1Event = {
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: target.apiVersion,
          kind: target.kind,
          name: meta.name ?? '',
          namespace,
          ...(meta.uid === undefined ? {} : { uid: meta.uid }),
          ...(meta.resourceVersion === undefined ? {} : { resourceVersion: meta.resourceVersion }),
        },
        type,
        reason,
        message: text,
        count: 1,
        firstTimestamp: new Date(now),
        lastTimestamp: new Date(now),
        source: { component: this.component },
        reportingComponent: this.component,
      };
      await this.#raw.request(HttpMethod.POST, eventsPath(namespace), { body });
      this.#remember(key, { name, namespace, count: 1, lastAt: now });
    } catch (err) {
      // A deleted namespace or a missing RBAC rule must not turn into a failed reconcile.
      this.log.warn({ reason, error: describeError(err) }, 'Could not record event');
      this.#seen.delete(key);
    }
  }

  /**
   * Keeps `seen` for aggregating repeats. Entries past the aggregation window can aggregate nothing
   * more and go, with the oldest beyond 10,000: an Event about a CR long deleted (its UID is in the
   * key) is not kept for the life of the process.
   */
  #remember(key: string, seen: Seen): void {
    this.#seen.set(key, seen);
    for (const [k, v] of this.#seen) {
      if (this.#seen.size <= MAX_AGGREGATED && seen.lastAt - v.lastAt < this.aggregateWindowMs) break;
      this.#seen.delete(k);
    }
  }

  /** How many Events a repeat could still be aggregated into. */
  get aggregating(): number {
    return this.#seen.size;
  }
}
