/**
 * The last version of each object a client read or wrote, so that reading the version the
 * informer cache holds costs no request: two reads of one resourceVersion are the same object. It
 * is read-your-writes without keeping spec and status in the cache (ADR 0020, ADR 0069): only the
 * objects this client touched are kept, as compact JSON, and within bounds a tenant cannot push
 * (an object whose JSON is longer than `maxObjectLength` is not kept; past `maxTotalLength` the
 * least recently used go first). Lengths are of the JSON text, in UTF-16 units, as V8 holds it.
 *
 * The cache may also hold a version this client saw before its latest: the watch has not yet
 * delivered this client's own last write. The latest kept is then newer than what the cache holds
 * and is the answer too (ADR 0071). Only the order of this client's own reads and writes of one
 * object is used, never a comparison of resourceVersions, which Kubernetes keeps opaque: the
 * reconciles of one object run one at a time, so each answer kept is newer than the one before.
 */
import type { KubernetesObject } from './client-node.js';

export interface VersionMemoLimits {
  /** An object whose JSON is longer is read with a GET every time. */
  readonly maxObjectLength: number;
  /** All kept objects together; the least recently used go first. */
  readonly maxTotalLength: number;
}

/** A 1,000-CR fleet of typical CRs (1–4 KiB of JSON each) fits; a few huge ones cannot crowd it out. */
export const DEFAULT_VERSION_MEMO_LIMITS: VersionMemoLimits = { maxObjectLength: 16 * 1024, maxTotalLength: 8 * 1024 * 1024 };

/**
 * How many versions before the latest are known as older: a reconcile writes a CR at most a few
 * times (finalizer, progress, status) before the watch catches up; past that a read costs a GET.
 */
export const EARLIER_VERSIONS_KEPT = 4;

interface Entry {
  readonly version: string;
  /** Versions this client saw of the object before `version`, newest first. */
  readonly earlier: readonly string[];
  readonly json: string;
  /** What the entry counts against `maxTotalLength`: its JSON and its version strings. */
  readonly length: number;
}

const versionsLength = (versions: readonly string[]): number => versions.reduce((sum, v) => sum + v.length, 0);

export class VersionMemo<T extends KubernetesObject> {
  readonly #entries = new Map<string, Entry>();
  #length = 0;

  constructor(private readonly limits: VersionMemoLimits = DEFAULT_VERSION_MEMO_LIMITS) {}

  /** Keeps `obj` as the latest known version of `key` (managedFields left out: nobody reads them from here). */
  remember(key: string, obj: T): void {
    const version = obj.metadata?.resourceVersion;
    const previous = this.#entries.get(key);
    this.forget(key);
    if (version === undefined || version === '') return;
    const { managedFields: _dropped, ...metadata } = obj.metadata ?? {};
    const json = JSON.stringify({ ...obj, metadata });
    if (json.length > this.limits.maxObjectLength) return;
    const earlier =
      previous === undefined || previous.version === version
        ? (previous?.earlier ?? [])
        : [previous.version, ...previous.earlier].slice(0, EARLIER_VERSIONS_KEPT);
    const length = json.length + version.length + versionsLength(earlier);
    this.#entries.set(key, { version, earlier, json, length });
    this.#length += length;
    for (const [oldest, entry] of this.#entries) {
      if (this.#length <= this.limits.maxTotalLength) break;
      this.#entries.delete(oldest);
      this.#length -= entry.length;
    }
  }

  /**
   * A fresh copy of the latest kept of `key` when the cache's `version` is that one, or one this
   * client saw before it (the cache is behind our own write); else undefined (read it).
   */
  recall(key: string, version: string | undefined): T | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || version === undefined || (entry.version !== version && !entry.earlier.includes(version))) return undefined;
    // Most recently used last, so eviction takes the coldest first.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return JSON.parse(entry.json) as T;
  }

  forget(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#length -= entry.length;
  }

  /** What is kept, for tests and metrics. */
  get size(): { objects: number; length: number } {
    return { objects: this.#entries.size, length: this.#length };
  }
}
