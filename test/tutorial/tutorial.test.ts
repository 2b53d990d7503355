/**
 * The operator-sdk Helm tutorial, as a new operator author runs it from this repository's docs/tutorial.md
 * (issue 26): in a fresh empty directory, from the `npm pack` tarball, with no helm or kubectl on
 * PATH and no helm repositories configured (session.ts). Each step is one `it`, in the page's order;
 * after a failed step the rest are skipped, so the first failure names the step, with the command's
 * exit status and the tail of its output (full logs in the work directory, kept on failure).
 *
 * The commands are docs/tutorial.md's block (tutorial-commands.ts; a unit
 * test keeps the two equal), with two substitutions: the chart repository's port (the test serves
 * it on a free one) and the operator's metrics and probe ports (free ones; others may run on this
 * machine).
 *
 * The control plane is the scaffolded project's own `make cluster-up` (kwok: pods are reported
 * Running and Ready without running anything), named TUTORIAL_CLUSTER_NAME (default
 * helm-operator-tutorial); `make deploy` counts as available when the Deployment's Available
 * condition is True and its pod template runs the image `make docker-build` built (present in
 * podman's storage). That the image itself works is shown by the tutorial's `podman run` step: the
 * operator in the image, against this cluster, uninstalls the sample's release when it is deleted.
 */
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ApiextensionsV1Api, AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { waitFor } from '../support/kube.js';
import { freePort } from '../support/process.js';
import { packTarball, REPO } from '../support/scaffold.js';
import { serveDirectory, type Served } from '../integration/scaffold/sources.js';
import { HIDDEN_TOOLS, Session, tail, toolCacheDir, type Background } from './session.js';
import { T } from './tutorial-commands.js';

/**
 * Not TEST_CLUSTER_NAME: `make test-tutorial` runs the scaffold end-to-end files beside this one, on
 * the cluster TEST_CLUSTER_NAME names, and this file's `make cluster-down` would stop it under them.
 */
const CLUSTER = process.env.TUTORIAL_CLUSTER_NAME ?? 'helm-operator-tutorial';
const FIXTURES = path.join(REPO, 'test/fixtures/charts/tutorial');
const GROUP = 'web.aiops.org';
const PROJECT = 'nginx-operator';
const MIN = 60_000;
const run = promisify(execFile);

let work = '';
let session: Session;
let project = '';
let repo: Served | undefined;
let kubeconfig = '';
let operator: Background | undefined;
let container: Background | undefined;
let broken: string | undefined;
const timings: [string, number][] = [];

/** One tutorial step: skipped once an earlier one failed, so the report names the first failure. */
function step(name: string, fn: () => Promise<void>, timeoutMs = 5 * MIN): void {
  it(
    name,
    async (ctx) => {
      if (broken !== undefined) ctx.skip(`an earlier step failed: ${broken}`);
      const start = Date.now();
      try {
        await fn();
      } catch (err) {
        broken = name;
        throw err;
      } finally {
        timings.push([name, Date.now() - start]);
      }
    },
    timeoutMs,
  );
}

/** The page's command with this run's repository URL. */
const typed = (command: string): string => command.replaceAll(T.repoUrl, repo?.url ?? T.repoUrl);
const sh = (command: string, timeoutMs = 5 * MIN, cwd = project): Promise<string> => session.ok(typed(command), { cwd, timeoutMs });

/**
 * An `eval "$(...)"` line of the page, run as typed (under `set -e`: a line of the output that is
 * not a command fails it), its exports then carried into the session: what the next commands of the
 * user's shell see.
 */
async function evalStep(
  command: string,
  timeoutMs = 5 * MIN,
): Promise<{ kubeconfig: string; pathPrefix: string; containersConf: string; registry: string }> {
  const out = await sh(
    `set -e; before=$PATH; ${command}; printf '\n@%s\n' "KUBECONFIG=\${KUBECONFIG:-}" "PATH_PREFIX=\${PATH%"$before"}" "CONTAINERS_CONF=\${CONTAINERS_CONF:-}" "REGISTRY=\${REGISTRY:-}"`,
    timeoutMs,
  );
  const value = (name: string): string => new RegExp(`^@${name}=(.*)$`, 'm').exec(out)?.[1] ?? '';
  const r = {
    kubeconfig: value('KUBECONFIG'),
    pathPrefix: value('PATH_PREFIX').replace(/:$/, ''),
    containersConf: value('CONTAINERS_CONF'),
    registry: value('REGISTRY'),
  };
  if (r.kubeconfig !== '') session.set('KUBECONFIG', r.kubeconfig);
  if (r.containersConf !== '') session.set('CONTAINERS_CONF', r.containersConf);
  if (r.registry !== '') session.set('REGISTRY', r.registry);
  if (r.pathPrefix !== '') session.prependPath(r.pathPrefix);
  return r;
}

function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  return kc;
}

/** Every file of the project but node_modules/: path → sha256 and mtime (a rewrite with equal bytes counts). */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const file = path.join(e.parentPath, e.name);
    const rel = path.relative(dir, file);
    if (!e.isFile() || rel.split(path.sep)[0] === 'node_modules') continue;
    out[rel] = `${createHash('sha256')
      .update(await readFile(file))
      .digest('hex')} ${(await stat(file)).mtimeMs}`;
  }
  return out;
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
const condition = (obj: { status?: { conditions?: Condition[] } }, type: string): Condition | undefined =>
  obj.status?.conditions?.find((c) => c.type === type);

async function readSample(): Promise<{ status?: { conditions?: Condition[] } }> {
  return (await kubeConfig()
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({ group: GROUP, version: 'v1', plural: 'nginxes', namespace: 'default', name: T.sample })) as {
    status?: { conditions?: Condition[] };
  };
}

/** The operator's /readyz answers 200 while `process` keeps running. */
async function waitReady(p: Background, port: number): Promise<void> {
  await waitFor(
    `${p.command} to answer /readyz on 127.0.0.1:${port}`,
    async () => {
      if (!p.running()) throw new Error(`${p.command} exited; last lines of its output:\n${tail(p.output())}`);
      return (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200;
    },
    { timeoutMs: 5 * MIN, intervalMs: 1000 },
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}\n${tail(p.output())}`, { cause: err });
  });
}

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'tutorial-'));
  const npmCache = (await run('npm', ['config', 'get', 'cache'], { env: process.env })).stdout.trim();
  session = new Session(work, npmCache);
  await session.init();
  session.set('CLUSTER_NAME', CLUSTER);
  project = path.join(work, PROJECT);
});

afterAll(async () => {
  // Whatever a failed step left behind: no process and no container may outlive the tier.
  await container?.stop();
  await operator?.stop();
  if (container !== undefined)
    await session.run(`${T.imageEnv}; podman rm -f --ignore ${T.containerName}`, { cwd: project, timeoutMs: MIN });
  if (process.env.KEEP_CLUSTER !== '1' && kubeconfig !== '') await session.run('make cluster-down', { cwd: project, timeoutMs: 2 * MIN });
  await repo?.stop();
  process.stdout.write(
    `tutorial steps (seconds):\n${timings.map(([n, ms]) => `  ${(ms / 1000).toFixed(1).padStart(7)}  ${n}`).join('\n')}\n`,
  );
  if (broken === undefined) await rm(work, { recursive: true, force: true });
  else process.stdout.write(`the tutorial's work directory and every command's log are kept in ${work} (logs/)\n`);
}, 10 * MIN);

describe('the operator-sdk Helm tutorial from the npm package, with no helm or kubectl set up', () => {
  step('the user’s shell: npm and make, no helm and no kubectl on PATH', async () => {
    for (const tool of HIDDEN_TOOLS) expect((await session.run(`command -v ${tool}`, { cwd: work, timeoutMs: MIN })).code, tool).toBe(1);
    expect(await sh('npm --version && make --version | head -1', MIN, work)).toMatch(/GNU Make/);
  });

  step(
    'npm pack (in a clone of this repository)',
    async () => {
      const tarball = await packTarball();
      expect(path.basename(tarball)).toBe(T.tarball);
      await cp(tarball, path.join(work, T.tarball));
    },
    10 * MIN,
  );

  step(T.installCli, async () => {
    await sh(T.installCli, 5 * MIN, work);
    expect((await sh('helm-operator --version', MIN, work)).trim().split('\n').pop()).toBe('0.1.0');
  });

  step('a chart repository on 127.0.0.1: nginx, which depends on the library chart common', async () => {
    // The repository's author runs helm: the repository's pinned one, with helm homes of its own.
    const helmBin = /^export HELM_BIN="([^"]+)"$/m.exec((await run('bash', [path.join(REPO, 'hack/tools.sh'), 'env'])).stdout)?.[1] ?? '';
    const homes = {
      HELM_CONFIG_HOME: path.join(work, 'author/config'),
      HELM_CACHE_HOME: path.join(work, 'author/cache'),
      HELM_DATA_HOME: path.join(work, 'author/data'),
    };
    const helm = (...args: string[]): Promise<unknown> => run(helmBin, args, { env: { ...process.env, ...homes } });
    const charts = path.join(work, 'repository');
    await mkdir(charts);
    repo = await serveDirectory(charts);
    await helm('package', path.join(FIXTURES, 'common'), '-d', charts);
    await helm('repo', 'index', charts, '--url', repo.url);
    const nginx = path.join(work, 'author/nginx');
    await cp(path.join(FIXTURES, 'nginx'), nginx, { recursive: true });
    const chartYaml = path.join(nginx, 'Chart.yaml');
    await writeFile(chartYaml, (await readFile(chartYaml, 'utf8')).replaceAll('REPOSITORY', repo.url));
    await helm('dependency', 'update', nginx);
    await helm('package', nginx, '-d', charts);
    await helm('repo', 'index', charts, '--url', repo.url);
    const index = parse(await readFile(path.join(charts, 'index.yaml'), 'utf8')) as { entries: Record<string, unknown[]> };
    expect(Object.keys(index.entries).sort()).toEqual(['common', 'nginx']);
  });

  step(
    T.init,
    async () => {
      await sh(T.mkdir, MIN, work);
      const out = await sh(T.init, 10 * MIN);
      expect(out).toContain('created  watches.yaml');
      for (const f of ['PROJECT', 'Makefile', 'Dockerfile', 'package-lock.json']) await stat(path.join(project, f));
      // The runtime under test, vendored from the tarball (the registry does not serve this version).
      const pkg = JSON.parse(await readFile(path.join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
      expect(pkg.dependencies['helm-operator-ts']).toBe(`file:vendor/${T.tarball}`);
    },
    10 * MIN,
  );

  step(T.createApi, async () => {
    const out = await sh(T.createApi);
    expect(out).toMatch(/note: helm: none on PATH .* the runtime's pinned helm/);
    // The dependency, vendored once (not a directory and a .tgz).
    expect(await readdir(path.join(project, 'helm-charts/nginx/charts'))).toEqual(['common']);
    // allowKinds: the kinds the chart renders; an Ingress only with ingress.enabled=true, so not listed.
    const watches = parse(await readFile(path.join(project, 'watches.yaml'), 'utf8')) as { allowKinds?: string[] }[];
    expect(watches).toEqual([
      {
        group: GROUP,
        version: 'v1',
        kind: 'Nginx',
        chart: 'helm-charts/nginx',
        allowKinds: expect.arrayContaining(['Deployment.apps', 'Service']) as unknown,
      },
    ]);
    expect(watches[0]?.allowKinds).not.toContain('Ingress.networking.k8s.io');
    expect(await readFile(path.join(project, 'config/rbac/role.yaml'), 'utf8')).toMatch(/# with ingress\.enabled=true:/);
    // Nothing was written into the user's helm configuration.
    expect((await readdir(session.home, { recursive: true })).filter((f) => f.endsWith('repositories.yaml'))).toEqual([]);
  });

  step('the same create api again changes no file', async () => {
    const before = await snapshot(project);
    const out = await sh(T.createApi);
    expect(await snapshot(project)).toEqual(before);
    expect(out).not.toMatch(/^\s*(created|updated)\s/m);
  });

  step(
    T.clusterUp,
    async () => {
      kubeconfig = (await evalStep(T.clusterUp, 40 * MIN)).kubeconfig;
      expect(kubeconfig).toMatch(new RegExp(`/clusters/${CLUSTER}/kubeconfig\\.yaml$`));
    },
    45 * MIN,
  );

  step('the same create api with the cluster answering changes no file', async () => {
    const before = await snapshot(project);
    await sh(T.createApi);
    expect(await snapshot(project)).toEqual(before);
  });

  step(T.install, async () => {
    await sh(T.install);
    const crd = await kubeConfig()
      .makeApiClient(ApiextensionsV1Api)
      .readCustomResourceDefinition({ name: `nginxes.${GROUP}` });
    expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status).toBe('True');
  });

  step(
    `${T.run} (in the background)`,
    async () => {
      const [metrics, probes] = [await freePort(), await freePort()];
      session.set('METRICS_BIND_ADDRESS', `127.0.0.1:${metrics}`);
      session.set('HEALTH_PROBE_BIND_ADDRESS', `127.0.0.1:${probes}`);
      operator = await session.background(T.run, project);
      await waitReady(operator, probes);
    },
    10 * MIN,
  );

  step(T.toolsEnv, async () => {
    expect((await evalStep(T.toolsEnv)).pathPrefix).toContain(toolCacheDir());
    expect(await sh('command -v kubectl helm', MIN)).toContain(toolCacheDir());
  });

  step(T.applySample, async () => {
    expect(await sh(T.applySample)).toMatch(new RegExp(`nginx\\.${GROUP.replaceAll('.', '\\.')}/${T.sample} created`));
  });

  step(
    `${T.waitSample}: Deployed=True and Ready=True`,
    async () => {
      await sh(T.waitSample, 6 * MIN);
      const cr = await readSample();
      expect(condition(cr, 'Deployed')?.status).toBe('True');
      expect(condition(cr, 'Ready')?.status).toBe('True');
      const deployment = await kubeConfig().makeApiClient(AppsV1Api).readNamespacedDeployment({ name: T.sample, namespace: 'default' });
      expect(deployment.spec?.template.spec?.containers[0]?.resources?.requests?.['ephemeral-storage']).toBe('50Mi');
      expect(deployment.status?.readyReplicas).toBe(1);
      expect(await sh(T.getSample)).toMatch(new RegExp(`^${T.sample}\\s+True\\s`, 'm'));
    },
    7 * MIN,
  );

  step('stop make run', async () => {
    await operator!.stop();
    expect(operator!.running()).toBe(false);
  });

  step(
    T.dockerBuild,
    async () => {
      await sh(T.dockerBuild, 50 * MIN);
      await sh(`${T.imageEnv}; podman image exists ${T.img}`, MIN);
    },
    55 * MIN,
  );

  step(
    'the image against the local cluster (podman run, a flattened kubeconfig): it uninstalls the deleted sample',
    async () => {
      await evalStep(T.imageEnv, MIN);
      await sh(T.flatKubeconfig, MIN);
      const [metrics, probes] = [await freePort(), await freePort()];
      container = await session.background(
        T.podmanRun.replace(
          '--kubeconfig=/kube/config',
          `--kubeconfig=/kube/config --metrics-bind-address=127.0.0.1:${metrics} --health-probe-bind-address=127.0.0.1:${probes}`,
        ),
        project,
      );
      await waitReady(container, probes);
      await sh(T.deleteSample, 4 * MIN);
      const apps = kubeConfig().makeApiClient(AppsV1Api);
      await waitFor(
        'the release’s Deployment to be gone',
        () =>
          apps.readNamespacedDeployment({ name: T.sample, namespace: 'default' }).then(
            () => false,
            () => true,
          ),
        { timeoutMs: MIN },
      );
      await container.stop();
    },
    10 * MIN,
  );

  step(
    `${T.deploy}: the operator Deployment available, with the image docker-build built`,
    async () => {
      await sh(T.deploy);
      await sh(T.waitDeploy, 4 * MIN);
      const d = await kubeConfig()
        .makeApiClient(AppsV1Api)
        .readNamespacedDeployment({ name: `${PROJECT}-controller-manager`, namespace: `${PROJECT}-system` });
      expect(d.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');
      const manager = d.spec?.template.spec?.containers.find((c) => c.name === 'manager');
      expect(manager?.image).toBe(T.img);
      // Metrics as kubebuilder v4 serves them: HTTPS on :8443, each scrape's token reviewed with
      // the metrics-auth-role bound to the operator; make run and podman run above stay plain HTTP.
      expect(manager?.args).toEqual(expect.arrayContaining(['--metrics-bind-address=:8443', '--metrics-secure', '--metrics-require-rbac']));
      const service = await kubeConfig()
        .makeApiClient(CoreV1Api)
        .readNamespacedService({ name: `${PROJECT}-controller-manager-metrics-service`, namespace: `${PROJECT}-system` });
      expect(service.spec?.ports).toEqual([expect.objectContaining({ name: 'https', port: 8443, targetPort: 8443 })]);
      const binding = await kubeConfig()
        .makeApiClient(RbacAuthorizationV1Api)
        .readClusterRoleBinding({ name: `${PROJECT}-metrics-auth-rolebinding` });
      expect(binding.roleRef.name).toBe(`${PROJECT}-metrics-auth-role`);
      expect(binding.subjects).toEqual([
        expect.objectContaining({ kind: 'ServiceAccount', name: `${PROJECT}-controller-manager`, namespace: `${PROJECT}-system` }),
      ]);
    },
    6 * MIN,
  );

  step(T.undeploy, async () => {
    await sh(T.undeploy);
    await waitFor(
      'the CRD to be gone',
      () =>
        kubeConfig()
          .makeApiClient(ApiextensionsV1Api)
          .readCustomResourceDefinition({ name: `nginxes.${GROUP}` })
          .then(
            () => false,
            () => true,
          ),
      { timeoutMs: 2 * MIN },
    );
  });

  step(
    `${T.bundle}: the bundle written and valid (bundle validate, suite=operatorframework)`,
    async () => {
      const out = await sh(T.bundle, 10 * MIN);
      // The recipe's last command: our validator with OLM's optional suite; an error fails make.
      expect(out).toMatch(/^bundle is valid/m);
      const csv = parse(await readFile(path.join(project, `bundle/manifests/${PROJECT}.clusterserviceversion.yaml`), 'utf8')) as {
        metadata: { name: string };
      };
      expect(csv.metadata.name).toBe(`${PROJECT}.v0.0.1`);
    },
    12 * MIN,
  );
  // The page's commands after `make bundle` (registry, bundle image, catalog, OLM) are not run here:
  // CI installs OLM once, in the real-node tier (tutorial-commands.ts, NOT_RUN_HERE, says where each is).
});
