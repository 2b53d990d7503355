/**
 * HMAC-SHA256 under a long-lived key. `createHmac` given raw bytes makes a KeyObject of them on
 * every call, which costs six times the MAC of a short message (21 µs against 3 µs measured): the
 * rollout gate opens every CR's status seal and each reconcile keys its fingerprint, so the steady
 * state of a large fleet spent most of its CPU there. The KeyObject is made once per key.
 * Keys are never written after they are made, so the one made from a key's bytes stays right.
 */
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

const keyObjects = new WeakMap<Uint8Array, KeyObject>();

export function hmacSha256(key: Uint8Array): ReturnType<typeof createHmac> {
  let keyObject = keyObjects.get(key);
  if (keyObject === undefined) {
    keyObject = createSecretKey(key);
    keyObjects.set(key, keyObject);
  }
  return createHmac('sha256', keyObject);
}
