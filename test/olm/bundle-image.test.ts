/**
 * The publishing path of README "Publishing to OperatorHub" with real images: `make bundle-build
 * bundle-push` with podman into a real OCI registry (distribution, on 127.0.0.1), then `make catalog`:
 * `opm render` pulls the bundle image back from that registry into a file-based catalog that `opm
 * validate` accepts, with the same content as the bundle directory. Needs podman (hack/image.sh
 * installs it from apt as root). The catalog image itself (catalog-build) is not built: its base,
 * quay.io/operator-framework/opm, is served by no registry reachable here.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { childEnv, exec, make, ROOT } from '../support/deploy.js';
import { olmTools } from '../../src/olm/tools.js';
import { startRegistry, type Registry } from '../integration/scaffold/sources.js';

const VERSION = '0.0.1';
const PACKAGE = 'helm-operator';

interface FbcBlob {
  schema: string;
  name?: string;
  image?: string;
  properties?: { type: string; value: unknown }[];
}

const blobs = (text: string): FbcBlob[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as FbcBlob | null)
    .filter((b): b is FbcBlob => b !== null);

describe('bundle image → registry → file-based catalog (podman, distribution, opm)', () => {
  let registry: Registry | undefined;
  let work = '';
  let env: NodeJS.ProcessEnv = {};
  let bundleImg = '';
  let opm = '';

  beforeAll(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'olm-image-'));
    await exec('bash', ['hack/image.sh', 'install'], 600_000);
    await exec('bash', [path.join(ROOT, 'hack/tools.sh'), 'registry'], 1_800_000);
    opm = (await olmTools()).opm;
    const tools = await exec('bash', ['hack/tools.sh', 'env'], 60_000);
    registry = await startRegistry(/^export REGISTRY_BIN="([^"]+)"$/m.exec(tools)?.[1] ?? '', work);
    // The local registry speaks plain HTTP: podman learns it from a registries.conf of this test only.
    const registries = path.join(work, 'registries.conf');
    await writeFile(registries, `[[registry]]\nlocation = "${registry.host}"\ninsecure = true\n`);
    env = childEnv({ CONTAINERS_REGISTRIES_CONF: registries });
    bundleImg = `${registry.host}/${PACKAGE}-bundle:v${VERSION}`;
    await make('bundle', 'IMG=example.com/nginx-operator:v0.0.1', `VERSION=${VERSION}`);
  }, 1_800_000);

  afterAll(async () => {
    // Each run tags the image with its registry's free port: leave none behind in local storage.
    if (bundleImg !== '') await exec('podman', ['rmi', '--ignore', bundleImg], 60_000, env).catch(() => undefined);
    await registry?.stop();
    await rm(work, { recursive: true, force: true });
  });

  it('make bundle-build bundle-push puts the bundle image into the registry', async () => {
    const vars = ['CONTAINER_TOOL=podman', `BUNDLE_IMG=${bundleImg}`];
    await exec('make', ['--no-print-directory', 'bundle-build', ...vars], 300_000, env);
    await exec('make', ['--no-print-directory', 'bundle-push', ...vars], 300_000, env);
    const tags = (await (await fetch(`${registry?.url ?? ''}/v2/${PACKAGE}-bundle/tags/list`)).json()) as { tags: string[] };
    expect(tags.tags).toEqual([`v${VERSION}`]);
  }, 600_000);

  it('make catalog renders the pushed image into a file-based catalog opm validate accepts, with the bundle directory’s content', async () => {
    // Twice: a rerun replaces what the last one wrote (opm refuses to overwrite catalog.Dockerfile itself).
    for (let i = 0; i < 2; i++)
      await exec('make', ['--no-print-directory', 'catalog', `BUNDLE_IMG=${bundleImg}`, 'OPM_RENDER_FLAGS=--use-http'], 300_000, env);
    const catalog = blobs(await readFile(path.join(ROOT, 'catalog', PACKAGE, 'catalog.yaml'), 'utf8'));
    expect(catalog.map((b) => `${b.schema}/${b.name ?? ''}`)).toEqual([
      `olm.package/${PACKAGE}`,
      'olm.channel/alpha',
      `olm.bundle/${PACKAGE}.v${VERSION}`,
    ]);
    const fromImage = catalog[2];
    expect(fromImage?.image).toBe(bundleImg);

    // What OLM installs from (olm.bundle.object: every manifest) is what the bundle directory holds.
    const { stdout } = await promisify(execFile)(opm, ['render', path.join(ROOT, 'bundle'), '--output', 'yaml'], {
      maxBuffer: 32 * 1024 * 1024,
    });
    const fromDir = blobs(stdout).find((b) => b.schema === 'olm.bundle');
    const objects = (b: FbcBlob | undefined): unknown[] =>
      (b?.properties ?? []).filter((p) => p.type === 'olm.bundle.object').map((p) => p.value);
    // The CRD, the CSV, the metrics Service and reader role, and the kind's editor and viewer roles.
    expect(objects(fromImage)).toHaveLength(6);
    expect(objects(fromImage)).toEqual(objects(fromDir));
    expect(await readFile(path.join(ROOT, 'catalog.Dockerfile'), 'utf8')).toMatch(/^ADD catalog \/configs/m);
  }, 300_000);
});
