/**
 * A chart update in a scaffolded project, through the real CLI (this checkout's sources) and real
 * helm: `create api --force` with the kind's chart at v2 (compatible) replaces the chart (its
 * removed template goes), regenerates the CRD, sample, RBAC and the watch's allowKinds (keeping the
 * author's own watch keys), and the API server takes the new CRD over the old one with the v1 CR in
 * place; v3 (breaking) is refused naming each field and writes nothing; --allow-breaking writes it.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { fixtureChart } from '../../support/operator.js';
import { childEnv, exec, initFilesOnly, REPO } from '../../support/scaffold.js';

const CRD_FILE = 'config/crd/bases/apps.example.com_shops.yaml';
const CRD = 'shops.apps.example.com';
/** tsx's loader, resolved from this checkout: the project directory has no node_modules. */
const TSX = import.meta.resolve('tsx');

const env = (): NodeJS.ProcessEnv => childEnv({ KUBECONFIG: inject('kubeconfigPath'), HELM_BIN: inject('helmBin') });
const kubectl = (...args: string[]): Promise<string> => exec(inject('kubectlBin'), args, { env: env() });

/** Every file of the project and its content. */
async function snapshot(root: string, rel = ''): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const e of await readdir(path.join(root, rel), { withFileTypes: true })) {
    const p = path.join(rel, e.name);
    if (e.isDirectory()) for (const [k, v] of await snapshot(root, p)) out.set(k, v);
    else out.set(p, await readFile(path.join(root, p), 'utf8'));
  }
  return out;
}

interface Crd {
  spec: {
    versions: {
      name: string;
      schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, { type?: string; enum?: string[] }> } } } };
    }[];
  };
}

describe('create api --force with a new chart version: a chart update', () => {
  let root = '';
  const cli = (...args: string[]): Promise<string> =>
    exec(process.execPath, ['--import', TSX, path.join(REPO, 'src/cli/main.ts'), ...args], { cwd: root, env: env() });
  const createApi = (version: string, ...extra: string[]): Promise<string> =>
    cli(
      'create',
      'api',
      '--group',
      'apps',
      '--version',
      'v1alpha1',
      '--kind',
      'Shop',
      '--helm-chart',
      fixtureChart(`chart-update/${version}`),
      ...extra,
    );
  const read = (rel: string): Promise<string> => readFile(path.join(root, rel), 'utf8');
  const specProps = async (): Promise<Crd['spec']['versions'][number]['schema']['openAPIV3Schema']['properties']['spec']['properties']> => {
    const crd = parseAllDocuments(await read(CRD_FILE))
      .map((d) => d.toJS() as Crd | null)
      .find((d) => d !== null);
    return crd?.spec.versions[0]?.schema.openAPIV3Schema.properties.spec.properties ?? {};
  };

  beforeAll(async () => {
    root = await initFilesOnly('chartupdate');
    await createApi('v1');
    // The author's own key on the watch, which a chart update must keep.
    const watches = await read('watches.yaml');
    await writeFile(
      path.join(root, 'watches.yaml'),
      watches.replace('  chart: helm-charts/chart-update\n', '  chart: helm-charts/chart-update\n  reconcilePeriod: 2m\n'),
    );
    await kubectl('apply', '--server-side', '-f', path.join(root, CRD_FILE));
    await kubectl('wait', '--for=condition=Established', `crd/${CRD}`, '--timeout=60s');
    await kubectl('apply', '-n', 'default', '-f', path.join(root, 'config/samples/apps.example.com_v1alpha1_shop.yaml'));
  });
  afterAll(async () => {
    await kubectl('delete', 'crd', CRD, '--ignore-not-found', '--wait=true').catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  });

  it('v2 (compatible): the chart, CRD, sample, RBAC and watch are regenerated; the old template goes; the API server serves the old CR under the new CRD', async () => {
    const out = await createApi('v2', '--force');
    expect(out).toMatch(/^updated\s+helm-charts\/chart-update\/Chart\.yaml$/m);
    expect(out).toContain('chart update: removed helm-charts/chart-update/templates/note.yaml (not in the new chart)');
    expect(parse(await read('helm-charts/chart-update/Chart.yaml'))).toMatchObject({ version: '0.2.0' });
    await expect(read('helm-charts/chart-update/templates/note.yaml')).rejects.toThrow(/ENOENT/);
    await read('helm-charts/chart-update/templates/service.yaml');

    const props = await specProps();
    expect(props.mode?.enum).toEqual(['fast', 'safe', 'turbo']);
    expect(props.timeout?.type).toBe('integer');
    expect(await read('config/samples/apps.example.com_v1alpha1_shop.yaml')).toMatch(/^ {2}timeout: 30$/m);
    expect(await read('config/rbac/role.yaml')).toContain('resources: ["configmaps", "services"]');

    const watches = parse(await read('watches.yaml')) as { kind: string; chart: string; allowKinds?: string[]; reconcilePeriod?: string }[];
    expect(watches).toEqual([
      {
        group: 'apps.example.com',
        version: 'v1alpha1',
        kind: 'Shop',
        chart: 'helm-charts/chart-update',
        allowKinds: ['ConfigMap', 'Service'],
        reconcilePeriod: '2m',
      },
    ]);

    await kubectl('apply', '--server-side', '-f', path.join(root, CRD_FILE));
    expect(await kubectl('get', `${CRD}/shop-sample`, '-n', 'default', '-o', 'jsonpath={.spec.mode}')).toBe('safe');
    await kubectl(
      'apply',
      '--dry-run=server',
      '-n',
      'default',
      '-f',
      path.join(root, 'config/samples/apps.example.com_v1alpha1_shop.yaml'),
    );
  });

  it('v3 (breaking): refused, naming each field and why; nothing is written', async () => {
    const before = await snapshot(root);
    const refused = await createApi('v3', '--force').then(
      () => '',
      (err: unknown) => String(err),
    );
    expect(refused).toContain(`chart-update 0.3.0 changes the CRD schema in a way existing objects may not survive (${CRD_FILE}`);
    for (const line of [
      'v1alpha1 .spec.labels: removed (NoExistingFieldRemoved)',
      'v1alpha1 .spec.mode: enum values ["fast"] removed (Enum)',
      'v1alpha1 .spec.port: type changed from integer to string (Type)',
      'v1alpha1 .spec.timeout: minimum 5 added where there was no bound (Minimum)',
      'v1alpha1 .spec.users[*].name: now required, without a default (Required)',
    ]) {
      expect(refused).toContain(line);
    }
    expect(refused).toContain('--allow-breaking');
    expect(await snapshot(root)).toEqual(before);
  });

  it('v3 with --allow-breaking: written, each breaking change listed', async () => {
    const out = await createApi('v3', '--force', '--allow-breaking');
    expect(out).toContain(
      'note: CRD upgrade: breaking change allowed (--allow-breaking): v1alpha1 .spec.port: type changed from integer to string (Type)',
    );
    expect((await specProps()).port?.type).toBe('string');
    expect((await specProps()).labels).toBeUndefined();
  });
});
