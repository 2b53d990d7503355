/**
 * The key under which CR status shows a release's fingerprint (ADR 0044): kept in a Secret of the
 * operator's own namespace, which tenants cannot read, made by the first replica that finds none,
 * so every replica and every restart uses the same one and the retry budget counts across them.
 */
import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { HttpMethod } from '../k8s/client-node.js';
import { describeError, isStatus } from '../k8s/errors.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';
import type { Logger } from '../telemetry/logger.js';

export const FINGERPRINT_KEY_SECRET = 'helm-operator-fingerprint-key';
const KEY_BYTES = 32;

/** The key in a Secret as the API server returns it; undefined when it holds none fit for use. */
export function keyOf(secret: unknown): Buffer | undefined {
  const data = (secret as { data?: Record<string, unknown> } | undefined)?.data;
  const encoded = data?.key;
  if (typeof encoded !== 'string') return undefined;
  const key = Buffer.from(encoded, 'base64');
  return key.length >= KEY_BYTES ? key : undefined;
}

const secretsPath = (namespace: string): string => resourcePath({ group: '', version: 'v1', plural: 'secrets', namespace });

/**
 * The key from the Secret {@link FINGERPRINT_KEY_SECRET} of `namespace`, read only: undefined when
 * there is none. For the operator's own start ({@link loadFingerprintKey}) and for readers of what
 * it keys, such as `rollout status` checking the seals (who may read the Secret: the platform).
 *
 * @throws the API server's error (a 403 for a reader without the right), or for a Secret without a key fit for use.
 */
export async function readFingerprintKey(kubeConfig: KubeConfig, namespace: string): Promise<Buffer | undefined> {
  try {
    const secret = await kubeConfig.makeApiClient(RawClient).request(HttpMethod.GET, `${secretsPath(namespace)}/${FINGERPRINT_KEY_SECRET}`);
    return keyOf(secret) ?? invalid(namespace);
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

/**
 * The key from the Secret {@link FINGERPRINT_KEY_SECRET} of `namespace`, created when there is
 * none. Without a namespace (out of cluster, no `--leader-election-namespace`), or when the Secret
 * can be neither read nor made, a key for this process only: status still reveals nothing, but
 * the retry budget then starts again with each process, which the warning says.
 */
export async function loadFingerprintKey(kubeConfig: KubeConfig, namespace: string | undefined, log: Logger): Promise<Buffer> {
  if (namespace === undefined) {
    log.info("No operator namespace: the fingerprint key in status is this process's own, so retry budgets restart with the operator");
    return randomBytes(KEY_BYTES);
  }
  const raw = kubeConfig.makeApiClient(RawClient);
  const read = (): Promise<Buffer | undefined> => readFingerprintKey(kubeConfig, namespace);
  try {
    const found = await read();
    if (found !== undefined) return found;
    const key = randomBytes(KEY_BYTES);
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: FINGERPRINT_KEY_SECRET, namespace, labels: { 'app.kubernetes.io/managed-by': 'helm-operator' } },
      type: 'Opaque',
      data: { key: key.toString('base64') },
    };
    try {
      await raw.request(HttpMethod.POST, secretsPath(namespace), { body });
      return key;
    } catch (err) {
      // Another replica made it first: use theirs.
      if (!isStatus(err, 409)) throw err;
      return (await read()) ?? invalid(namespace);
    }
  } catch (err) {
    log.warn(
      { namespace, secret: FINGERPRINT_KEY_SECRET, error: describeError(err) },
      'Cannot read or create the fingerprint key Secret: using a key of this process, so retry budgets restart with the operator',
    );
    return randomBytes(KEY_BYTES);
  }
}

function invalid(namespace: string): never {
  throw new Error(
    `Secret ${namespace}/${FINGERPRINT_KEY_SECRET} has no data.key of at least ${KEY_BYTES} bytes; delete it and the operator makes a new one`,
  );
}
