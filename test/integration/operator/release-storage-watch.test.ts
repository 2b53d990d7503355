/**
 * The watch of helm's release storage (ADR 0111) against the real API server and releases the
 * real helm wrote: what it answers, what it keeps of a storage Secret, and where it says nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorageWatch } from '../../../src/operator/release-storage-watch.js';
import type { WatchShare } from '../../../src/runtime/watch-share.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { helmByHand } from '../../support/helm.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { NGINX_CHART } from '../../support/operator.js';

describe('the release storage watch', () => {
  const kc = testKubeConfig();
  let owned: Awaited<ReturnType<typeof createNamespace>>;
  let other: Awaited<ReturnType<typeof createNamespace>>;
  let unwatched: Awaited<ReturnType<typeof createNamespace>>;
  let watch: ReleaseStorageWatch;

  beforeAll(async () => {
    [owned, other, unwatched] = await Promise.all([
      createNamespace(kc, 'storage-owned'),
      createNamespace(kc, 'storage-other'),
      createNamespace(kc, 'storage-unwatched'),
    ]);
    const share: WatchShare = {
      mode: () => 'client',
      selector: () => undefined,
      covers: (namespace) => namespace === owned.name,
      onChange: () => () => undefined,
    };
    await Promise.all(
      [owned, other, unwatched].map((ns) => helmByHand('install', 'web', NGINX_CHART, '-n', ns.name, '--set', 'replicaCount=1')),
    );
    watch = new ReleaseStorageWatch({
      kubeConfig: kc,
      namespaces: [owned.name, other.name],
      log: silentLogger(),
      share,
    });
  });
  afterAll(async () => {
    await watch.stop();
    await Promise.all([owned, other, unwatched].map((ns) => ns.remove()));
  });

  it('answers that a revision is the latest and deployed from the watch, and keeps names and labels only', async () => {
    const record = await waitFor('the watch to hold revision 1', () => Promise.resolve(watch.watched(owned.name, 'web', 1)));
    expect(record).toMatchObject({ revision: 1, status: 'deployed' });
    const cached = watch.cachedSecrets(owned.name, 'web') ?? [];
    expect(cached.map((s) => s.metadata?.name)).toEqual(['sh.helm.release.v1.web.v1']);
    for (const secret of cached) {
      expect(Object.keys(secret)).toEqual(['metadata']);
      expect(Object.keys(secret.metadata ?? {}).sort()).toEqual(['labels', 'name', 'namespace', 'resourceVersion']);
    }
    expect(watch.cachedObjects()).toBe(1);
  });

  it('no longer answers for a revision once helm made a newer one, and answers for the newer one', async () => {
    await helmByHand('upgrade', 'web', NGINX_CHART, '-n', owned.name, '--reuse-values', '--set', 'replicaCount=2');
    await waitFor('the watch to see revision 2 deployed', () => Promise.resolve(watch.watched(owned.name, 'web', 2) !== undefined));
    expect(watch.watched(owned.name, 'web', 1)).toBeUndefined();
    expect(watch.watched(owned.name, 'web', 3)).toBeUndefined();
  });

  it('says nothing of a namespace outside the share or not watched, nor of a release it does not hold', async () => {
    await waitFor('the watch to hold the owned release', () => Promise.resolve(watch.watched(owned.name, 'web', 2) !== undefined));
    expect(watch.watched(other.name, 'web', 1)).toBeUndefined();
    expect(watch.cachedSecrets(other.name, 'web')).toBeUndefined();
    expect(watch.watched(unwatched.name, 'web', 1)).toBeUndefined();
    expect(watch.watched(owned.name, 'absent', 1)).toBeUndefined();
    // The others' Secrets were dropped, not cached: the owned release's two revisions alone.
    expect(watch.cachedObjects()).toBe(2);
  });

  it('answers nothing once stopped', async () => {
    await watch.stop();
    expect(watch.watched(owned.name, 'web', 2)).toBeUndefined();
  });
});
