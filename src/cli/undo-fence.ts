/**
 * Keeps the operator's hands off a release while `rollout undo` runs helm on it (docs/adr/0061).
 * The operator takes any `pending-*` revision for one whose process died and unlocks it at once
 * (ADR 0036 can only see its own helms): met mid-way, the CLI's `pending-rollback` was rolled back
 * again, to the failed revision, by the reconcile the rollback's own Deployment update woke. So the
 * CR is paused by its annotation first, and helm runs only once the operator says so in status
 * (`Paused=True`): that reconcile read the annotation, and a CR's reconciles run one at a time, so
 * none that began before it is still going.
 */
import { HttpMethod, type KubeConfig } from '../k8s/client-node.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';
import { ANNOTATIONS, ConditionType, readStatus } from '../reconciler/index.js';

export interface FencedCR {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly namespace: string;
  readonly name: string;
}

export interface FenceOptions {
  /** How long to wait for the operator to confirm the pause; none running, helm goes on after it. */
  readonly ackTimeoutMs: number;
  readonly pollMs?: number;
}

/** What the fence found: whether an operator confirmed it (false: none answered in time). */
export interface Fence {
  readonly confirmed: boolean;
}

interface CRView {
  metadata?: { annotations?: Record<string, string> };
  status?: unknown;
}

/** Runs `work` with the CR paused (and confirmed paused), then restores the annotation as it was. */
export async function whilePaused<T>(kc: KubeConfig, cr: FencedCR, o: FenceOptions, work: (fence: Fence) => Promise<T>): Promise<T> {
  const raw = kc.makeApiClient(RawClient);
  const path = `${resourcePath({ group: cr.group, version: cr.version, plural: cr.plural, namespace: cr.namespace })}/${encodeURIComponent(cr.name)}`;
  const get = async (): Promise<CRView> => (await raw.request(HttpMethod.GET, path)) as CRView;
  const annotate = (value: string | null): Promise<unknown> =>
    raw.request(HttpMethod.PATCH, path, {
      body: { metadata: { annotations: { [ANNOTATIONS.paused]: value } } },
      contentType: 'application/merge-patch+json',
    });
  // Paused by someone else already: theirs to lift, not ours.
  const ours = (await get()).metadata?.annotations?.[ANNOTATIONS.paused] !== 'true';
  if (ours) await annotate('true');
  try {
    const confirmed = await confirmedPaused(get, o);
    return await work({ confirmed });
  } finally {
    if (ours) await annotate(null);
  }
}

async function confirmedPaused(get: () => Promise<CRView>, o: FenceOptions): Promise<boolean> {
  const deadline = Date.now() + o.ackTimeoutMs;
  for (;;) {
    const paused = readStatus((await get()).status).conditions.find((c) => c.type === ConditionType.Paused);
    if (paused?.status === 'True') return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, o.pollMs ?? 500));
  }
}
