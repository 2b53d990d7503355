/**
 * Which reads of a CR cost a GET (ADR 0069, ADR 0071), counted by the API server
 * (`apiserver_request_total` of a kind no other test uses): the version the cache holds, or one
 * this client saw before its own last write (the watch has not delivered the write yet), is
 * answered from what the client kept; a version someone else wrote is read.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CustomResourceClient } from '../../../src/k8s/custom-resources.js';
import { createNamespace, testKubeConfig } from '../../support/kube.js';
import { CRs, ensureCrd, type TestKind } from '../../support/operator.js';
import { total } from '../../support/prometheus.js';

const run = promisify(execFile);
const KIND: TestKind = { group: 'crreads.example.com', version: 'v1', kind: 'Reading', plural: 'readings' };

describe('reading a CR', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, KIND);
  let ns: Awaited<ReturnType<typeof createNamespace>>;

  const gets = async (): Promise<number> => {
    const { stdout } = await run(inject('kubectlBin'), ['--kubeconfig', inject('kubeconfigPath'), 'get', '--raw', '/metrics'], {
      timeout: 30_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return total(stdout, 'apiserver_request_total', { verb: 'GET', resource: KIND.plural, subresource: '' });
  };

  beforeAll(async () => {
    await ensureCrd(kc, KIND);
    ns = await createNamespace(kc, 'crreads');
  });
  afterAll(async () => {
    await ns.remove();
  });

  it('costs no GET for the cached version or one before our own write, and one for a version someone else wrote', async () => {
    const client = new CustomResourceClient(kc, { ...KIND, namespaced: true }, 'crreads-test');
    const created = await crs.create(ns.name, 'r', { size: 1 });
    const v0 = created.metadata.resourceVersion;
    const start = await gets();

    // A version this client never saw: read.
    expect((await client.get(ns.name, 'r', v0))?.metadata.resourceVersion).toBe(v0);
    expect(await gets()).toBe(start + 1);

    // Our own status write; the cache may still hold v0 (its watch event not yet delivered) or
    // already the written version: either is answered with what the write returned.
    expect(await client.patchStatus(ns.name, 'r', { phase: 'written' })).toBe(true);
    const afterWrite = await client.get(ns.name, 'r', v0);
    expect(afterWrite?.status).toEqual({ phase: 'written' });
    const v1 = afterWrite?.metadata.resourceVersion;
    expect(v1).not.toBe(v0);
    expect((await client.get(ns.name, 'r', v1))?.status).toEqual({ phase: 'written' });
    expect(await gets(), 'a read of a version before our own write, or of the written one').toBe(start + 1);

    // Someone else writes: the cache then holds a version this client never saw.
    const v2 = (await crs.patch(ns.name, 'r', { spec: { size: 2 } })).metadata.resourceVersion;
    expect((await client.get(ns.name, 'r', v2))?.spec).toEqual({ size: 2 });
    expect(await gets()).toBe(start + 2);

    // No version from the cache: never answered from memory.
    await client.get(ns.name, 'r');
    expect(await gets()).toBe(start + 3);
  });
});
