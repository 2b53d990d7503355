import { describe, expect, it } from 'vitest';
import type { Watch } from '../../../src/config/watch.js';
import { actingIdentity, identityLabel, ownIdentityWarning, withDefaultServiceAccount } from '../../../src/operator/identity.js';

const watch = (extra: Partial<Watch> = {}): Watch => ({ group: 'apps.example.com', version: 'v1', kind: 'App', ...extra }) as Watch;

describe('who a watch acts as', () => {
  it("the watch's serviceAccountName wins over --default-service-account", () => {
    expect(actingIdentity(watch({ serviceAccountName: 'own' }), 'locked')).toEqual({ kind: 'watch', serviceAccount: 'own' });
    expect(withDefaultServiceAccount(watch({ serviceAccountName: 'own' }), 'locked').serviceAccountName).toBe('own');
  });

  it('--default-service-account fills a watch without one; the reconciler sees it as serviceAccountName', () => {
    expect(actingIdentity(watch(), 'locked')).toEqual({ kind: 'default', serviceAccount: 'locked' });
    expect(withDefaultServiceAccount(watch(), 'locked')).toEqual({ ...watch(), serviceAccountName: 'locked' });
  });

  it('neither: the operator itself, unchanged watch, one warning that names the kind and both remedies', () => {
    const w = watch();
    expect(actingIdentity(w, undefined)).toEqual({ kind: 'operator' });
    expect(withDefaultServiceAccount(w, undefined)).toBe(w);
    expect(identityLabel(actingIdentity(w, undefined))).toBe('operator');
    const warning = ownIdentityWarning(w, undefined);
    expect(warning).toContain('App.apps.example.com');
    expect(warning).toContain('serviceAccountName');
    expect(warning).toContain('--default-service-account');
  });

  it('no warning for a watch that impersonates', () => {
    expect(ownIdentityWarning(watch(), 'locked')).toBeUndefined();
    expect(ownIdentityWarning(watch({ serviceAccountName: 'own' }), undefined)).toBeUndefined();
    expect(identityLabel(actingIdentity(watch(), 'locked'))).toBe('serviceaccount');
  });
});
