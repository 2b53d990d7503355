/** Reading Kubernetes API errors without leaking client-node's raw messages into status. */
import { ApiException } from './client-node.js';

export const isStatus = (err: unknown, code: number): boolean => err instanceof ApiException && err.code === code;
export const isNotFound = (err: unknown): boolean => isStatus(err, 404);
export const isConflict = (err: unknown): boolean => isStatus(err, 409);

interface StatusBody {
  reason?: string;
  message?: string;
  details?: { causes?: readonly { reason?: string; message?: string; field?: string }[] };
}

function statusBody(err: unknown): StatusBody | undefined {
  if (!(err instanceof ApiException) || typeof err.body !== 'string') return undefined;
  try {
    return JSON.parse(err.body) as StatusBody;
  } catch {
    return undefined;
  }
}

/** A one-line description fit for a condition or event: the apiserver's own message when it has one. */
export function describeError(err: unknown): string {
  if (err instanceof ApiException) {
    const code = String(err.code);
    return statusBody(err)?.message ?? `Kubernetes API request failed with HTTP ${code}`;
  }
  if (err instanceof Error) return err.message;
  return String(err);
}

/** A field server-side apply refused to take from another field manager. */
export interface FieldConflict {
  readonly manager: string;
  /** As the API server names it: `.spec.replicas`, `.webhooks[name="a"].clientConfig.caBundle`. */
  readonly field: string;
}

/**
 * The conflicts of a refused server-side apply (409, one `FieldManagerConflict` cause per field,
 * its message `conflict with "<manager>"` and more); empty for any other error.
 */
export function fieldConflicts(err: unknown): FieldConflict[] {
  if (!isConflict(err)) return [];
  return (statusBody(err)?.details?.causes ?? []).flatMap((c) => {
    const manager = /^conflict with "([^"]*)"/.exec(c.message ?? '')?.[1];
    return c.reason === 'FieldManagerConflict' && manager !== undefined && c.field !== undefined ? [{ manager, field: c.field }] : [];
  });
}
