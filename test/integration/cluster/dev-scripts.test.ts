/**
 * What the development scripts tell a user is true: the line `make cluster-up` prints can be run,
 * the sample command `make run` suggests applies the samples, the unreachable-cluster hint names a
 * target every project has, and `make run-as-deployed` listens on loopback only. The scripts run
 * for real against the test cluster; only the operator they start is a stand-in that prints its
 * arguments (what it would listen on is the question, not what it reconciles).
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApiextensionsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createNamespace, testKubeConfig } from '../../support/kube.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../../..');

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function bash(script: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run('bash', [path.join(ROOT, 'hack', script), ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

let work = '';
/** Stands in for `helm-operator`: prints the arguments it was started with. */
let fakeOperator = '';

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'dev-scripts-'));
  fakeOperator = path.join(work, 'helm-operator');
  await writeFile(fakeOperator, '#!/bin/sh\necho "operator-args: $*"\n');
  await chmod(fakeOperator, 0o755);
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('hack/cluster.sh up --export (make cluster-up)', () => {
  it('prints an export line for the running cluster, and still the bare path without --export', async () => {
    // The test cluster's kubeconfig is <cache>/clusters/clusters/<name>/kubeconfig.yaml.
    const kubeconfig = inject('kubeconfigPath');
    const name = path.basename(path.dirname(kubeconfig));
    const cache = path.resolve(path.dirname(kubeconfig), '../../..');
    const env = { HELM_OPERATOR_CACHE_DIR: cache, CLUSTER_NAME: name };
    const exported = await bash('cluster.sh', ['up', '--export'], env);
    expect(exported.code).toBe(0);
    expect(exported.stdout.trim().split('\n').pop()).toBe(`export KUBECONFIG=${kubeconfig}`);
    // What `eval "$(make -s cluster-up)"` does: the shell ends up with the cluster's kubeconfig.
    const { stdout } = await run('bash', ['-c', `${exported.stdout.trim().split('\n').pop() ?? ''}; printf %s "$KUBECONFIG"`]);
    expect(stdout).toBe(kubeconfig);
    const bare = await bash('cluster.sh', ['up'], env);
    expect(bare.stdout.trim().split('\n').pop()).toBe(kubeconfig);
  });
});

describe('hack/deploy.sh (make install / deploy) without a reachable cluster', () => {
  it('says to set KUBECONFIG or run make cluster-up, not a script a scaffolded project does not have', async () => {
    const dead = path.join(work, 'dead-kubeconfig');
    await writeFile(
      dead,
      'apiVersion: v1\nkind: Config\ncurrent-context: dead\nclusters: [{name: dead, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: none}}]\ncontexts: [{name: dead, context: {cluster: dead, user: u}}]\n',
    );
    const r = await bash('deploy.sh', ['apply', 'config/crd'], { KUBECONFIG: dead });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`cannot reach the cluster of dead (KUBECONFIG=${dead})`);
    expect(r.stderr).toContain("for a local control plane run 'make cluster-up' and then the 'export KUBECONFIG=...' line it prints");
    expect(r.stderr).not.toContain('hack/cluster.sh');
  });
});

/** A CRD of `group` whose plural is `plural`, with the given kind. */
function crdManifest(group: string, plural: string, kind: string): string {
  return [
    'apiVersion: apiextensions.k8s.io/v1',
    'kind: CustomResourceDefinition',
    `metadata: {name: ${plural}.${group}}`,
    'spec:',
    `  group: ${group}`,
    `  names: {kind: ${kind}, listKind: ${kind}List, plural: ${plural}, singular: ${plural.replace(/s$/, '')}}`,
    '  scope: Namespaced',
    '  versions:',
    '    - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}',
    '',
  ].join('\n');
}

/** A kustomization directory of the given CRD manifests. */
async function crdDir(name: string, crds: readonly string[]): Promise<string> {
  const dir = path.join(work, name);
  await mkdir(dir, { recursive: true });
  const files = crds.map((_, i) => `crd-${i}.yaml`);
  await Promise.all(crds.map((c, i) => writeFile(path.join(dir, files[i]!), c)));
  await writeFile(path.join(dir, 'kustomization.yaml'), `resources: [${files.join(', ')}]\n`);
  return dir;
}

describe('hack/deploy.sh apply (make install) against the test cluster', () => {
  const kc = testKubeConfig();
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const group = `install-${process.pid}.dev-scripts.example.com`;
  const env = { KUBECONFIG: inject('kubeconfigPath'), ESTABLISH_TIMEOUT: '10s' };
  const established = async (name: string): Promise<string | undefined> =>
    (await api.readCustomResourceDefinition({ name })).status?.conditions?.find((c) => c.type === 'Established')?.status;
  afterAll(async () => {
    for (const plural of ['widgets', 'gadgets', 'gizmos']) {
      await api.deleteCustomResourceDefinition({ name: `${plural}.${group}` }).catch(() => undefined);
    }
  });

  it('returns once every CRD it applied is Established, so the samples can be applied next', async () => {
    const dir = await crdDir('install-ok', [crdManifest(group, 'widgets', 'Widget'), crdManifest(group, 'gadgets', 'Gadget')]);
    const r = await bash('deploy.sh', ['apply', dir], env);
    expect(r.code, r.stderr).toBe(0);
    // Read once, right after the script returned: no waiting here, the script did it.
    expect(await established(`widgets.${group}`)).toBe('True');
    expect(await established(`gadgets.${group}`)).toBe('True');
    expect(r.stdout).toContain(`customresourcedefinition.apiextensions.k8s.io/widgets.${group} condition met`);
  });

  it('fails with the CRD conditions when a CRD never becomes Established (a kind taken by another CRD of the group)', async () => {
    // Same group and kind as widgets, another plural: the API server refuses the names (KindConflict).
    const dir = await crdDir('install-conflict', [crdManifest(group, 'gizmos', 'Widget')]);
    const r = await bash('deploy.sh', ['apply', dir], env);
    expect(r.code).not.toBe(0);
    expect(await established(`gizmos.${group}`)).not.toBe('True');
    expect(r.stderr).toContain('applied, but not every CRD is Established after 10s');
    expect(r.stderr).toMatch(new RegExp(`gizmos\\.${group.replaceAll('.', '\\.')}.*"Widget(List)?" is already in use`));
  });
});

describe('hack/run.sh (make run)', () => {
  it('suggests a sample command that applies the samples', async () => {
    const r = await bash('run.sh', [], { KUBECONFIG: inject('kubeconfigPath'), HELM_OPERATOR_BIN: fakeOperator, PROJECT_DIR: ROOT });
    expect(r.code).toBe(0);
    const hint = /try: kubectl (.+)$/m.exec(r.stderr)?.[1];
    expect(hint).toBe(`--kubeconfig ${inject('kubeconfigPath')} apply -k config/samples`);
    // Run it as printed (server-side dry run: nothing is left behind for other tests).
    const { stdout } = await run(inject('kubectlBin'), [...(hint ?? '').split(' '), '--dry-run=server'], { cwd: ROOT });
    expect(stdout).toMatch(/created \(server dry run\)|configured \(server dry run\)|unchanged \(server dry run\)/);
  });
});

describe('hack/run-as-serviceaccount.sh (make run-as-deployed)', () => {
  const kc = testKubeConfig();
  let ns: { name: string; remove: () => Promise<void> } | undefined;
  beforeAll(async () => {
    ns = await createNamespace(kc, 'run-as-sa');
    await kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace: ns.name, body: { metadata: { name: 'operator' } } });
  });
  afterAll(async () => {
    await ns?.remove();
  });

  it('binds the metrics and probe endpoints to 127.0.0.1, as make run does', async () => {
    const r = await bash('run-as-serviceaccount.sh', [], {
      KUBECONFIG: inject('kubeconfigPath'),
      HELM_OPERATOR_BIN: fakeOperator,
      PROJECT_DIR: ROOT,
      OPERATOR_NAMESPACE: ns!.name,
      OPERATOR_SERVICE_ACCOUNT: 'operator',
      METRICS_BIND_ADDRESS: '',
      HEALTH_PROBE_BIND_ADDRESS: '',
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/operator-args: run .*--metrics-bind-address 127\.0\.0\.1:8080 --health-probe-bind-address 127\.0\.0\.1:8081/);
  });
});
