/**
 * The operator image, built from the Dockerfile and run the way config/manager's Deployment runs
 * it: the image's uid 1001, read-only root filesystem, a tmpfs at /tmp, no capabilities, no
 * privilege escalation, the Deployment's args, env and memory limit, and the deployed
 * ServiceAccount's token, CA and namespace at the in-cluster paths with KUBERNETES_SERVICE_HOST/PORT
 * pointing at the test API server. The test cluster's fake node cannot run it, so podman does
 * (host network: the API server listens on loopback).
 *
 * `hack/image.sh build` builds it, with stand-in base images when no registry is reachable, cached
 * between runs. Needs podman (hack/image.sh installs it from apt as root).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApiextensionsV1Api, AppsV1Api, CoreV1Api, type V1Container, type V1Deployment, type V1PodSpec, type V1SecurityContext } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv, clusterEndpoint, DEPLOYED, exec, gone, kubectl, make, serviceAccountToken } from '../support/deploy.js';
import { freePort } from '../support/process.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { CRs, NGINX } from '../support/operator.js';
import { sample } from '../support/prometheus.js';

const IMG = 'localhost/helm-operator:e2e';
const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** podman with the containers.conf this machine needs (`hack/image.sh env`). */
async function podmanEnv(): Promise<NodeJS.ProcessEnv> {
  const out = await exec('bash', ['hack/image.sh', 'env'], 60_000);
  const conf = /^export CONTAINERS_CONF=(.+)$/m.exec(out)?.[1];
  return childEnv(conf === undefined ? {} : { CONTAINERS_CONF: conf.replace(/^'|'$/g, '') });
}

interface Endpoints {
  health: number;
  metrics: number;
}

/** A Kubernetes quantity in the unit podman reads ("256Mi" → "256m", MiB). */
const podmanSize = (q: string): string => q.replace(/i$/, '').toLowerCase();

function securityFlags(sc: V1SecurityContext): string[] {
  return [
    ...(sc.readOnlyRootFilesystem === true ? ['--read-only'] : []),
    ...(sc.allowPrivilegeEscalation === false ? ['--security-opt=no-new-privileges'] : []),
    ...(sc.capabilities?.drop ?? []).map((cap) => `--cap-drop=${cap}`),
  ];
}

/** emptyDir mounts become tmpfs mounts of the same size; anything else is refused. */
function volumeFlags(pod: V1PodSpec, c: V1Container): string[] {
  return (c.volumeMounts ?? []).map((m) => {
    const v = pod.volumes?.find((x) => x.name === m.name)?.emptyDir;
    if (v === undefined) throw new Error(`volume ${m.name}: only emptyDir is mapped`);
    return `--tmpfs=${m.mountPath}:rw,mode=1777${v.sizeLimit === undefined ? '' : `,size=${podmanSize(v.sizeLimit)}`}`;
  });
}

/**
 * `podman run` flags for the Deployment's manager container. Bind addresses move to free loopback
 * ports: with the host network, :8080/:8081 may be taken on this machine.
 */
function podmanRunArgs(deployment: V1Deployment, ports: Endpoints): { flags: string[]; args: string[]; graceSeconds: number } {
  const pod = deployment.spec?.template.spec;
  const c = pod?.containers.find((x) => x.name === 'manager');
  if (pod === undefined || c === undefined) throw new Error('the Deployment has no manager container');
  const memory = c.resources?.limits?.memory;
  const flags = [
    ...securityFlags(c.securityContext ?? {}),
    ...volumeFlags(pod, c),
    ...(c.env ?? []).map((e) => `--env=${e.name}=${e.value ?? ''}`),
    ...(memory === undefined ? [] : [`--memory=${podmanSize(memory)}`]),
  ];
  const args = (c.args ?? []).map((a) =>
    a.replace(/^(--health-probe-bind-address=).*$/, `$1127.0.0.1:${ports.health}`).replace(/^(--metrics-bind-address=).*$/, `$1127.0.0.1:${ports.metrics}`),
  );
  return { flags, args, graceSeconds: pod.terminationGracePeriodSeconds ?? 30 };
}

describe('the operator image, run as the Deployment runs it', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const crs = new CRs(kc, NGINX);
  const name = `helm-operator-e2e-${randomBytes(3).toString('hex')}`;
  let env: NodeJS.ProcessEnv = {};
  let dir = '';
  let ns: { name: string; remove: () => Promise<void> } | undefined;
  let crdExisted = false;
  let ports: Endpoints = { health: 0, metrics: 0 };
  let grace = 30;

  const podman = (args: readonly string[], timeoutMs = 120_000): Promise<string> => exec('podman', args, timeoutMs, env);
  /** A podman command's exit code and separate outputs, failure included. */
  const podmanResult = (args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile('podman', args, { env, timeout: 120_000 }, (err, stdout, stderr) => {
        resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stdout, stderr });
      });
    });
  const logs = async (): Promise<string> => (await podman(['logs', '--tail', '60', name]).catch((e: unknown) => String(e))).slice(-6000);
  const withLogs = async <T>(p: Promise<T>): Promise<T> =>
    p.catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}\ncontainer output:\n${await logs()}`, { cause: err });
    });
  /** Release Secrets of the sample: `<revision>=<status>`. */
  const releases = async (): Promise<string[]> =>
    (await core.listNamespacedSecret({ namespace: ns?.name ?? '', labelSelector: 'owner=helm,name=nginx-sample' })).items
      .map((s) => `${s.metadata?.labels?.version}=${s.metadata?.labels?.status}`)
      .sort();

  beforeAll(async () => {
    // Installs podman when missing, so before `env` reads the machine.
    await exec('bash', ['hack/image.sh', 'build', IMG], 1_500_000);
    env = await podmanEnv();
    dir = await mkdtemp(path.join(os.tmpdir(), 'image-e2e-'));
    await chmod(dir, 0o755);
    crdExisted = !(await gone(() => ext.readCustomResourceDefinition({ name: DEPLOYED.crd })));
    await make('deploy', `IMG=${IMG}`);
    ns = await createNamespace(kc, 'image-e2e');
  }, 1_800_000);

  afterAll(async () => {
    // undeploy first: a container still running uninstalls the sample's release.
    await make('undeploy', 'ignore-not-found=true').catch(() => undefined);
    await podman(['rm', '--force', '--time', '5', name]).catch(() => undefined);
    await ns?.remove();
    if (dir !== '') await rm(dir, { recursive: true, force: true });
    if (crdExisted) await make('install');
  }, 300_000);

  it('is the operator-sdk layout: uid 1001:0, no npm, one helm, the bundled executable without node_modules', async () => {
    expect((await podman(['image', 'inspect', '--format', '{{.Config.User}}', IMG])).trim()).toBe('1001:0');
    const listing = await podman([
      'run', '--rm', '--network=none', '--entrypoint=/bin/sh', IMG, '-c',
      'command -v npm npx corepack yarn; find / -xdev -type f -name helm 2>/dev/null; find / -xdev -name node_modules 2>/dev/null | head -3; ls /app/helm-operator.js; id -u',
    ]);
    expect(listing.trim().split('\n')).toEqual(['/usr/local/bin/helm', '/app/helm-operator.js', '1001']);
  });

  it('prints one line naming a mounted kubeconfig that uid 1001 cannot read', async () => {
    const file = path.join(dir, 'root-only.kubeconfig');
    await writeFile(file, 'apiVersion: v1\nkind: Config\n', { mode: 0o600 });
    const result = await podmanResult(['run', '--rm', '--network=host', `--volume=${file}:/kube/config:ro`, IMG, '--kubeconfig=/kube/config']);
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'error: cannot load the kubeconfig /kube/config: permission denied (EACCES) to uid 1001\n' });
  });

  it('reconciles the sample with the ServiceAccount token, and serves /healthz, /readyz and /metrics', async () => {
    const deployment = await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: DEPLOYED.deployment, namespace: DEPLOYED.namespace });
    ports = { health: await freePort(), metrics: await freePort() };
    const run = podmanRunArgs(deployment, ports);
    grace = run.graceSeconds;
    // What the kubelet mounts for the pod's ServiceAccount; the API server's certificate names 127.0.0.1.
    const sa = path.join(dir, 'serviceaccount');
    await mkdir(sa, { mode: 0o755 });
    const { server, caPem } = await clusterEndpoint(kc);
    const url = new URL(server);
    await writeFile(path.join(sa, 'token'), await serviceAccountToken(kc), { mode: 0o644 });
    await writeFile(path.join(sa, 'ca.crt'), caPem, { mode: 0o644 });
    await writeFile(path.join(sa, 'namespace'), DEPLOYED.namespace, { mode: 0o644 });
    await podman([
      'run', '--detach', `--name=${name}`, '--network=host', ...run.flags,
      `--volume=${sa}:${SA_DIR}:ro`,
      `--env=KUBERNETES_SERVICE_HOST=${url.hostname}`, `--env=KUBERNETES_SERVICE_PORT=${url.port}`,
      IMG, ...run.args,
    ]);

    await withLogs(
      waitFor('/readyz to answer 200', async () => (await fetch(`http://127.0.0.1:${ports.health}/readyz`)).status === 200, { timeoutMs: 90_000 }),
    );
    expect((await fetch(`http://127.0.0.1:${ports.health}/healthz`)).status).toBe(200);

    await kubectl('apply', '-n', ns?.name ?? '', '-f', DEPLOYED.sample);
    const cr = await withLogs(crs.waitForCondition(ns?.name ?? '', 'nginx-sample', { type: 'Deployed', status: 'True' }, { timeoutMs: 120_000 }));
    expect(cr.status?.deployedRelease?.revision).toBe(1);
    expect(await releases()).toEqual(['1=deployed']);

    const metrics = await (await fetch(`http://127.0.0.1:${ports.metrics}/metrics`)).text();
    expect(sample(metrics, 'helm_operator_helm_executions_total', { verb: 'install', outcome: 'success' })).toBeGreaterThanOrEqual(1);
    expect(sample(metrics, 'leader_election_master_status', { name: 'helm-operator' })).toBe(1);
  }, 300_000);

  it('on podman stop (SIGTERM) exits 0 within the grace period, leaving no release pending', async () => {
    const namespace = ns?.name ?? '';
    // Stop while an upgrade is in flight, when the poll catches it: it must finish, not be cut.
    await crs.patch(namespace, 'nginx-sample', { spec: { replicaCount: 3 } });
    await waitFor('the upgrade to start', async () => (await releases()).some((r) => r.startsWith('2=')), { timeoutMs: 30_000, intervalMs: 50 });
    // podman stop sends SIGKILL after --time seconds (exit code 137): 0 means the operator exited
    // by itself within the grace period.
    await podman(['stop', `--time=${grace}`, name], (grace + 30) * 1000);
    const state = JSON.parse(await podman(['inspect', '--format', '{{json .State}}', name])) as { ExitCode: number; OOMKilled: boolean };
    expect(state, await logs()).toMatchObject({ ExitCode: 0, OOMKilled: false });
    expect((await releases()).filter((r) => r.includes('pending'))).toEqual([]);
  }, 180_000);

  it('starts again from its read-only image, converges, and uninstalls on make undeploy', async () => {
    const namespace = ns?.name ?? '';
    await podman(['start', name]);
    await withLogs(
      waitFor(
        'revision 2 deployed',
        async () => {
          const c = await crs.get(namespace, 'nginx-sample');
          return c?.status?.deployedRelease?.revision === 2 && c.status.conditions?.some((x) => x.type === 'Deployed' && x.status === 'True');
        },
        { timeoutMs: 120_000 },
      ),
    );
    expect((await releases()).at(-1)).toBe('2=deployed');
    // undeploy deletes the CR first; the running container uninstalls the release.
    await withLogs(make('undeploy'));
    expect(await crs.get(namespace, 'nginx-sample')).toBeUndefined();
    expect(await releases()).toEqual([]);
    await podman(['stop', `--time=${grace}`, name], (grace + 30) * 1000);
    expect(JSON.parse(await podman(['inspect', '--format', '{{json .State.ExitCode}}', name]))).toBe(0);
  }, 300_000);
});
