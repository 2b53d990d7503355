/**
 * An install through OLM, judged by OLM's own code: `helm-operator olm install` (OLM's CRDs and its
 * `olm` and `catalog` operators, a pinned upstream release built by `hack/tools.sh olm`, run as local
 * processes) on the test control plane. `make bundle` packages this repository's sample and
 * `helm-operator run bundle` puts it into a file-based catalog that `opm validate` accepts, served
 * over OLM's registry API on loopback. Its CatalogSource (spec.address: no registry pod) and
 * Subscription next to an OperatorGroup make OLM resolve it, run the InstallPlan (the bundle's
 * objects travel in the catalog, so no unpack Job) and install the CSV to phase Succeeded, creating
 * the CRD, Deployment, ServiceAccount and RBAC from it. Our operator then runs here (kwok fakes the pod, so nothing runs in it) with a token of the
 * ServiceAccount OLM created, so only with the RBAC OLM granted, and reconciles the sample.
 * Bad cases: a CSV applied directly (no InstallPlan) with an OperatorGroup whose install mode it
 * does not support fails with OLM's reason UnsupportedOperatorGroup.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type V1PolicyRule,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { childEnv, DEPLOYED, kubectl, make, ROOT, serviceAccountKubeconfig } from '../support/deploy.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { CRs, NGINX } from '../support/operator.js';
import { startChild, type Child } from '../support/process.js';
import { runGenerateBundle } from '../../src/bundle/commands.js';
import { clusterStateDir, runningPid } from '../../src/olm/local-processes.js';
import { createOperatorGroup, helmOperator, listeningAddresses, OLM_GROUP, waitForCsvPhase, type Csv } from '../support/olm.js';

const execFileAsync = promisify(execFile);
const IMG = 'example.com/nginx-operator:v0.0.1';
const VERSION = '0.0.1';
const PACKAGE = 'helm-operator';
const CSV_NAME = `${PACKAGE}.v${VERSION}`;
const BUNDLE = path.join(ROOT, 'bundle');
const CSV_FILE = path.join(BUNDLE, 'manifests', `${PACKAGE}.clusterserviceversion.yaml`);

interface CsvSpec {
  installModes: { type: string; supported: boolean }[];
  install: {
    spec: {
      permissions: { serviceAccountName: string; rules: V1PolicyRule[] }[];
      clusterPermissions: { serviceAccountName: string; rules: V1PolicyRule[] }[];
    };
  };
}

/** Rules as comparable strings (OLM copies them verbatim). */
const ruleKeys = (rules: readonly V1PolicyRule[]): string[] =>
  rules.map((r) => JSON.stringify([r.apiGroups ?? [], r.resources ?? [], r.verbs, r.nonResourceURLs ?? [], r.resourceNames ?? []])).sort();

/**
 * `run`'s flags as the Deployment OLM created runs them (config/manager): the sample's watches,
 * leader election on, probes and metrics off, with the given kubeconfig (a ServiceAccount's token).
 */
const runAsDeployed = (kubeconfig: string, leaseNamespace: string): string[] => [
  'run',
  '--watches-file',
  'watches.yaml',
  '--helm-binary',
  inject('helmBin'),
  '--kubeconfig',
  kubeconfig,
  '--metrics-bind-address=0',
  '--health-probe-bind-address=0',
  '--leader-elect',
  '--leader-election-id=helm-operator',
  `--leader-election-namespace=${leaseNamespace}`,
];

describe('installing the bundle through OLM', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const crs = new CRs(kc, NGINX);
  const namespaces: { name: string; remove: () => Promise<void> }[] = [];
  const stateDir = clusterStateDir(kc.getCurrentCluster()?.server ?? '');
  let operator: Child | undefined;
  let dir = '';
  let ns = '';
  let csv: Csv & { spec: CsvSpec };
  /** The namespaces where `run bundle` installed the package. */
  const installedIn: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'olm-install-'));
    // OLM: installed by cli.suite.ts before this suite (tier.test.ts).
    await make('bundle', `IMG=${IMG}`, `VERSION=${VERSION}`);
    csv = parse(await readFile(CSV_FILE, 'utf8')) as Csv & { spec: CsvSpec };
  }, 1_800_000);

  afterAll(async () => {
    await operator?.stop();
    // OLM stays for the next suite: the packages this suite installed go (their catalog servers,
    // the CRD), so that the next install starts from none.
    for (const home of installedIn) await helmOperator(['cleanup', PACKAGE, '-n', home]).catch(() => undefined);
    for (const n of namespaces) await n.remove();
    await rm(dir, { recursive: true, force: true });
  }, 300_000);

  const olmOutput = (): string => {
    const tail = (name: string): string => {
      try {
        return readFileSync(path.join(stateDir, `${name}.log`), 'utf8').slice(-3000);
      } catch {
        return '';
      }
    };
    return `\nolm output:\n${tail('olm-operator')}\ncatalog output:\n${tail('catalog-operator')}`;
  };

  /** Every permission of the CSV became a Role + RoleBinding, every clusterPermission a ClusterRole + binding, all for its SA. */
  async function expectRbacFrom(spec: CsvSpec, namespace: string): Promise<void> {
    const owner = `olm.owner=${CSV_NAME},olm.owner.namespace=${namespace}`;
    const isSubject = (s: { kind: string; name: string; namespace?: string }): boolean =>
      s.kind === 'ServiceAccount' && s.name === DEPLOYED.serviceAccount && s.namespace === namespace;
    const roles = (await rbac.listNamespacedRole({ namespace, labelSelector: owner })).items;
    const roleBindings = (await rbac.listNamespacedRoleBinding({ namespace, labelSelector: owner })).items;
    expect(ruleKeys(roles.flatMap((r) => r.rules ?? []))).toEqual(ruleKeys(spec.install.spec.permissions.flatMap((p) => p.rules)));
    expect(roleBindings.map((b) => b.roleRef.name).sort()).toEqual(roles.map((r) => r.metadata?.name).sort());
    expect(roleBindings.every((b) => (b.subjects ?? []).some(isSubject))).toBe(true);

    const clusterRoles = (await rbac.listClusterRole({ labelSelector: owner })).items;
    const clusterRoleBindings = (await rbac.listClusterRoleBinding({ labelSelector: owner })).items;
    expect(ruleKeys(clusterRoles.flatMap((r) => r.rules ?? []))).toEqual(
      ruleKeys(spec.install.spec.clusterPermissions.flatMap((p) => p.rules)),
    );
    expect(clusterRoleBindings.map((b) => b.roleRef.name).sort()).toEqual(clusterRoles.map((r) => r.metadata?.name).sort());
    expect(clusterRoleBindings.every((b) => (b.subjects ?? []).some(isSubject))).toBe(true);
  }

  it('subscribes through a file-based catalog: the InstallPlan completes and the CSV reaches Succeeded', async () => {
    const n = await createNamespace(kc, 'olm-install');
    namespaces.push(n);
    ns = n.name;
    installedIn.push(ns);
    // OwnNamespace: the operator watches the namespace it runs in, as the sample's RBAC check below expects.
    const run = await helmOperator(['run', 'bundle', BUNDLE, '-n', ns, '--install-mode', 'OwnNamespace', '--timeout', '4m']);
    if (run.code !== 0) throw new Error(`run bundle failed: ${run.stderr}${olmOutput()}`);
    const done = await waitForCsvPhase(kc, { namespace: ns, name: CSV_NAME }, 'Succeeded').catch((err: unknown) => {
      throw new Error(`${(err as Error).message}${olmOutput()}`);
    });
    expect(done.status?.reason).toBe('InstallSucceeded');
    type Plans = { items: { spec: { clusterServiceVersionNames: string[] }; status?: { phase?: string; bundleLookups?: unknown[] } }[] };
    // The CSV can be Succeeded a moment before the InstallPlan records Complete.
    const plans = await waitFor('the InstallPlan to be Complete', async () => {
      const list = (await kc
        .makeApiClient(CustomObjectsApi)
        .listNamespacedCustomObject({ group: OLM_GROUP, version: 'v1alpha1', plural: 'installplans', namespace: ns })) as Plans;
      return list.items.every((p) => p.status?.phase === 'Complete') ? list : undefined;
    });
    expect(plans.items.map((p) => p.spec.clusterServiceVersionNames)).toEqual([[CSV_NAME]]);
    // The bundle's content came from the catalog: no unpack Job (which would need a running container).
    expect(plans.items[0]?.status?.bundleLookups ?? []).toEqual([]);
    expect((await core.listNamespacedPod({ namespace: ns })).items.map((p) => p.metadata?.name)).toEqual([
      expect.stringMatching(new RegExp(`^${DEPLOYED.deployment}-`)),
    ]);
  }, 300_000);

  it('OLM created the CRD, Deployment, ServiceAccount, RBAC and the bundle’s other objects from the CSV', async () => {
    const crd = await kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: DEPLOYED.crd });
    expect(crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')).toBe(true);

    const deployment = await apps.readNamespacedDeployment({ name: DEPLOYED.deployment, namespace: ns });
    const template = deployment.spec?.template;
    expect(deployment.metadata?.labels).toMatchObject({ 'olm.owner': CSV_NAME, 'olm.owner.namespace': ns });
    expect(template?.spec).toMatchObject({
      serviceAccountName: DEPLOYED.serviceAccount,
      containers: [expect.objectContaining({ image: IMG })],
    });
    // WATCH_NAMESPACE comes from this annotation, which OLM sets from the OperatorGroup.
    expect(template?.metadata?.annotations).toMatchObject({ 'olm.targetNamespaces': ns });

    const sa = await core.readNamespacedServiceAccount({ name: DEPLOYED.serviceAccount, namespace: ns });
    expect(sa.metadata?.ownerReferences?.map((r) => `${r.kind}/${r.name}`)).toContain(`ClusterServiceVersion/${CSV_NAME}`);
    await expectRbacFrom(csv.spec, ns);

    await core.readNamespacedService({ name: `${DEPLOYED.prefix}controller-manager-metrics-service`, namespace: ns });
    const reader = await rbac.readClusterRole({ name: `${DEPLOYED.prefix}metrics-reader` });
    expect(reader.metadata?.labels).toMatchObject({ 'olm.owner': CSV_NAME });
  });

  it("reconciles the sample with the token of the ServiceAccount OLM created (OLM's RBAC only)", async () => {
    const kubeconfig = path.join(dir, 'operator.kubeconfig');
    await serviceAccountKubeconfig(kc, kubeconfig, { name: DEPLOYED.serviceAccount, namespace: ns });
    // As the Deployment OLM created would run it: WATCH_NAMESPACE from olm.targetNamespaces, leader election on.
    operator = startChild(process.execPath, [inject('operatorBundle'), ...runAsDeployed(kubeconfig, ns)], {
      cwd: ROOT,
      env: childEnv({ KUBECONFIG: kubeconfig, WATCH_NAMESPACE: ns }),
    });
    await kubectl('apply', '-n', ns, '-f', DEPLOYED.sample);
    const cr = await crs
      .waitForCondition(ns, 'nginx-sample', { type: 'Deployed', status: 'True' }, { timeoutMs: 120_000 })
      .catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\noperator output:\n${operator?.output().slice(-4000) ?? ''}`);
      });
    expect(cr.status?.deployedRelease?.revision).toBe(1);
    const releases = await core.listNamespacedSecret({ namespace: ns, labelSelector: 'owner=helm,name=nginx-sample' });
    expect(releases.items.map((s) => s.metadata?.labels?.status)).toEqual(['deployed']);
    await apps.readNamespacedDeployment({ name: 'nginx-sample', namespace: ns });
    expect(operator.output()).not.toMatch(/forbidden: User \\?"system:serviceaccount:/i);

    // The operator uninstalls the release when the CR goes (finalizer), still as the SA.
    await crs.delete(ns, 'nginx-sample');
    await crs.waitForGone(ns, 'nginx-sample');
    expect((await core.listNamespacedSecret({ namespace: ns, labelSelector: 'owner=helm,name=nginx-sample' })).items).toEqual([]);
    await operator.stop();
  }, 300_000);

  it('fails a CSV whose install modes the OperatorGroup needs but it does not support (UnsupportedOperatorGroup)', async () => {
    const bad = await createNamespace(kc, 'olm-multi');
    const other = await createNamespace(kc, 'olm-multi-target');
    namespaces.push(bad, other);
    // Two target namespaces: a MultiNamespace OperatorGroup, which this CSV says it does not support.
    await createOperatorGroup(kc, bad.name, 'two-namespaces', [bad.name, other.name]);
    const file = path.join(dir, 'multi-unsupported.csv.yaml');
    const edited = structuredClone(csv);
    edited.spec.installModes = edited.spec.installModes.map((m) => (m.type === 'MultiNamespace' ? { ...m, supported: false } : m));
    await writeFile(file, stringify(edited));
    await kubectl('apply', '--server-side', '-n', bad.name, '-f', file);

    const failed = await waitForCsvPhase(kc, { namespace: bad.name, name: CSV_NAME }, 'Failed').catch((err: unknown) => {
      throw new Error(`${(err as Error).message}${olmOutput()}`);
    });
    expect(failed.status?.reason).toBe('UnsupportedOperatorGroup');
    expect(failed.status?.message).toMatch(/MultiNamespace/);
    expect((await apps.listNamespacedDeployment({ namespace: bad.name })).items).toEqual([]);
  });

  it('a sharded bundle (--sharded-replicas 3): OLM runs 3 replicas with --sharding; with only the Role OLM made, replicas share the namespaces', async () => {
    const home = await createNamespace(kc, 'olm-shard');
    const other = await createNamespace(kc, 'olm-shard-t');
    namespaces.push(home, other);
    // `make bundle SHARDED_REPLICAS=3`, written beside this test instead of over the repository's bundle/.
    const root = await mkdtemp(path.join(dir, 'sharded-'));
    const { stdout: input } = await execFileAsync('bash', [path.join(ROOT, 'hack/kustomize.sh'), 'build', 'config/manifests', IMG], {
      cwd: ROOT,
      env: childEnv(),
      maxBuffer: 16 * 1024 * 1024,
    });
    const generated = await runGenerateBundle({
      root,
      force: true,
      dryRun: false,
      input,
      inputName: 'config/manifests',
      version: VERSION,
      channels: ['alpha'],
      packageName: PACKAGE,
      useImageDigests: false,
      outputDir: 'bundle',
      builderVersion: '0.0.0',
      now: new Date(),
      shardedReplicas: 3,
    });
    expect(generated).toMatch(/MultiNamespace or AllNamespaces spread the work/);
    // MultiNamespace over two fresh namespaces: the sharded replicas have namespaces to share, and
    // OLM sees no overlap with the OwnNamespace install above, which provides the same CRD.
    installedIn.push(home.name);
    const installed = await helmOperator([
      'run',
      'bundle',
      path.join(root, 'bundle'),
      '-n',
      home.name,
      '--install-mode',
      `MultiNamespace=${home.name},${other.name}`,
      '--timeout',
      '4m',
    ]);
    if (installed.code !== 0) throw new Error(`run bundle failed: ${installed.stderr}${olmOutput()}`);
    await waitForCsvPhase(kc, { namespace: home.name, name: CSV_NAME }, 'Succeeded').catch((err: unknown) => {
      throw new Error(`${(err as Error).message}${olmOutput()}`);
    });
    const deployment = await apps.readNamespacedDeployment({ name: DEPLOYED.deployment, namespace: home.name });
    expect(deployment.spec?.replicas).toBe(3);
    expect(deployment.spec?.template.spec?.containers[0]?.args).toEqual(expect.arrayContaining(['--leader-elect', '--sharding']));
    await waitFor(
      "the Deployment's 3 pods (kwok's)",
      async () => (await apps.readNamespacedDeployment({ name: DEPLOYED.deployment, namespace: home.name })).status?.readyReplicas === 3,
      { timeoutMs: 120_000 },
    );

    // Two replicas as that Deployment runs them, with the token of the ServiceAccount OLM created:
    // every Lease read and write the shard coordinator makes is within OLM's Role.
    const kubeconfig = path.join(root, 'operator.kubeconfig');
    await serviceAccountKubeconfig(kc, kubeconfig, { name: DEPLOYED.serviceAccount, namespace: home.name });
    const replicas = [0, 1].map(() =>
      startChild(process.execPath, [inject('operatorBundle'), ...runAsDeployed(kubeconfig, home.name), '--sharding'], {
        cwd: ROOT,
        env: childEnv({ KUBECONFIG: kubeconfig, WATCH_NAMESPACE: `${home.name},${other.name}` }),
      }),
    );
    const outputs = (): string => replicas.map((r, i) => `--- replica ${i} ---\n${r.output().slice(-3000)}`).join('\n');
    try {
      type Shards = { peers: { state: string; holds: number[] }[]; handoffs: unknown[] };
      const view = await waitFor(
        'both replicas live, every bucket held by its owner (shards -o json)',
        async () => {
          const r = await helmOperator(['shards', '--id', 'helm-operator', '--operator-namespace', home.name, '-o', 'json']);
          if (r.code !== 0) return undefined;
          const v = JSON.parse(r.stdout) as Shards;
          return v.peers.filter((p) => p.state === 'live').length === 2 && v.handoffs.length === 0 ? v : undefined;
        },
        { timeoutMs: 240_000, intervalMs: 2_000 },
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\n${outputs()}`);
      });
      expect(view.peers.filter((p) => p.state === 'live').every((p) => p.holds.length > 0)).toBe(true);
      for (const namespace of [home.name, other.name]) {
        await crs.create(namespace, 'nginx-shard', {});
        const cr = await crs
          .waitForCondition(namespace, 'nginx-shard', { type: 'Deployed', status: 'True' }, { timeoutMs: 180_000 })
          .catch((err: unknown) => {
            throw new Error(`${(err as Error).message}\n${outputs()}`);
          });
        expect(cr.status?.deployedRelease?.revision).toBe(1);
        const release = await core.listNamespacedSecret({ namespace, labelSelector: 'owner=helm,name=nginx-shard' });
        // Made under a fence: the revision names its bucket, epoch and replica (ADR 0086).
        expect(release.items.map((x) => x.metadata?.labels?.['helm.sdk.operatorframework.io/shard'])).toEqual([
          expect.stringMatching(/^b\d+-e\d+-[0-9a-f]{12}$/),
        ]);
      }
      expect(outputs()).not.toMatch(/forbidden/i);
      for (const namespace of [home.name, other.name]) {
        await crs.delete(namespace, 'nginx-shard');
        await crs.waitForGone(namespace, 'nginx-shard');
      }
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
    }
  }, 900_000);

  it("OLM's operators and the catalog server listen on loopback only, and are still running", async () => {
    const pids = [
      await runningPid(stateDir, 'olm-operator'),
      await runningPid(stateDir, 'catalog-operator'),
      await runningPid(path.join(stateDir, 'catalogs', `${ns}.${PACKAGE}`), 'catalog-serve'),
    ];
    for (const pid of pids) {
      expect(pid).toBeTypeOf('number');
      const addresses = await waitFor(`process ${pid} to listen`, async () => {
        const a = await listeningAddresses(pid!);
        return a.length > 0 ? a : undefined;
      });
      expect(
        addresses.filter((a) => !/^(127\.0\.0\.1|\[::1\]):/.test(a)),
        String(pid),
      ).toEqual([]);
    }
  });
});
