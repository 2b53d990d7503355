/**
 * `create api` as a new user runs it (issue 26, items 2 and 8): no helm on PATH, no HELM_BIN, no
 * helm repositories configured (empty helm homes), a chart repository on 127.0.0.1 whose chart
 * depends on a library chart from the same repository. The runtime comes from `npm pack` of this
 * checkout; helm is the runtime's pinned one, found in the tool cache (hack/tools.sh helm).
 */
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { findOnPath } from '../../../src/helm/locate.js';
import { childEnv, exec, REPO, runtimePackage, type RuntimePackage } from '../../support/scaffold.js';
import { serveDirectory, type Served } from './sources.js';

const FIXTURES = path.join(REPO, 'test/fixtures/charts');

let work = '';
let pkg: RuntimePackage;
let repo: Served | undefined;
/** The user's helm homes: empty, and they must stay so. */
let homes: Record<string, string> = {};
/** What the test's own helm uses to build the repository (not the user's). */
let builderHomes: Record<string, string> = {};
/** Node, bash and coreutils; no helm. */
let userPath = '';

/** The user's environment: no helm on PATH, no HELM_BIN, empty helm homes; `kubeconfig` chooses the cluster. */
function userEnv(kubeconfig: string): NodeJS.ProcessEnv {
  const {
    HELM_BIN: _h,
    HELM_REPOSITORY_CONFIG: _r,
    HELM_REPOSITORY_CACHE: _c,
    ...env
  } = childEnv({ ...homes, KUBECONFIG: kubeconfig, PATH: userPath });
  return env;
}
const cli = (cwd: string, kubeconfig: string, ...args: string[]): Promise<string> => exec(pkg.bin, args, { cwd, env: userEnv(kubeconfig) });
const helm = (...args: string[]): Promise<string> => exec(inject('helmBin'), args, { env: childEnv(builderHomes) });

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

/** The resources config/rbac grants (as kubectl kustomize builds it, so comments do not count). */
async function grantedResources(project: string): Promise<string[]> {
  const docs = parseAllDocuments(await exec(inject('kubectlBin'), ['kustomize', path.join(project, 'config/rbac')])).map(
    (d) => d.toJS() as { rules?: { resources?: string[] }[] },
  );
  return docs.flatMap((d) => (d.rules ?? []).flatMap((r) => r.resources ?? []));
}

/** A chart directory from a fixture with `REPOSITORY` in Chart.yaml replaced by the served URL. */
async function usesCommon(dest: string): Promise<string> {
  await cp(path.join(FIXTURES, 'scaffold-uses-common'), dest, { recursive: true });
  const chartYaml = path.join(dest, 'Chart.yaml');
  await writeFile(chartYaml, (await readFile(chartYaml, 'utf8')).replaceAll('REPOSITORY', repo!.url));
  return dest;
}

beforeAll(async () => {
  pkg = await runtimePackage();
  work = await mkdtemp(path.join(os.tmpdir(), 'chart-repo-it-'));
  homes = {
    HELM_CONFIG_HOME: path.join(work, 'user/config'),
    HELM_CACHE_HOME: path.join(work, 'user/cache'),
    HELM_DATA_HOME: path.join(work, 'user/data'),
  };
  builderHomes = {
    HELM_CONFIG_HOME: path.join(work, 'builder/config'),
    HELM_CACHE_HOME: path.join(work, 'builder/cache'),
    HELM_DATA_HOME: path.join(work, 'builder/data'),
  };
  userPath = `${path.dirname(process.execPath)}:/usr/bin:/bin`;
  expect(await findOnPath('helm', userPath)).toBeUndefined();

  // The repository: the library chart, and a chart that depends on it (vendored by `helm package`).
  const charts = path.join(work, 'repo');
  await mkdir(charts);
  repo = await serveDirectory(charts);
  await helm('package', path.join(FIXTURES, 'scaffold-common'), '-d', charts);
  await helm('repo', 'index', charts, '--url', repo.url);
  const source = await usesCommon(path.join(work, 'publish/scaffold-uses-common'));
  await helm('dependency', 'update', source);
  await helm('package', source, '-d', charts);
  await helm('repo', 'index', charts, '--url', repo.url);
}, 600_000);

afterAll(async () => {
  await repo?.stop();
  await rm(work, { recursive: true, force: true });
});

describe('create api from a chart repository, with no helm set-up', () => {
  let dir = '';
  const unreachable = (): string => path.join(work, 'no-cluster.kubeconfig');
  const args = (): string[] => [
    'create',
    'api',
    '--group',
    'web',
    '--version',
    'v1',
    '--kind',
    'Nginx',
    '--helm-chart-repo',
    repo!.url,
    '--helm-chart',
    'scaffold-uses-common',
  ];

  beforeAll(async () => {
    dir = path.join(work, 'project');
    await mkdir(dir);
    await writeFile(
      unreachable(),
      'apiVersion: v1\nkind: Config\ncurrent-context: none\nclusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: none}}]\ncontexts: [{name: none, context: {cluster: none, user: u}}]\n',
    );
  });

  it('init --plugins=helm, then create api with --helm-chart-repo: the pinned helm, no repo add, the dependency vendored once', async () => {
    expect(await cli(dir, unreachable(), 'init', '--domain', 'aiops.org', '--plugins=helm')).toContain('created  watches.yaml');
    const out = await cli(dir, unreachable(), ...args());
    expect(out).toMatch(/^note: helm: none on PATH and HELM_BIN unset; using the runtime's pinned helm \S+\/helm\/helm$/m);
    const charts = await readdir(path.join(dir, 'helm-charts/scaffold-uses-common/charts'));
    expect(charts).toEqual(['scaffold-common']);
    // Nothing in the user's helm homes: no repository added, no index cached.
    expect(await filesUnder(path.join(work, 'user'))).toEqual([]);
    // The Ingress that ingress.enabled switches on: a commented rule naming the value, not a grant.
    expect(out).toMatch(
      /^note: RBAC: with ingress\.enabled=true it also renders ingresses\.networking\.k8s\.io: commented rules in config\/rbac\/role\.yaml/m,
    );
    const role = await readFile(path.join(dir, 'config/rbac/role.yaml'), 'utf8');
    expect(role).toMatch(/# with ingress\.enabled=true:\n\s*# - apiGroups: \["networking\.k8s\.io"\]\n\s*# {3}resources: \["ingresses"\]/);
    expect(role).toContain('tls.enabled=true');
    expect(await grantedResources(dir)).not.toContain('ingresses');
    expect(await readFile(path.join(dir, 'README.md'), 'utf8')).toContain('--rbac=all-values');
  });

  it('re-running it changes nothing, without a cluster or with one', async () => {
    for (const kubeconfig of [unreachable(), inject('kubeconfigPath')]) {
      const again = await cli(dir, kubeconfig, ...args());
      expect(again).not.toMatch(/^(created|updated|skipped) /m);
      expect(again).toMatch(/^unchanged\s+config\/rbac\/role\.yaml/m);
    }
  });

  it('a local chart directory whose dependency lives in the repository gets it, without a repository entry', async () => {
    const local = await usesCommon(path.join(work, 'local/scaffold-uses-common'));
    const project = path.join(work, 'project-local');
    await mkdir(project);
    await cli(project, unreachable(), 'init', '--domain', 'aiops.org');
    await cli(project, unreachable(), 'create', 'api', '--group', 'local', '--version', 'v1', '--kind', 'Local', '--helm-chart', local);
    expect(await readdir(path.join(project, 'helm-charts/scaffold-uses-common/charts'))).toEqual(['scaffold-common-2.31.10.tgz']);
    // The chart renders with the library it now vendors.
    const rendered = parseAllDocuments(await helm('template', 'x', path.join(project, 'helm-charts/scaffold-uses-common'))).map(
      (d) => d.toJS() as { kind: string; metadata: { labels?: Record<string, string> } },
    );
    expect(rendered.find((o) => o.kind === 'ConfigMap')?.metadata.labels?.['app.kubernetes.io/name']).toBe('scaffold-uses-common');
    expect(await filesUnder(path.join(work, 'user'))).toEqual([]);
  });

  it('--rbac=all-values grants what other values switch on', async () => {
    const project = path.join(work, 'project-all-values');
    await mkdir(project);
    await cli(project, unreachable(), 'init', '--domain', 'aiops.org');
    const out = await cli(project, unreachable(), ...args(), '--rbac=all-values');
    expect(out).toMatch(
      /^note: RBAC: with ingress\.enabled=true it also renders ingresses\.networking\.k8s\.io: granted \(--rbac=all-values\)/m,
    );
    expect(await grantedResources(project)).toContain('ingresses');
  });

  it('says how to get helm when it cannot fetch the pinned one', async () => {
    // A cache directory that cannot be created: tools.sh fails, and the CLI says what to do.
    const env = { ...userEnv(unreachable()), HELM_OPERATOR_CACHE_DIR: '/proc/no-such-cache' };
    const err = await exec(pkg.bin, args(), { cwd: dir, env }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(
      /error: helm is not on PATH and fetching the pinned helm failed \(.*\): install helm \(v3\.13\+ or v4\) on PATH, set HELM_BIN or pass --helm-binary; or fetch the pinned one: bash \S+\/hack\/tools\.sh helm/,
    );
  });
});
