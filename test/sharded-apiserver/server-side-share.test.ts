/**
 * The server-side path of issue 46 item 3 (docs/adr/0103), on kube-apiserver v1.36 with the
 * `ShardedListAndWatch` gate (`make test-sharded-apiserver`; `hack/cluster.sh up --sharded`):
 *
 * - the start-up probe finds that this server filters (`server`), where the default control plane
 *   (the same version, gate off) ignores the parameter (the sharding integration tests run there,
 *   client-side);
 * - two replicas' informers, in `server` mode, each list and watch exactly the objects of the
 *   namespaces their replica's buckets hold (named in the selector once learnt): CRs (whose
 *   LIST response carries no `shardInfo` echo on v1.36.3) and ConfigMaps (values sources);
 * - when the share changes, the informer relists and the server sends the new share.
 *
 * Asserted on what each informer saw arrive (its transform is called for every object the server
 * sent) and on what it caches: with the selector dropped, both see everything and the test fails.
 */
import { CoreV1Api, CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Informer } from '../../src/runtime/informer.js';
import { bucketsOf, namespaceBucket, bucketOwner, SHARD_BUCKETS } from '../../src/runtime/shard-assignment.js';
import { leaseProbeList, probeShardFilter } from '../../src/runtime/shard-probe.js';
import { BucketShare } from '../../src/runtime/watch-share.js';
import { createNamespace, testKubeConfig, uniqueName, waitFor } from '../support/kube.js';
import { ensureCrd, NGINX } from '../support/operator.js';

const PEERS = ['replica-a', 'replica-b'] as const;
type Peer = (typeof PEERS)[number];
const ownerOf = (namespace: string): Peer => bucketOwner(namespaceBucket(namespace), [...PEERS]) as Peer;

/** One replica's informers over the run's objects, and every object the API server sent them. */
interface Replica {
  readonly share: BucketShare;
  readonly crs: Informer;
  readonly configMaps: Informer;
  /** Namespaces of every object the server sent (LIST items and watch events), by informer. */
  readonly received: { crs: Set<string>; configMaps: Set<string> };
}

describe('server-side sharded list and watch (KEP-5866, docs/adr/0103)', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const run = uniqueName('kep');
  const label = `helm-operator-test/run=${run}`;
  const namespaces: Awaited<ReturnType<typeof createNamespace>>[] = [];
  const replicas = new Map<Peer, Replica>();

  const createObjects = async (namespace: string, name: string): Promise<void> => {
    const metadata = { name, namespace, labels: { 'helm-operator-test/run': run } };
    await custom.createNamespacedCustomObject({
      group: NGINX.group,
      version: NGINX.version,
      plural: NGINX.plural,
      namespace,
      body: { apiVersion: `${NGINX.group}/${NGINX.version}`, kind: NGINX.kind, metadata, spec: {} },
    });
    await core.createNamespacedConfigMap({ namespace, body: { metadata, data: { k: 'v' } } });
  };

  const namesOf = (informer: Informer): string[] =>
    informer
      .list()
      .map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`)
      .sort();
  const expected = (peer: Peer, names: readonly string[]): string[] =>
    namespaces
      .filter((n) => ownerOf(n.name) === peer)
      .flatMap((n) => names.map((name) => `${n.name}/${name}`))
      .sort();

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    // Three namespaces per replica, so each share is a real subset of the run's objects.
    for (const peer of PEERS) {
      for (let i = 0; i < 3; i++) namespaces.push(await createNamespace(kc, `kep-${peer.slice(-1)}${i}`, (n) => ownerOf(n) === peer));
    }
    for (const n of namespaces) await createObjects(n.name, 'first');
  });
  afterAll(async () => {
    await Promise.allSettled([...replicas.values()].flatMap((r) => [r.crs.stop(), r.configMaps.stop()]));
    await Promise.all(namespaces.map((n) => n.remove()));
  });

  it('the probe finds a server that filters by shardSelector', async () => {
    const home = namespaces[0]!.name;
    await kc.makeApiClient(CoreV1Api).createNamespacedConfigMap({ namespace: home, body: { metadata: { name: 'unrelated' } } });
    // The probe lists Leases of the namespace it is given (the leader election's, where the peer Lease is).
    const leases = kc.makeApiClient(CustomObjectsApi);
    await leases.createNamespacedCustomObject({
      group: 'coordination.k8s.io',
      version: 'v1',
      plural: 'leases',
      namespace: home,
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'probe' }, spec: {} },
    });
    const verdict = await probeShardFilter(leaseProbeList(kc, home), home);
    expect(verdict, verdict.reason).toMatchObject({ mode: 'server' });
  });

  it('hack/cluster.sh refuses to reuse this cluster as one without the gate', async () => {
    // The gate is fixed when the apiserver starts: a default `up` of the same name must not hand
    // back this cluster (or the reverse), else a tier would silently test the other path.
    const name = process.env.TEST_CLUSTER_NAME ?? 'helm-operator-sharded';
    const up = await execa('bash', ['hack/cluster.sh', 'up', '--name', name], { reject: false });
    expect(up.exitCode).not.toBe(0);
    expect(up.stderr).toContain(`cluster '${name}' is running with the ShardedListAndWatch apiserver, asked without`);
  });

  it("each replica's informers receive from the server only its share, listed and watched", async () => {
    for (const peer of PEERS) {
      const share = new BucketShare({ bucketOf: (ns) => namespaceBucket(ns), mode: 'server' });
      // As the operator's CR informers tell it: every namespace holding a CR (docs/adr/0110).
      for (const n of namespaces) share.learn(n.name);
      share.set(bucketsOf(peer, [...PEERS]));
      const received = { crs: new Set<string>(), configMaps: new Set<string>() };
      const seen =
        (into: Set<string>) =>
        (obj: KubernetesObject): KubernetesObject => {
          into.add(obj.metadata?.namespace ?? '');
          return obj;
        };
      const crs = new Informer(kc, {
        resource: { group: NGINX.group, version: NGINX.version, plural: NGINX.plural },
        labelSelector: label,
        share,
        transform: seen(received.crs),
      });
      const configMaps = new Informer(kc, {
        resource: { group: '', version: 'v1', plural: 'configmaps' },
        labelSelector: label,
        share,
        transform: seen(received.configMaps),
      });
      replicas.set(peer, { share, crs, configMaps, received });
      await Promise.all([crs.start(), configMaps.start()]);
    }
    for (const peer of PEERS) {
      const r = replicas.get(peer)!;
      expect(namesOf(r.crs), `${peer}'s CRs`).toEqual(expected(peer, ['first']));
      expect(namesOf(r.configMaps), `${peer}'s ConfigMaps`).toEqual(expected(peer, ['first']));
    }
    // Watched: a second object in every namespace reaches only its owner's informers.
    for (const n of namespaces) await createObjects(n.name, 'second');
    for (const peer of PEERS) {
      const r = replicas.get(peer)!;
      await waitFor(`${peer}'s informers to hold its share's second objects`, () =>
        Promise.resolve(
          namesOf(r.crs).length === expected(peer, ['first', 'second']).length &&
            namesOf(r.configMaps).length === expected(peer, ['first', 'second']).length,
        ),
      );
    }
    // A last object in a namespace of each replica, watched after the others, bounds what may still arrive.
    for (const peer of PEERS) await createObjects(namespaces.find((n) => ownerOf(n.name) === peer)!.name, 'third');
    for (const peer of PEERS) {
      const r = replicas.get(peer)!;
      await waitFor(`${peer}'s informers to see the third objects`, () =>
        Promise.resolve(namesOf(r.crs).some((k) => k.endsWith('/third')) && namesOf(r.configMaps).some((k) => k.endsWith('/third'))),
      );
      const own = namespaces.filter((n) => ownerOf(n.name) === peer).map((n) => n.name);
      expect([...r.received.crs].sort(), `namespaces of the CRs ${peer} was sent`).toEqual(own.sort());
      expect([...r.received.configMaps].sort(), `namespaces of the ConfigMaps ${peer} was sent`).toEqual(own.sort());
      for (const name of namesOf(r.crs)) expect(ownerOf(name.split('/')[0]!)).toBe(peer);
    }
  });

  it('relists when the share changes: replica-a takes every bucket and the server sends it everything', async () => {
    const a = replicas.get('replica-a')!;
    a.share.set(Array.from({ length: SHARD_BUCKETS }, (_, b) => b));
    const all = namespaces.flatMap((n) => [`${n.name}/first`, `${n.name}/second`]);
    await waitFor('replica-a to hold every namespace', () =>
      Promise.resolve(all.every((k) => namesOf(a.crs).includes(k)) && all.every((k) => namesOf(a.configMaps).includes(k))),
    );
    // And back to none of them: the relist deletes what left the share.
    a.share.set([]);
    await waitFor('replica-a to hold nothing', () => Promise.resolve(namesOf(a.crs).length === 0 && namesOf(a.configMaps).length === 0));
  });
});
