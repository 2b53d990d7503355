import { describe, expect, it } from 'vitest';
import { ApiException } from '../../../../src/k8s/client-node.js';
import type { ObjectRef } from '../../../../src/k8s/objects.js';
import { missingServiceAccount } from '../../../../src/reconciler/core/service-account.js';

const status = (code: number): Error => new ApiException(code, `HTTP ${code}`, JSON.stringify({ kind: 'Status', code }), {});

describe('missingServiceAccount', () => {
  it('asks nothing when the operator acts itself', async () => {
    const asked: ObjectRef[] = [];
    const objects = { get: (ref: ObjectRef) => (asked.push(ref), Promise.resolve(undefined)) };
    expect(await missingServiceAccount(objects, 'team-a', undefined)).toBeUndefined();
    expect(asked).toEqual([]);
  });

  it('passes an existing ServiceAccount of the namespace', async () => {
    const asked: ObjectRef[] = [];
    const objects = { get: (ref: ObjectRef) => (asked.push(ref), Promise.resolve({ metadata: { name: ref.name } })) };
    expect(await missingServiceAccount(objects, 'team-a', 'deployer')).toBeUndefined();
    expect(asked).toEqual([{ apiVersion: 'v1', kind: 'ServiceAccount', namespace: 'team-a', name: 'deployer' }]);
  });

  it('refuses a missing one, naming it, its namespace and what to create; no backoff, looked at again at the period', async () => {
    const refusal = await missingServiceAccount({ get: () => Promise.resolve(undefined) }, 'team-a', 'deployer');
    expect(refusal).toMatchObject({ kind: 'refused', reason: 'ServiceAccountNotFound', retry: false, event: true, recheck: 'period' });
    expect(refusal?.message).toContain('ServiceAccount deployer not found in namespace team-a');
    expect(refusal?.message).toContain('system:serviceaccount:team-a:deployer');
    expect(refusal?.message).toContain('Create the ServiceAccount deployer in team-a');
    expect(refusal?.message).toContain('nothing was installed');
  });

  it('says which permission the operator lacks when it may not read ServiceAccounts (retried: a Role fixes it)', async () => {
    await expect(missingServiceAccount({ get: () => Promise.reject(status(403)) }, 'team-a', 'deployer')).rejects.toThrow(
      'the operator may not get ServiceAccount deployer of namespace team-a, which it checks before acting as it: grant the operator get on serviceaccounts',
    );
  });
});
