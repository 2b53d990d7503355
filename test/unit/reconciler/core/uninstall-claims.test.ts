import { describe, expect, it } from 'vitest';
import { UninstallClaims } from '../../../../src/reconciler/core/uninstall-claims.js';

describe('UninstallClaims', () => {
  it('holds what a batch claimed until it ends, and then nothing', () => {
    const claims = new UninstallClaims();
    const batch = claims.begin('ns');
    expect(batch.claim('b', 'uid-b')).toBe(true);
    expect(claims.isHeld('ns/b')).toBe(true);
    expect(claims.isHeld('other/b')).toBe(false);
    expect(batch.end()).toEqual(['b']);
    expect(claims.isHeld('ns/b')).toBe(false);
    expect(claims.size).toBe(0);
    expect(batch.names).toEqual([]);
  });

  it('completes only the CR instance it claimed', () => {
    const claims = new UninstallClaims();
    const batch = claims.begin('ns');
    batch.claim('web', 'uid-1');
    // A new CR of the same name while the batch still runs: held (same release name), not the batch's.
    expect(claims.isHeld('ns/web')).toBe(true);
    expect(batch.holds('web', 'uid-1')).toBe(true);
    expect(batch.holds('web', 'uid-2')).toBe(false);
    expect(batch.holds('web', undefined)).toBe(false);
    batch.end();
    expect(batch.holds('web', 'uid-1')).toBe(false);
  });

  it('never lets a batch take a release twice, or one whose finalizer is running', async () => {
    const claims = new UninstallClaims();
    const one = claims.begin('ns');
    const two = claims.begin('ns');
    expect(one.claim('a', 'uid-a')).toBe(true);
    expect(two.claim('a', 'uid-a')).toBe(false);
    expect(two.names).toEqual([]);
    const gate = Promise.withResolvers<undefined>();
    const running = claims.finalizing('ns/c', () => gate.promise);
    expect(one.claim('c', 'uid-c')).toBe(false);
    gate.resolve(undefined);
    await running;
    expect(one.claim('c', 'uid-c')).toBe(true);
    // Ending the second batch leaves the first batch's claims alone.
    two.end();
    expect(claims.isHeld('ns/a')).toBe(true);
    one.end();
    expect(claims.size).toBe(0);
  });

  it('a finalizer that fails still frees its key', async () => {
    const claims = new UninstallClaims();
    await expect(claims.finalizing('ns/x', () => Promise.reject(new Error('helm failed')))).rejects.toThrow('helm failed');
    expect(claims.begin('ns').claim('x', 'uid-x')).toBe(true);
  });
});
