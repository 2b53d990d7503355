import { describe, expect, it } from 'vitest';
import { UninstallClaims } from '../../../src/reconciler/uninstall-claims.js';

const told = (claims: UninstallClaims, key: string, uid: string): Promise<boolean> => claims.finalize(key, uid, (batched) => Promise.resolve(batched));

describe('UninstallClaims', () => {
  it('a finalizer waits for the batch holding its CR and learns whether the batch uninstalled its release', async () => {
    const claims = new UninstallClaims();
    const batch = claims.begin('ns');
    expect(batch.claim('b', 'uid-b')).toBe(true);
    expect(claims.isHeld('ns/b')).toBe(true);
    const answer = told(claims, 'ns/b', 'uid-b');
    batch.settle('b', true);
    batch.settle('b', false); // settling twice changes nothing
    expect(await answer).toBe(true);
    expect(batch.end()).toEqual(['b']);
    expect(claims.isHeld('ns/b')).toBe(false);
  });

  it('forgets a batch when it ends: a CR of the same name never reads an earlier one\'s outcome', async () => {
    const claims = new UninstallClaims();
    const first = claims.begin('ns');
    first.claim('web', 'uid-1');
    first.settle('web', true);
    first.end();
    // The first instance's own reconcile never ran (its CR was gone from the cache): nothing is left.
    expect(claims.size).toBe(0);
    expect(claims.isHeld('ns/web')).toBe(false);
    // A later instance of the same name, deleted alone, must run its own uninstall.
    expect(await told(claims, 'ns/web', 'uid-2')).toBe(false);
    expect(await told(claims, 'ns/web', 'uid-1')).toBe(false);
  });

  it('gives a batch\'s result only to the CR instance it claimed', async () => {
    const claims = new UninstallClaims();
    const batch = claims.begin('ns');
    batch.claim('web', 'uid-1');
    batch.settle('web', true);
    // A new CR of the same name while the batch still runs: held (same release name), not batched.
    expect(claims.isHeld('ns/web')).toBe(true);
    expect(await told(claims, 'ns/web', 'uid-2')).toBe(false);
    expect(await told(claims, 'ns/web', 'uid-1')).toBe(true);
    // What the batch completes for its peers is the claimed instance only.
    expect(batch.holds('web', 'uid-1')).toBe(true);
    expect(batch.holds('web', 'uid-2')).toBe(false);
    expect(batch.holds('web', undefined)).toBe(false);
    batch.end();
    expect(batch.holds('web', 'uid-1')).toBe(false);
  });

  it('an ended batch settles what it had not reported as not uninstalled', async () => {
    const claims = new UninstallClaims();
    const batch = claims.begin('ns');
    batch.claim('a', 'uid-a');
    const answer = told(claims, 'ns/a', 'uid-a');
    expect(batch.end()).toEqual(['a']);
    expect(await answer).toBe(false);
    expect(claims.size).toBe(0);
  });

  it('never lets a batch take a release twice, or one whose finalizer is running', async () => {
    const claims = new UninstallClaims();
    const one = claims.begin('ns');
    const two = claims.begin('ns');
    expect(one.claim('a', 'uid-a')).toBe(true);
    expect(two.claim('a', 'uid-a')).toBe(false);
    expect(two.names).toEqual([]);
    const gate = Promise.withResolvers<undefined>();
    const running = claims.finalize('ns/c', 'uid-c', () => gate.promise);
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

  it('keeps namespaces apart', () => {
    const claims = new UninstallClaims();
    const a = claims.begin('a');
    const b = claims.begin('b');
    expect(a.claim('web', 'u1')).toBe(true);
    expect(b.claim('web', 'u2')).toBe(true);
    a.end();
    expect(claims.isHeld('a/web')).toBe(false);
    expect(claims.isHeld('b/web')).toBe(true);
    b.end();
  });
});
