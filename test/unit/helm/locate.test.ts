import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOnPath, HelmNotFoundError, locateHelm } from '../../../src/helm/locate.js';

/** Small fakes: an executable `helm` in a PATH directory, and a tools.sh that "fetches" one into a cache. */
describe('which helm the scaffolding commands run', () => {
  let dir = '';
  let onPath = '';
  let pinnedTools = '';
  let failingTools = '';
  /** bash and coreutils (tools.sh needs them), no helm. */
  const emptyPath = '/usr/bin:/bin';

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'locate-helm-'));
    onPath = path.join(dir, 'bin');
    await mkdir(onPath);
    await writeFile(path.join(onPath, 'helm'), '#!/bin/sh\n');
    await chmod(path.join(onPath, 'helm'), 0o755);
    await writeFile(path.join(dir, 'not-executable'), '');
    const cache = path.join(dir, 'cache');
    pinnedTools = path.join(dir, 'tools.sh');
    await writeFile(
      pinnedTools,
      `case "$1" in\n  helm) mkdir -p ${cache}/helm && printf '#!/bin/sh\\n' > ${cache}/helm/helm && chmod +x ${cache}/helm/helm; echo "[tools] helm: done" >&2 ;;\n  path) echo ${cache} ;;\nesac\n`,
    );
    failingTools = path.join(dir, 'failing-tools.sh');
    await writeFile(
      failingTools,
      'echo "[tools] helm: building" >&2; echo "error: unzip is required (apt-get install -y unzip)" >&2; exit 1\n',
    );
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prefers --helm-binary, then HELM_BIN, then helm on PATH', async () => {
    expect(await findOnPath('helm', emptyPath)).toBeUndefined();
    const helm = path.join(onPath, 'helm');
    expect(await locateHelm({ flag: helm, env: { HELM_BIN: '/x', PATH: emptyPath }, toolsScript: failingTools })).toEqual({
      binary: helm,
      source: 'flag',
    });
    expect(await locateHelm({ env: { HELM_BIN: helm, PATH: emptyPath }, toolsScript: failingTools })).toEqual({
      binary: helm,
      source: 'HELM_BIN',
    });
    expect(await locateHelm({ env: { PATH: `${emptyPath}:${onPath}` }, toolsScript: failingTools })).toEqual({
      binary: helm,
      source: 'PATH',
    });
    expect(await locateHelm({ flag: 'helm', env: { PATH: onPath }, toolsScript: failingTools })).toEqual({ binary: helm, source: 'flag' });
  });

  it('falls back to the pinned helm that tools.sh puts into its cache', async () => {
    const located = await locateHelm({ env: { PATH: emptyPath }, toolsScript: pinnedTools });
    expect(located).toEqual({ binary: path.join(dir, 'cache', 'helm', 'helm'), source: 'pinned' });
  });

  it('says in one line how to get helm when none is found and the fetch fails', async () => {
    const err = await locateHelm({ env: { PATH: emptyPath }, toolsScript: failingTools }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HelmNotFoundError);
    const message = (err as Error).message;
    expect(message).toBe(
      `helm is not on PATH and fetching the pinned helm failed (error: unzip is required (apt-get install -y unzip)): install helm (v3.13+ or v4) on PATH, set HELM_BIN or pass --helm-binary; or fetch the pinned one: bash ${failingTools} helm`,
    );
    expect(message).not.toContain('\n');
  });

  it('refuses a HELM_BIN or --helm-binary that is not an executable file, naming it', async () => {
    await expect(
      locateHelm({ env: { HELM_BIN: path.join(dir, 'not-executable'), PATH: onPath }, toolsScript: pinnedTools }),
    ).rejects.toThrow(new RegExp(`^HELM_BIN=${path.join(dir, 'not-executable')} is not an executable file: install helm`));
    await expect(locateHelm({ flag: '/no/such/helm', env: {}, toolsScript: pinnedTools })).rejects.toThrow(
      /^--helm-binary \/no\/such\/helm is not an executable file/,
    );
  });

  it('finds only executable files on PATH', async () => {
    expect(await findOnPath('not-executable', dir)).toBeUndefined();
    expect(await findOnPath('helm', `::${onPath}`)).toBe(path.join(onPath, 'helm'));
  });
});
