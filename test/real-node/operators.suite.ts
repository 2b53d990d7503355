/**
 * The operator as real pods under the kubelet, on the real node, with only the permissions of
 * config/rbac: two replicas electing a leader (the leader pod deleted mid-way through 30 installs),
 * a rolling update of the Deployment to a new image during installs and uninstalls, and its
 * container OOMKilled while helm runs. Each ends with every release installed exactly once (helm
 * history) and none pending. Last, `make undeploy` of the deployment deploy.suite.ts made (and
 * image.suite.ts used), with every release of the three suites still installed.
 *
 * After deploy.suite.ts, which builds and pushes the image (tier.test.ts runs them in order).
 */
import { ApiextensionsV1Api, AppsV1Api, CoordinationV1Api, CoreV1Api, type V1ContainerStatus, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEPLOYED, exec, gone, kubectl } from '../support/deploy.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { condition, CRs, NGINX, type CR } from '../support/operator.js';
import { sample } from '../support/prometheus.js';
import { httpsGet, metricsScrapers, type MetricsScrapers } from '../support/secure-scrape.js';
import { accountBindings, accountCan, histories, make, NODE, operatorImage, operatorPods, ready, tasks } from './node.js';

const LEASE = 'helm-operator';
const ACCOUNT = { name: DEPLOYED.serviceAccount, namespace: DEPLOYED.namespace };
const OPERATOR = ['-n', DEPLOYED.namespace] as const;
const names = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
const deployed = (cr: CR): boolean => condition(cr, 'Deployed')?.status === 'True';

const once = (releases: readonly string[]): Record<string, string[]> => Object.fromEntries(releases.map((r) => [r, ['1:deployed']]));

describe('the operator as real pods: leader election, a rolling update, an OOM kill, with only its generated RBAC', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const crs = new CRs(kc, NGINX);
  let img = '';
  let ns = { name: '', remove: async (): Promise<void> => {} };
  let scrapers: MetricsScrapers | undefined;

  /** The pod named by the Lease's holder (client-go's identity: "<hostname>_<uuid>"; a pod's hostname is its name). */
  const leaderPod = async (): Promise<string> => {
    const lease = await kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: LEASE, namespace: DEPLOYED.namespace });
    return (lease.spec?.holderIdentity ?? '').split('_')[0] ?? '';
  };
  const readyPods = async (count: number, image = img): Promise<V1Pod[]> =>
    waitFor(
      `${count} Ready operator pod(s) running ${image}`,
      async () => {
        const pods = await operatorPods(kc);
        return pods.length === count && pods.every((p) => ready(p) && p.spec?.containers[0]?.image === image) ? pods : undefined;
      },
      { timeoutMs: 240_000, intervalMs: 1_000 },
    );
  /** Waits until exactly `want` CRs exist, each Deployed=True. */
  const converged = async (want: readonly string[]): Promise<CR[]> =>
    waitFor(
      `exactly ${want.length} CRs, each Deployed=True`,
      async () => {
        const list = await crs.list(ns.name);
        const sameNames =
          list
            .map((c) => c.metadata.name)
            .sort()
            .join() === [...want].sort().join();
        return sameNames && list.every(deployed) ? list : undefined;
      },
      { timeoutMs: 300_000, intervalMs: 1_000 },
    );
  const deployedImage = async (): Promise<string> =>
    (await apps.readNamespacedDeployment({ name: DEPLOYED.deployment, namespace: DEPLOYED.namespace })).spec?.template.spec?.containers[0]
      ?.image ?? '';
  const manager = async (pod: string): Promise<V1ContainerStatus | undefined> =>
    (await core.readNamespacedPod({ name: pod, namespace: DEPLOYED.namespace })).status?.containerStatuses?.find(
      (c) => c.name === 'manager',
    );
  const rolledOut = (): Promise<string> => kubectl(...OPERATOR, 'rollout', 'status', `deployment/${DEPLOYED.deployment}`, '--timeout=300s');

  beforeAll(async () => {
    img = await operatorImage();
    ns = await createNamespace(kc, 'operators');
    // Deployed already by deploy.suite.ts in the tier (then this changes nothing); alone, this deploys it.
    await make('deploy', `IMG=${img}`, 'REAL_NODE=1');
    scrapers = await metricsScrapers(kc, `${DEPLOYED.prefix}metrics-reader`, ns.name);
    await kubectl(...OPERATOR, 'scale', `deployment/${DEPLOYED.deployment}`, '--replicas=2');
    await readyPods(2);
  });

  afterAll(async () => {
    await make('undeploy', 'ignore-not-found=true').catch(() => undefined);
    await scrapers?.remove();
    await ns.remove();
  }, 600_000);

  it("runs as its ServiceAccount bound only to config/rbac's roles: no cluster-admin, no wildcard", async () => {
    for (const pod of await operatorPods(kc)) {
      expect(pod.spec?.serviceAccountName).toBe(DEPLOYED.serviceAccount);
      expect(pod.spec?.nodeName).toBe(NODE);
    }
    const bindings = await accountBindings(kc, ACCOUNT);
    expect(bindings.cluster).toEqual([
      'helm-operator-manager-rolebinding -> ClusterRole/helm-operator-manager-role',
      // The TokenReviews and SubjectAccessReviews of each scrape of /metrics (--metrics-require-rbac).
      'helm-operator-metrics-auth-rolebinding -> ClusterRole/helm-operator-metrics-auth-role',
    ]);
    expect(bindings.local).toEqual([
      `${DEPLOYED.namespace}/helm-operator-leader-election-rolebinding -> Role/helm-operator-leader-election-role`,
    ]);
    // What the API server's authorizer says (the account's groups included): nothing beyond those roles.
    const can = accountCan(kc, ACCOUNT, ns.name);
    expect(await can('*', '*', '*')).toBe(false);
    expect(await can('create', 'rbac.authorization.k8s.io', 'clusterrolebindings')).toBe(false);
    expect(await can('list', '', 'nodes')).toBe(false);
    expect(await can('create', '', 'pods')).toBe(false);
    expect(await can('create', 'apps', 'deployments')).toBe(true);
  });

  it('two replicas: the leader pod deleted mid-way through 30 installs, the other takes over; each release installed once', async () => {
    const releases = names('le', 30);
    const before = await waitFor('a leader among the pods', leaderPod, { timeoutMs: 60_000 });
    // One leader: each pod's own metric says whether it holds the Lease (read on its pod IP, as the
    // ServiceMonitor's Prometheus scrapes it: HTTPS, a token bound to metrics-reader).
    const holds = async (pod: V1Pod): Promise<number | undefined> => {
      const scrape = await httpsGet(`https://${pod.status?.podIP}:8443/metrics`, scrapers?.reader);
      expect(scrape.status).toBe(200);
      return sample(scrape.body, 'leader_election_master_status', { name: LEASE });
    };
    const pods = await operatorPods(kc);
    expect(Object.fromEntries(await Promise.all(pods.map(async (p) => [p.metadata?.name, await holds(p)])))).toEqual(
      Object.fromEntries(pods.map((p) => [p.metadata?.name, p.metadata?.name === before ? 1 : 0])),
    );
    await Promise.all(releases.map((r) => crs.create(ns.name, r, {})));
    const deployedAtKill = await waitFor(
      'the first releases deployed',
      async () => {
        const n = (await core.listNamespacedSecret({ namespace: ns.name, labelSelector: 'owner=helm,status=deployed' })).items.length;
        return n >= 5 ? n : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 100 },
    );
    await core.deleteNamespacedPod({ name: before, namespace: DEPLOYED.namespace });
    // Mid-way: installs were left for the next leader.
    expect(deployedAtKill).toBeLessThan(releases.length);
    // The standby or the ReplicaSet's replacement: whichever retries first once the old leader lets go.
    await waitFor(
      'another pod to hold the Lease',
      async () => {
        const now = await leaderPod();
        return now !== before && now !== '' ? now : undefined;
      },
      { timeoutMs: 120_000 },
    );
    const list = await converged(releases);
    expect(list.map((c) => c.status?.deployedRelease?.revision)).toEqual(releases.map(() => 1));
    expect(await histories(releases, ns.name)).toEqual(once(releases));
  });

  it('a rolling update to a new image during installs and uninstalls loses and doubles nothing', async () => {
    const img2 = await operatorImage('real-node-update');
    // The same image under a new reference: a new pod template, and nothing to rebuild.
    await exec(
      'bash',
      ['-c', 'eval "$(bash hack/image.sh env)" && podman tag "$1" "$2" && podman push --quiet --tls-verify=false "$2"', 'tag', img, img2],
      300_000,
    );
    const removed = names('le', 10);
    const kept = names('le', 30).slice(10);
    const added = names('ru', 10);
    await Promise.all([...added.map((r) => crs.create(ns.name, r, {})), ...removed.map((r) => crs.delete(ns.name, r))]);
    await kubectl(...OPERATOR, 'set', 'image', `deployment/${DEPLOYED.deployment}`, `manager=${img2}`);
    await rolledOut();
    const pods = await readyPods(2, img2);
    await converged([...kept, ...added]);
    expect(await histories([...kept, ...added], ns.name)).toEqual(once([...kept, ...added]));
    expect(await histories(removed, ns.name)).toEqual(Object.fromEntries(removed.map((r) => [r, []])));
    // The old leader may still be in its grace period, holding the Lease while it drains (its pod
    // terminating, so not among `pods`); it releases on exit and one of the new pods takes over.
    const updated = pods.map((p) => p.metadata?.name);
    await waitFor(
      'one of the updated pods to hold the Lease',
      async () => {
        const holder = await leaderPod();
        return updated.includes(holder) ? holder : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
  });

  it('OOMKilled while helm runs: the restarted container, its limit raised in place, deploys every release, none pending', async () => {
    await crs.deleteAll(ns.name);
    await waitFor('every CR uninstalled and gone', async () => (await crs.list(ns.name)).length === 0, {
      timeoutMs: 300_000,
      intervalMs: 1_000,
    });
    // One replica whose limit holds the idle node process (~40 MiB anonymous + ~55 MiB of its
    // mapped binary) but not it and the helm processes of a reconcile: the kernel kills node, the
    // largest process, and with it the container (measured here; cgroup v1 and v2 alike). helm
    // inherits GO* from the operator (helm/environment.ts): with its collector off it keeps every
    // allocation of an install, so the kill comes during the first installs. With Go's default
    // collector (ADR 0067) helm may fit beside node, and whether a kill comes at all is up to
    // timing (seen once: four installs, no kill in 180 s).
    await kubectl(
      ...OPERATOR,
      'patch',
      `deployment/${DEPLOYED.deployment}`,
      '--type=json',
      '-p',
      JSON.stringify([
        { op: 'replace', path: '/spec/replicas', value: 1 },
        { op: 'replace', path: '/spec/template/spec/containers/0/resources/limits/memory', value: '80Mi' },
        { op: 'replace', path: '/spec/template/spec/containers/0/resources/requests/memory', value: '64Mi' },
        { op: 'add', path: '/spec/template/spec/containers/0/env/-', value: { name: 'GOGC', value: 'off' } },
      ]),
    );
    await rolledOut();
    const name = (await readyPods(1, await deployedImage()))[0]?.metadata?.name ?? '';
    const releases = names('oom', 4);
    await Promise.all(releases.map((r) => crs.create(ns.name, r, {})));
    const killed = await waitFor(
      'the operator container to be OOMKilled',
      async () => {
        const s = await manager(name);
        return s?.lastState?.terminated?.reason === 'OOMKilled' ? s : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 500 },
    );
    expect(killed.lastState?.terminated?.exitCode).toBe(137);
    // Killed before every install was done. How many finished first depends on helm's memory (with
    // Go's collector on, ADR 0067, one or two may fit beside node before a third is killed).
    expect((await crs.list(ns.name)).filter(deployed).length).toBeLessThan(releases.length);
    // In-place resize (the pod's resize subresource): the same pod, its container restarted by the kubelet.
    await kubectl(
      ...OPERATOR,
      'patch',
      `pod/${name}`,
      '--subresource',
      'resize',
      '-p',
      JSON.stringify({
        spec: { containers: [{ name: 'manager', resources: { limits: { memory: '768Mi' }, requests: { memory: '256Mi' } } }] },
      }),
    );
    await converged(releases);
    // Ready follows Deployed: the install writes Deployed, its Deployment's status events bring Ready.
    const list = await waitFor(
      'every release Ready=True',
      async () => {
        const now = await crs.list(ns.name);
        return now.every((cr) => condition(cr, 'Ready')?.status === 'True') ? now : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 1_000 },
    );
    expect(list.map((cr) => `${cr.metadata.name}:${condition(cr, 'Ready')?.status}`).sort()).toEqual(
      releases.map((r) => `${r}:True`).sort(),
    );
    const after = await manager(name);
    expect(after?.restartCount).toBeGreaterThanOrEqual(1);
    expect(after?.resources?.limits?.memory).toBe('768Mi');
    // Whatever revision a killed helm left behind, the last one is deployed and none is pending.
    for (const [release, revisions] of Object.entries(await histories(releases, ns.name))) {
      expect(revisions.at(-1), release).toMatch(/:deployed$/);
      expect(
        revisions.filter((r) => r.includes('pending')),
        release,
      ).toEqual([]);
    }
  });

  it('make undeploy, with the releases of the suites before (deploy, image, these) still installed: no release, CR, chart object or operator namespace left, and the real node runs no container', async () => {
    await make('undeploy');
    // The custom resources first, in every namespace, while the operator runs (hack/deploy.sh): its finalizer uninstalls each release.
    expect((await core.listSecretForAllNamespaces({ labelSelector: 'owner=helm' })).items.map((s) => s.metadata?.name)).toEqual([]);
    expect(await gone(() => kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: DEPLOYED.crd }))).toBe(true);
    expect(
      (await apps.listDeploymentForAllNamespaces({ labelSelector: 'app.kubernetes.io/managed-by=Helm' })).items.map(
        (d) => `${d.metadata?.namespace}/${d.metadata?.name}`,
      ),
    ).toEqual([]);
    await waitFor(`namespace ${DEPLOYED.namespace} to be deleted`, () => gone(() => core.readNamespace({ name: DEPLOYED.namespace })), {
      timeoutMs: 120_000,
    });
    await waitFor(
      'the real node to run no pod',
      async () => (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE}` })).items.length === 0,
      { timeoutMs: 120_000 },
    );
    await waitFor('containerd to run no container', async () => (await tasks()).size === 0, { timeoutMs: 60_000 });
  });
});
