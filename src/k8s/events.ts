/**
 * Kubernetes Events about a CR (what `kubectl describe` shows), with client-go-style aggregation:
 * the same event repeated within `aggregateWindowMs` bumps `count` on one Event instead of piling up
 * new ones. Recording never fails a reconcile: an event that cannot be written is logged and dropped.
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
  record(target: EventTarget, type: EventType, reason: string, message: string): Promise<void>;
}

interface Seen {
  readonly name: string;
  readonly namespace: string;
  count: number;
  lastAt: number;
}

const MAX_MESSAGE = 1024;

const eventsPath = (namespace: string): string => resourcePath({ group: '', version: 'v1', plural: 'events', namespace });

export class KubeEventRecorder implements EventRecorder {
  readonly #raw: RawClient;
  readonly #seen = new Map<string, Seen>();

  constructor(
    kc: KubeConfig,
    private readonly component: string,
    private readonly log: Logger,
    private readonly aggregateWindowMs = 10 * 60_000,
  ) {
    this.#raw = kc.makeApiClient(RawClient);
  }

  async record(target: EventTarget, type: EventType, reason: string, message: string): Promise<void> {
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

  #remember(key: string, seen: Seen): void {
    this.#seen.set(key, seen);
    if (this.#seen.size > 10_000) {
      const oldest = this.#seen.keys().next().value;
      if (oldest !== undefined) this.#seen.delete(oldest);
    }
  }
}
