/**
 * Kubernetes Events about a CR (what `kubectl describe` shows), correlated as client-go does
 * (event-correlator.ts): the same event repeated within the window bumps `count` on one Event
 * instead of piling up new ones, more than 10 distinct messages of one reason share one combined
 * Event, and a token bucket per object drops a flood (`onDropped` counts it). Recording never fails nor waits for the API server: like client-go's recorder, `record`
 * queues the write and returns, so an Event costs a reconcile no round trip. Writes about one object
 * stay in order (its aggregation depends on it); an event that cannot be written, or that finds
 * MAX_PENDING writes queued already, is logged and dropped.
 */
import { randomBytes } from 'node:crypto';
import type { CoreV1Event } from '@kubernetes/client-node';
import { HttpMethod, PatchStrategy, type KubeConfig } from './client-node.js';
import type { Logger } from '../telemetry/logger.js';
import { withDeadline } from '../util/clock.js';
import { describeError } from './errors.js';
import { CLIENT_GO_LIMITS, EventCorrelator, type CorrelatorLimits } from './event-correlator.js';
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

const MAX_MESSAGE = 1024;

/** Queued writes beyond which new events are dropped (client-go's broadcaster queue holds 1000). */
const MAX_PENDING = 1000;

/** Why an event was not written. */
export type DropReason = 'rate-limited' | 'queue-full';

export interface RecorderOptions {
  /** Aggregation, deduplication and the per-object rate limit; client-go's defaults when unset. */
  readonly limits?: Partial<CorrelatorLimits>;
  /** Counts an event not written (the operator's `helm_operator_events_dropped_total`). */
  readonly onDropped?: (reason: DropReason) => void;
}

const eventsPath = (namespace: string): string => resourcePath({ group: '', version: 'v1', plural: 'events', namespace });

export class KubeEventRecorder implements EventRecorder {
  readonly #raw: RawClient;
  readonly #correlator: EventCorrelator;
  /** The last queued write per involved object: the next one about it waits for it. */
  readonly #tails = new Map<string, Promise<void>>();
  #pending = 0;

  constructor(
    kc: KubeConfig,
    private readonly component: string,
    private readonly log: Logger,
    private readonly options: RecorderOptions = {},
  ) {
    this.#raw = kc.makeApiClient(RawClient);
    this.#correlator = new EventCorrelator({ ...CLIENT_GO_LIMITS, ...options.limits });
  }

  record(target: EventTarget, type: EventType, reason: string, message: string): void {
    if (this.#pending >= MAX_PENDING) {
      this.log.warn({ reason, pending: this.#pending }, 'Could not record event: too many events waiting to be written');
      this.options.onDropped?.('queue-full');
      return;
    }
    const meta = target.metadata ?? {};
    const object = meta.uid ?? `${meta.namespace ?? ''}/${meta.name ?? ''}`;
    this.#pending++;
    const tail: Promise<void> = (this.#tails.get(object) ?? Promise.resolve())
      .then(() => this.#write({ object, type, reason, message }, target))
      .finally(() => {
        this.#pending--;
        if (this.#tails.get(object) === tail) this.#tails.delete(object);
      });
    this.#tails.set(object, tail);
  }

  /** Resolves once every event queued so far is written or dropped, or after `timeoutMs`. */
  async flush(timeoutMs: number): Promise<void> {
    await withDeadline(Promise.all(this.#tails.values()), timeoutMs);
  }

  /** Never rejects. Decides in the object's write order, so a repeat finds the Event just created. */
  async #write(e: { object: string; type: EventType; reason: string; message: string }, target: EventTarget): Promise<void> {
    const { type, reason, message } = e;
    const meta = target.metadata ?? {};
    const namespace = meta.namespace ?? 'default';
    const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message;
    const now = Date.now();
    const verdict = this.#correlator.correlate({ ...e, message: text }, now);
    if (verdict.write === 'drop') {
      this.log.debug({ reason }, 'Event not recorded: too many events about this object');
      this.options.onDropped?.(verdict.why);
      return;
    }
    try {
      if (verdict.write === 'update') {
        const { event, count } = verdict;
        await this.#raw.request(HttpMethod.PATCH, `${eventsPath(event.namespace)}/${encodeURIComponent(event.name)}`, {
          body: { count, lastTimestamp: new Date(now), message: verdict.message },
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
        message: verdict.message,
        count: verdict.count,
        firstTimestamp: new Date(now),
        lastTimestamp: new Date(now),
        source: { component: this.component },
        reportingComponent: this.component,
      };
      await this.#raw.request(HttpMethod.POST, eventsPath(namespace), { body });
      this.#correlator.created(verdict.key, { name, namespace });
    } catch (err) {
      // A deleted namespace or a missing RBAC rule must not turn into a failed reconcile.
      this.log.warn({ reason, error: describeError(err) }, 'Could not record event');
      this.#correlator.forget(verdict.key);
    }
  }

  /** How many Events a repeat could still be aggregated into. */
  get aggregating(): number {
    return this.#correlator.events;
  }
}
