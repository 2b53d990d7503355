/**
 * The attacker's identity before any attack: a user who may manage the CRs of its namespace and
 * read its ConfigMaps and Events, and nothing else. Every attack file sets up the same identity
 * (Tenancy.create checks this too); this file shows it on its own, so a permissive test cluster
 * cannot make every attack look like the operator's fault.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { Tenancy, TENANT_USER } from './support/tenancy.js';

describe(`the tenant identity (${TENANT_USER})`, () => {
  let tenancy: Tenancy;
  beforeAll(async () => {
    tenancy = await Tenancy.create();
  });
  afterAll(() => tenancy.remove());

  it('cannot read a Secret, list another namespace, or bind itself to cluster-admin or admin; can read its ConfigMaps', async () => {
    await tenancy.expectPowerless();
  });
});
