/**
 * The parsed manifest of each CR's deployed revision, so that steady-state reconciles need no helm
 * process. An entry is valid only for the CR instance (UID) it was read for: a CR created again
 * under the same name starts a new release whose revision 1 is not the old one's.
 */
import { inventoryOf, parseManifest, type InventoryEntry } from './inventory.js';
import type { Confirmation, KeptRelease, KeptRevision, ManifestsPort } from '../core/ports.js';
import type { DesiredObject } from './release-object-types.js';

export type IsNamespaced = (apiVersion: string, kind: string) => Promise<boolean>;

interface Entry extends KeptRevision {
  readonly uid: string;
  readonly objects: DesiredObject[];
}

export class ManifestCache implements ManifestsPort {
  readonly #entries = new Map<string, Entry>();

  constructor(private readonly isNamespaced: IsNamespaced) {}

  /** The revision last kept for the CR at `namespace/name`, whichever instance it was. */
  revision(namespace: string, name: string): number | undefined {
    return this.#entries.get(`${namespace}/${name}`)?.revision;
  }

  /** The objects of `revision`, when they were kept for this very CR instance. */
  get(namespace: string, name: string, uid: string, revision: number): DesiredObject[] | undefined {
    const entry = this.#entries.get(`${namespace}/${name}`);
    return entry?.uid === uid && entry.revision === revision ? entry.objects : undefined;
  }

  /** The revision last kept for this very CR instance, with its objects and whether it has delete hooks. */
  kept(namespace: string, name: string, uid: string): KeptRevision | undefined {
    const entry = this.#entries.get(`${namespace}/${name}`);
    return entry?.uid === uid ? entry : undefined;
  }

  /** Parses a release's manifest, pairs each object with where it lives, and keeps it for CR `uid`. */
  async remember(name: string, uid: string, release: KeptRelease): Promise<DesiredObject[]> {
    const rendered = parseManifest(release.manifest);
    const entries = await inventoryOf(rendered, release.namespace, this.isNamespaced);
    const objects = rendered.map((r, i) => ({ rendered: r, entry: entries[i] as InventoryEntry }));
    this.#entries.set(`${release.namespace}/${name}`, { uid, revision: release.revision, objects, deleteHooks: release.deleteHooks });
    return objects;
  }

  confirm(cr: { namespace: string; name: string; uid: string }, confirmation: Confirmation): void {
    const key = `${cr.namespace}/${cr.name}`;
    const entry = this.#entries.get(key);
    const { record, atMs } = confirmation;
    if (entry?.uid !== cr.uid || entry.revision !== record.revision || record.status !== 'deployed') return;
    // Never moved back: a reconcile that read early must not shorten what a later one confirmed.
    if (entry.confirmed !== undefined && entry.confirmed.atMs >= atMs) return;
    this.#entries.set(key, { ...entry, confirmed: confirmation });
  }

  unconfirm(namespace: string, name: string): void {
    this.#unconfirm(`${namespace}/${name}`);
  }

  unconfirmAll(): void {
    for (const key of this.#entries.keys()) this.#unconfirm(key);
  }

  #unconfirm(key: string): void {
    const entry = this.#entries.get(key);
    if (entry?.confirmed === undefined) return;
    const { confirmed: _dropped, ...rest } = entry;
    this.#entries.set(key, rest);
  }

  forget(namespace: string, name: string): void {
    this.#entries.delete(`${namespace}/${name}`);
  }
}
