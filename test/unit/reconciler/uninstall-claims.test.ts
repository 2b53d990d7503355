import { describe, expect, it } from 'vitest';
import { UninstallClaims } from '../../../src/reconciler/uninstall-claims.js';

describe('UninstallClaims', () => {
  it('a finalizer waits for the batch holding its release and learns whether the batch uninstalled it', async () => {
    const claims = new UninstallClaims();
    const settle = claims.claim('ns/b')!;
    expect(claims.isHeld('ns/b')).toBe(true);
    const told = claims.finalize('ns/b', (batched) => Promise.resolve(batched));
    settle(true);
    settle(false); // settling twice changes nothing
    expect(await told).toBe(true);
    expect(claims.isHeld('ns/b')).toBe(false);
    // The claim was consumed: the next finalize runs on its own.
    expect(await claims.finalize('ns/b', (batched) => Promise.resolve(batched))).toBe(false);
  });

  it('never lets a batch take a release twice, or one whose finalizer is running', async () => {
    const claims = new UninstallClaims();
    expect(claims.claim('ns/a')).toBeDefined();
    expect(claims.claim('ns/a')).toBeUndefined();
    const gate = Promise.withResolvers<undefined>();
    const running = claims.finalize('ns/c', () => gate.promise);
    expect(claims.claim('ns/c')).toBeUndefined();
    gate.resolve(undefined);
    await running;
    expect(claims.claim('ns/c')).toBeDefined();
  });
});
