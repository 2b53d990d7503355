import { describe, expect, it } from 'vitest';
import { latestDeployed, storageSecretName } from '../../../src/helm/storage.js';

const labels = (status: string, version = '3', name = 'web'): Record<string, string> => ({
  owner: 'helm',
  name,
  status,
  version,
  team: 'a',
});

describe('latestDeployed', () => {
  it('is the record of a deployed revision that has no successor', () => {
    expect(latestDeployed('web', 3, labels('deployed'), false)).toEqual({ revision: 3, status: 'deployed', labels: { team: 'a' } });
  });

  it('settles nothing when a newer revision exists, the revision is gone, or it is not deployed', () => {
    expect(latestDeployed('web', 3, labels('deployed'), true)).toBeUndefined();
    expect(latestDeployed('web', 3, undefined, false)).toBeUndefined();
    for (const status of ['superseded', 'failed', 'pending-upgrade', 'pending-rollback', 'uninstalling', 'uninstalled']) {
      expect(latestDeployed('web', 3, labels(status), false)).toBeUndefined();
    }
  });

  it('settles nothing for a Secret that is not that revision of that release', () => {
    expect(latestDeployed('web', 3, labels('deployed', '2'), false)).toBeUndefined();
    expect(latestDeployed('web', 3, labels('deployed', '3', 'other'), false)).toBeUndefined();
    expect(latestDeployed('web', 3, { ...labels('deployed'), owner: 'someone' }, false)).toBeUndefined();
    expect(latestDeployed('web', 3, {}, false)).toBeUndefined();
  });

  it("names Secrets as helm's secret driver does", () => {
    expect(storageSecretName('web', 12)).toBe('sh.helm.release.v1.web.v12');
  });
});
