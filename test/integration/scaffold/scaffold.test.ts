/**
 * `helm-operator init` + `create api` from every chart source, then the scaffolded project's own
 * Makefile against the real cluster: `make install` (the typed CRDs are accepted as structural),
 * `make run` and `make run-as-deployed` (the generated RBAC suffices) reconcile the samples to
 * Deployed=True. The runtime comes from `npm pack` of this checkout, installed like a user would.
 *
 * Project A: a local chart directory (this repo's nginx chart), the runtime vendored by init (the
 * registry does not serve it) and installed by the project's own `make`, operated by `make run` and
 * then as its ServiceAccount.
 * Project B: one kind per remote source (a .tgz, a chart repository over HTTP, an OCI registry),
 * a chart with a subchart dependency from that registry, a chart with cluster-scoped objects and a
 * values.schema.json using $ref, enum, required and default, and helm's starter chart (no
 * --helm-chart); operated as its ServiceAccount.
 */
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { pluralize } from '../../../src/scaffold/names.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { startChild, type Child } from '../../support/process.js';
import { childEnv, exec, REPO, runtimePackage, type RuntimePackage } from '../../support/scaffold.js';
import { serveDirectory, startRegistry, type Registry, type Served } from './sources.js';

const DOMAIN = 'scaffold.example.com';
const QUIET = ['--metrics-bind-address=0', '--health-probe-bind-address=0'];

let work = '';
let pkg: RuntimePackage;
let helmHome: Record<string, string> = {};

const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv =>
  childEnv({ KUBECONFIG: inject('kubeconfigPath'), HELM_BIN: inject('helmBin'), ...helmHome, ...extra });
const cli = (cwd: string, ...args: string[]): Promise<string> => exec(pkg.bin, args, { cwd, env: env() });
const make = (cwd: string, ...args: string[]): Promise<string> =>
  exec('make', ['--no-print-directory', ...args], { cwd, env: env(), timeoutMs: 300_000 });
const kubectl = (...args: string[]): Promise<string> => exec(inject('kubectlBin'), args, { env: env() });
const helm = (...args: string[]): Promise<string> => exec(inject('helmBin'), args, { env: env() });

interface Cr {
  metadata: { name: string; namespace: string };
  spec?: Record<string, unknown>;
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

async function condition(
  plural: string,
  ns: string,
  name: string,
  type: string,
): Promise<{ status: string; reason?: string; message?: string } | undefined> {
  const cr = JSON.parse(await kubectl('get', plural, name, '-n', ns, '-o', 'json')) as Cr;
  return cr.status?.conditions?.find((c) => c.type === type);
}

/** Waits for Deployed=True; fails at once with the reason when the release failed (e.g. Forbidden). */
async function deployed(plural: string, ns: string, name: string, op: Child): Promise<void> {
  await waitFor(
    `${plural}/${name} Deployed=True`,
    async () => {
      const failed = await condition(plural, ns, name, 'ReleaseFailed');
      if (failed?.status === 'True') throw new Error(`${plural}/${name}: ${failed.reason ?? ''} ${failed.message ?? ''}`);
      return (await condition(plural, ns, name, 'Deployed'))?.status === 'True';
    },
    { timeoutMs: 120_000, intervalMs: 1_000 },
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}\noperator output:\n${op.output().slice(-4000)}`);
  });
}

/**
 * The samples of a project (config/samples) and their fully qualified resource (`plural.group`):
 * other tests in the shared cluster serve kinds of the same name in other groups (Nginx).
 */
async function samples(dir: string): Promise<{ file: string; resource: string; name: string }[]> {
  const k = parse(await readFile(path.join(dir, 'config/samples/kustomization.yaml'), 'utf8')) as { resources: string[] };
  return Promise.all(
    k.resources.map(async (file) => {
      const cr = parse(await readFile(path.join(dir, 'config/samples', file), 'utf8')) as {
        apiVersion: string;
        kind: string;
        metadata: { name: string };
      };
      return {
        file: path.join(dir, 'config/samples', file),
        resource: `${pluralize(cr.kind.toLowerCase())}.${cr.apiVersion.split('/')[0] ?? ''}`,
        name: cr.metadata.name,
      };
    }),
  );
}

/** `make run-as-deployed` (or `make run`) until every sample is Deployed=True, then deletes them. */
async function reconcileSamples(dir: string, target: 'run' | 'run-as-deployed', ns: string): Promise<void> {
  const op = startChild('make', ['--no-print-directory', target, `ARGS=${QUIET.join(' ')}`], {
    cwd: dir,
    env: env({ METRICS_BIND_ADDRESS: '0', HEALTH_PROBE_BIND_ADDRESS: '0', WATCH_CONFIG: 'false' }),
  });
  try {
    for (const s of await samples(dir)) await kubectl('apply', '-n', ns, '-f', s.file);
    for (const s of await samples(dir)) await deployed(s.resource, ns, s.name, op);
    expect(op.output()).not.toMatch(/forbidden/i);
    for (const s of await samples(dir)) await kubectl('delete', '-n', ns, '-f', s.file, '--wait=true', '--timeout=90s');
  } finally {
    await op.stop();
  }
}

/**
 * Every CRD of config/crd is Established and has no NonStructuralSchema condition; the samples then
 * pass a server-side dry run.
 */
async function crdsAccepted(dir: string, ns: string): Promise<string[]> {
  const docs = parseAllDocuments(await kubectl('kustomize', path.join(dir, 'config/crd'))).map(
    (d) => d.toJS() as { metadata: { name: string } },
  );
  for (const { metadata } of docs) {
    await waitFor(`CRD ${metadata.name} established`, async () => {
      const crd = JSON.parse(await kubectl('get', 'crd', metadata.name, '-o', 'json')) as {
        status?: { conditions?: { type: string; status: string }[] };
      };
      const conds = crd.status?.conditions ?? [];
      expect(conds.find((c) => c.type === 'NonStructuralSchema')).toBeUndefined();
      return conds.some((c) => c.type === 'Established' && c.status === 'True');
    });
  }
  await kubectl('apply', '--dry-run=server', '-n', ns, '-k', path.join(dir, 'config/samples'));
  return docs.map((d) => d.metadata.name);
}

/** Each chart passes helm lint, config/ builds, no rule has a wildcard. */
async function toolChecks(dir: string): Promise<void> {
  const charts = (parse(await readFile(path.join(dir, 'watches.yaml'), 'utf8')) as { chart: string }[]).map((w) => w.chart);
  for (const chart of new Set(charts)) expect(await helm('lint', path.join(dir, chart))).toMatch(/0 chart\(s\) failed/);
  for (const k of ['config/default', 'config/crd', 'config/rbac', 'config/samples', 'config/manifests'])
    await kubectl('kustomize', path.join(dir, k));
  const rbac = parseAllDocuments(await kubectl('kustomize', path.join(dir, 'config/rbac'))).map(
    (d) => d.toJS() as { rules?: Record<string, string[]>[] },
  );
  const wildcards = rbac.flatMap((o) =>
    (o.rules ?? []).flatMap((r) =>
      Object.values(r)
        .flat()
        .filter((v) => v.includes('*')),
    ),
  );
  expect(wildcards).toEqual([]);
}

beforeAll(async () => {
  pkg = await runtimePackage();
  work = await mkdtemp(path.join(os.tmpdir(), 'scaffold-it-'));
  const home = path.join(work, 'helm-home');
  helmHome = { HELM_CONFIG_HOME: `${home}/config`, HELM_CACHE_HOME: `${home}/cache`, HELM_DATA_HOME: `${home}/data` };
}, 300_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('the packed runtime', () => {
  /** Every file below `dir`, by its path relative to `dir`, with its text. */
  const tree = async (dir: string): Promise<Record<string, string>> => {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    const files = entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
    return Object.fromEntries(await Promise.all(files.sort().map(async (f) => [f, await readFile(path.join(dir, f), 'utf8')] as const)));
  };

  it("ships the scaffold's templates as they are in src/ (the build copies them into dist/)", async () => {
    const shipped = await tree(path.join(pkg.nodeModules, 'helm-operator-ts/dist/scaffold/templates/files'));
    expect(Object.keys(shipped)).toContain('Makefile.tmpl');
    expect(shipped).toEqual(await tree(path.join(REPO, 'src/scaffold/templates/files')));
  });
});

describe('a project from a local chart directory, with the runtime its own make installs', () => {
  const kc = testKubeConfig();
  let dir = '';
  let ns: { name: string; remove: () => Promise<void> } | undefined;

  beforeAll(async () => {
    dir = path.join(work, 'scaffold-a');
    await mkdir(dir);
    ns = await createNamespace(kc, 'scaffold-a');
  });

  afterAll(async () => {
    await make(dir, 'undeploy', 'ignore-not-found=true').catch(() => undefined);
    await ns?.remove();
  }, 300_000);

  it('init --helm-chart writes the project and vendors the runtime the registry does not serve; make installs it once (npm ci)', async () => {
    const out = await cli(
      dir,
      'init',
      '--domain',
      DOMAIN,
      '--group',
      'weba',
      '--kind',
      'Nginx',
      '--helm-chart',
      path.join(REPO, 'helm-charts/nginx'),
    );
    expect(out).toContain('created  watches.yaml');
    const project = parse(await readFile(path.join(dir, 'PROJECT'), 'utf8')) as { projectName: string; resources: { kind: string }[] };
    expect(project).toMatchObject({
      projectName: 'scaffold-a',
      resources: [{ kind: 'Nginx', group: 'weba', version: 'v1alpha1', domain: DOMAIN }],
    });
    // The registry does not serve this version: init vendored the runtime and installed from it.
    expect(out).toContain(`runtime: file:vendor/helm-operator-ts-${pkg.version}.tgz`);
    const lock = JSON.parse(await readFile(path.join(dir, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { resolved?: string; version?: string }>;
    };
    expect(lock.packages['node_modules/helm-operator-ts']).toMatchObject({
      resolved: `file:vendor/helm-operator-ts-${pkg.version}.tgz`,
      version: pkg.version,
    });
    // make installs once (npm ci from the lockfile), and not again until the lockfile changes.
    expect(await make(dir, 'deps')).toContain('npm ci');
    expect(await make(dir, 'deps')).not.toContain('npm ci');
    expect(await exec(path.join(dir, 'node_modules/.bin/helm-operator'), ['version'], { cwd: dir, env: env() })).toContain(
      `helm-operator ${pkg.version}`,
    );
    await toolChecks(dir);
    // The Dockerfile passes the linter this repository's own `make docker-lint` uses.
    const version = /^DOCKERFILE_UTILS_VERSION \?= (\S+)$/m.exec(await readFile(path.join(REPO, 'Makefile'), 'utf8'))?.[1] ?? '';
    expect(await exec('npx', ['--yes', `dockerfile-utils@${version}`, 'lint', 'Dockerfile'], { cwd: dir, env: env() })).not.toMatch(
      /error|warning/i,
    );
    expect(await make(dir, 'help')).toMatch(/run-as-deployed/);
    expect(await make(dir, 'lint')).toContain('config/default builds');
  }, 300_000);

  it('make install accepts the typed CRD, and make run reconciles the sample to Deployed=True', async () => {
    await make(dir, 'install');
    const [crd] = await crdsAccepted(dir, ns!.name);
    const schema = JSON.parse(
      await kubectl('get', 'crd', crd!, '-o', 'jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec}'),
    ) as { properties?: object };
    expect(Object.keys(schema.properties ?? {})).toContain('replicaCount');
    await reconcileSamples(dir, 'run', ns!.name);
  }, 300_000);

  it('as the ServiceAccount make deploy created (make run-as-deployed), the generated RBAC suffices', async () => {
    await make(dir, 'deploy', 'IMG=example.com/scaffold-a:v0.1.0');
    await reconcileSamples(dir, 'run-as-deployed', ns!.name);
  }, 300_000);
});

describe('a project with a kind per remote source, a subchart and a typed schema', () => {
  const kc = testKubeConfig();
  let dir = '';
  let ns: { name: string; remove: () => Promise<void> } | undefined;
  let repo: Served | undefined;
  let registry: Registry | undefined;
  let tgz = '';

  beforeAll(async () => {
    dir = path.join(work, 'scaffold-b');
    await mkdir(dir);
    ns = await createNamespace(kc, 'scaffold-b');
    const charts = path.join(work, 'charts');
    await mkdir(charts);
    tgz = path.join(charts, 'scaffold-web-0.1.0.tgz');
    await helm('package', path.join(REPO, 'test/fixtures/charts/scaffold-web'), '-d', charts);
    await helm('repo', 'index', charts);
    repo = await serveDirectory(charts);
    await exec('bash', [path.join(REPO, 'hack/tools.sh'), 'registry']);
    const tools = await exec('bash', [path.join(REPO, 'hack/tools.sh'), 'env']);
    const registryBin = /^export REGISTRY_BIN="([^"]+)"$/m.exec(tools)?.[1] ?? '';
    registry = await startRegistry(registryBin, work);
    await helm('push', tgz, `oci://${registry.host}/charts`, '--plain-http');
  }, 300_000);

  afterAll(async () => {
    await make(dir, 'undeploy', 'ignore-not-found=true').catch(() => undefined);
    await ns?.remove();
    await repo?.stop();
    await registry?.stop();
  }, 300_000);

  it('init, then create api from a .tgz, a chart repository, an OCI registry, a chart with a subchart, and a typed chart', async () => {
    await cli(dir, 'init', '--domain', DOMAIN);
    await cli(dir, 'create', 'api', '--group', 'tgz', '--version', 'v1', '--kind', 'WebTgz', '--helm-chart', tgz);
    await cli(
      dir,
      'create',
      'api',
      '--group',
      'repo',
      '--version',
      'v1',
      '--kind',
      'WebRepo',
      '--helm-chart',
      'scaffold-web',
      '--helm-chart-repo',
      repo!.url,
    );
    await cli(
      dir,
      'create',
      'api',
      '--group',
      'oci',
      '--version',
      'v1',
      '--kind',
      'WebOci',
      '--helm-chart',
      `oci://${registry!.host}/charts/scaffold-web`,
      '--helm-chart-version',
      '0.1.0',
      '--plain-http',
    );
    const parent = path.join(work, 'scaffold-parent');
    await cp(path.join(REPO, 'test/fixtures/charts/scaffold-parent'), parent, { recursive: true });
    const chartYaml = path.join(parent, 'Chart.yaml');
    await writeFile(chartYaml, (await readFile(chartYaml, 'utf8')).replaceAll('REGISTRY', registry!.host));
    await cli(dir, 'create', 'api', '--group', 'deps', '--version', 'v1', '--kind', 'Parent', '--helm-chart', parent, '--plain-http');
    await cli(
      dir,
      'create',
      'api',
      '--group',
      'typed',
      '--version',
      'v1',
      '--kind',
      'Reader',
      '--short-names',
      'rdr',
      '--helm-chart',
      path.join(REPO, 'test/fixtures/charts/scaffold-typed'),
    );
    // No --helm-chart: helm's starter chart, its spec schema inferred from values.yaml.
    await cli(dir, 'create', 'api', '--group', 'starter', '--version', 'v1alpha1', '--kind', 'Starter');

    const watchesText = await readFile(path.join(dir, 'watches.yaml'), 'utf8');
    const watches = parse(watchesText) as { kind: string; chart: string; allowKinds?: string[] }[];
    // Each watch allows the kinds its chart renders with its defaults (a subchart's included); the
    // starter's Ingress, only rendered with ingress.enabled=true, is named in a comment.
    expect(Object.fromEntries(watches.map((w) => [w.kind, w.allowKinds]))).toMatchObject({
      WebTgz: ['ConfigMap', 'ServiceAccount'],
      Parent: ['ConfigMap', 'ServiceAccount'],
      Reader: ['ClusterRole.rbac.authorization.k8s.io', 'ConfigMap'],
      Starter: expect.arrayContaining(['Deployment.apps', 'Pod', 'Service', 'ServiceAccount']) as unknown,
    });
    expect(watches.find((w) => w.kind === 'Starter')?.allowKinds).not.toContain('Ingress.networking.k8s.io');
    expect(watchesText).toMatch(/# with ingress\.enabled=true the chart also renders:\n {2}# - Ingress\.networking\.k8s\.io/);
    expect(watches.map((w) => `${w.kind}=${w.chart}`)).toEqual([
      'WebTgz=helm-charts/scaffold-web',
      'WebRepo=helm-charts/scaffold-web',
      'WebOci=helm-charts/scaffold-web',
      'Parent=helm-charts/scaffold-parent',
      'Reader=helm-charts/scaffold-typed',
      'Starter=helm-charts/starter',
    ]);
    await readFile(path.join(dir, 'helm-charts/scaffold-parent/charts/scaffold-web-0.1.0.tgz'));
    const role = await readFile(path.join(dir, 'config/rbac/role.yaml'), 'utf8');
    expect(role).toContain('"clusterroles"');
    await toolChecks(dir);
  }, 300_000);

  it('re-running create api changes nothing; an edited file is kept; --force regenerates it', async () => {
    const args = [
      'create',
      'api',
      '--group',
      'typed',
      '--version',
      'v1',
      '--kind',
      'Reader',
      '--short-names',
      'rdr',
      '--helm-chart',
      path.join(REPO, 'test/fixtures/charts/scaffold-typed'),
    ];
    const again = await cli(dir, ...args);
    expect(again).not.toMatch(/^(created|updated|skipped) /m);
    const sample = path.join(dir, 'config/samples/typed.scaffold.example.com_v1_reader.yaml');
    const generated = await readFile(sample, 'utf8');
    await writeFile(sample, `${generated}# my note\n`);
    expect(await cli(dir, ...args)).toMatch(/^skipped\s+config\/samples\/typed\.scaffold\.example\.com_v1_reader\.yaml/m);
    expect(await readFile(sample, 'utf8')).toContain('# my note');
    expect(await cli(dir, ...args, '--force')).toMatch(/^updated\s+config\/samples\/typed/m);
    expect(await readFile(sample, 'utf8')).toBe(generated);
    await expect(cli(dir, 'create', 'api', '--group', 'typed', '--version', 'v1', '--kind', 'Reader', '--helm-chart', tgz)).rejects.toThrow(
      /Reader \(typed\.scaffold\.example\.com\/v1\) already exists/,
    );
  }, 300_000);

  it("make bundle packages every kind into a bundle that our validator and OLM's accept", async () => {
    const out = await make(dir, 'bundle', 'IMG=example.com/scaffold-b:v0.1.0', 'VERSION=0.1.0');
    expect(out).toMatch(/bundle\/manifests\/scaffold-b\.clusterserviceversion\.yaml/);
    const csv = parse(await readFile(path.join(dir, 'bundle/manifests/scaffold-b.clusterserviceversion.yaml'), 'utf8')) as {
      metadata: { name: string };
      spec: { customresourcedefinitions: { owned: { kind: string }[] } };
    };
    expect(csv.metadata.name).toBe('scaffold-b.v0.1.0');
    expect(csv.spec.customresourcedefinitions.owned.map((o) => o.kind).sort()).toEqual([
      'Parent',
      'Reader',
      'Starter',
      'WebOci',
      'WebRepo',
      'WebTgz',
    ]);
    // config/scorecard (init wrote it; config/manifests lists ../scorecard) is what tests/ holds.
    const scorecard = parse(await readFile(path.join(dir, 'bundle/tests/scorecard/config.yaml'), 'utf8')) as {
      stages: { tests: unknown[] }[];
    };
    expect(scorecard.stages[0]?.tests).toHaveLength(6);
    // OLM's own validators (hack/olm, built by this repository's tools.sh): every always-on check and suite=operatorframework.
    await exec('bash', [path.join(REPO, 'hack/tools.sh'), 'olm-validate'], { timeoutMs: 1_800_000 });
    const validator = path.join((await exec('bash', [path.join(REPO, 'hack/tools.sh'), 'path', 'olm-validate'])).trim(), 'olm-validate');
    const report = JSON.parse(await exec(validator, ['--select-optional', 'suite=operatorframework', path.join(dir, 'bundle')])) as {
      passed: boolean;
      outputs: { type: string; message: string }[];
    };
    expect(report.outputs.filter((o) => o.type === 'error')).toEqual([]);
    expect(report.passed).toBe(true);
  }, 1_800_000);

  it('make install: the typed CRD rejects a spec violating the schema, naming the field, and stores defaults', async () => {
    await make(dir, 'install');
    expect(await crdsAccepted(dir, ns!.name)).toHaveLength(6);
    const cr = (spec: string): string =>
      `apiVersion: typed.${DOMAIN}/v1\nkind: Reader\nmetadata:\n  name: schema-check\n  namespace: ${ns!.name}\nspec:\n${spec}`;
    const apply = async (yaml: string): Promise<string> => {
      const file = path.join(work, 'cr.yaml');
      await writeFile(file, yaml);
      return kubectl('apply', '-f', file);
    };
    await expect(apply(cr('  mode: turbo\n'))).rejects.toThrow(/spec\.mode: Unsupported value: "turbo"/);
    await expect(apply(cr('  users: [{team: x}]\n'))).rejects.toThrow(/spec\.users\[0\]\.name: Required value/);
    await expect(apply(cr('  replicas: 0\n'))).rejects.toThrow(
      /spec\.replicas: Invalid value: 0: spec\.replicas in body should be greater than or equal to 1/,
    );
    await apply(cr('  mode: fast\n  users: [{name: me}]\n'));
    const stored = JSON.parse(await kubectl('get', `readers.typed.${DOMAIN}`, 'schema-check', '-n', ns!.name, '-o', 'json')) as Cr;
    expect(stored.spec).toMatchObject({ mode: 'fast', replicas: 2, users: [{ name: 'me', team: 'platform' }] });
    expect(await kubectl('get', 'rdr', '-n', ns!.name)).toMatch(/READY\s+REASON\s+DEPLOYED\s+REVISION\s+CHART\s+AGE/);
    await kubectl('delete', `readers.typed.${DOMAIN}`, 'schema-check', '-n', ns!.name);
  });

  it('as the deployed ServiceAccount, every sample reconciles to Deployed=True with the generated RBAC', async () => {
    await make(dir, 'deploy', 'IMG=example.com/scaffold-b:v0.1.0');
    await reconcileSamples(dir, 'run-as-deployed', ns!.name);
  }, 300_000);
});

describe('bad input: clear errors, nothing written', () => {
  let dir = '';
  let registry: Registry | undefined;

  beforeAll(async () => {
    dir = path.join(work, 'scaffold-bad');
    await mkdir(dir);
    await cli(dir, 'init', '--domain', DOMAIN, '--project-name', 'bad');
    const tools = await exec('bash', [path.join(REPO, 'hack/tools.sh'), 'env']);
    registry = await startRegistry(/^export REGISTRY_BIN="([^"]+)"$/m.exec(tools)?.[1] ?? '', path.join(work, 'bad-registry'));
  });

  afterAll(async () => {
    await registry?.stop();
  });

  const fails = async (args: string[], message: RegExp): Promise<void> => {
    const before = await exec('find', ['.', '-type', 'f', '-newer', 'PROJECT'], { cwd: dir });
    await expect(cli(dir, 'create', 'api', ...args)).rejects.toThrow(message);
    expect(await exec('find', ['.', '-type', 'f', '-newer', 'PROJECT'], { cwd: dir })).toBe(before);
  };

  it('rejects invalid kinds, groups and versions before fetching anything', async () => {
    await fails(['--group', 'g', '--version', 'v1', '--kind', 'lower'], /--kind "lower" must be CamelCase/);
    await fails(['--group', 'G_x', '--version', 'v1', '--kind', 'Web'], /--group "G_x"/);
    await fails(['--group', 'g', '--version', 'one', '--kind', 'Web'], /--version "one" must look like v1/);
  });

  it('rejects a chart version or repository without a chart', async () => {
    await fails(['--kind', 'Web', '--helm-chart-version', '1.0.0'], /--helm-chart-repo and --helm-chart-version need --helm-chart/);
    await fails(['--kind', 'Web', '--helm-chart-repo', 'http://127.0.0.1:1'], /need --helm-chart/);
  });

  it('names the chart that cannot be found, wherever it was looked for', async () => {
    await fails(['--kind', 'Web', '--helm-chart', 'missing-1.0.0.tgz'], /chart archive missing-1\.0\.0\.tgz not found/);
    await fails(['--kind', 'Web', '--helm-chart', 'nosuchrepo/web'], /cannot fetch chart nosuchrepo\/web: .*nosuchrepo/);
    await fails(
      ['--kind', 'Web', '--helm-chart', `oci://${registry!.host}/charts/absent`, '--plain-http'],
      /cannot fetch chart oci:\/\/.*absent/,
    );
    await fails(['--kind', 'Web', '--helm-chart', 'web'], /a bare name needs --helm-chart-repo/);
  });

  it('refuses init in a non-empty directory without --force, and create api outside a project', async () => {
    await expect(cli(dir, 'init', '--domain', DOMAIN)).rejects.toThrow(/is not empty \(.*PROJECT.*\): .*--force/);
    const elsewhere = path.join(work, 'not-a-project');
    await mkdir(elsewhere);
    await expect(cli(elsewhere, 'create', 'api', '--kind', 'Web')).rejects.toThrow(/PROJECT not found: run `helm-operator init/);
  });

  it('--dry-run prints the plan and writes nothing', async () => {
    const before = await exec('find', ['.', '-type', 'f'], { cwd: dir });
    const out = await cli(dir, 'create', 'api', '--group', 'dry', '--version', 'v1', '--kind', 'Starter', '--dry-run');
    expect(out).toMatch(/^create config\/crd\/bases\/dry\.scaffold\.example\.com_starters\.yaml/m);
    expect(out).toMatch(/^would be created\s+helm-charts\/starter\/Chart\.yaml/m);
    expect(await exec('find', ['.', '-type', 'f'], { cwd: dir })).toBe(before);
  });
});
