/**
 * The `helm-operator` executable on a system whose `node` is older than the runtime needs
 * (`engines.node` in package.json): `npm install -g` only warns about the engine, and the runtime's
 * modules then fail to load on APIs the old Node lacks (module.registerHooks). Instead of that
 * stack trace, the command re-runs itself on the pinned Node that the package's own hack/tools.sh
 * fetches into the tool cache (as every scaffolded `make` target does).
 *
 * This module is loaded before anything else and must itself load on old Nodes: node builtins and
 * semver only.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';

/** Set in the relaunched process: a second relaunch would loop. */
export const RELAUNCHED_ENV = 'HELM_OPERATOR_NODE_RELAUNCHED';

export type LaunchDecision =
  { readonly action: 'run' } | { readonly action: 'relaunch' } | { readonly action: 'fail'; readonly message: string };

/** Whether this Node can run the runtime, given `engines.node` (undefined: no constraint). */
export function decideLaunch(nodeVersion: string, engines: string | undefined, relaunched: boolean): LaunchDecision {
  if (engines === undefined || semver.satisfies(nodeVersion, engines)) return { action: 'run' };
  if (relaunched) {
    return {
      action: 'fail',
      message: `helm-operator needs Node ${engines}; the Node that hack/tools.sh node-dir gave is ${nodeVersion}. Install Node ${engines} and put it first on PATH.`,
    };
  }
  return { action: 'relaunch' };
}

/** The exit status a shell reports for a child that ended with `code` or by `signal`. */
export function exitStatus(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return signal === null ? 1 : 128 + constants.signals[signal];
}

const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

function enginesNode(): string | undefined {
  try {
    const pkg = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { engines?: { node?: unknown } };
    return typeof pkg.engines?.node === 'string' ? pkg.engines.node : undefined;
  } catch {
    return undefined;
  }
}

/** The pinned Node's directory, fetched into the tool cache when missing (progress on stderr). */
function pinnedNodeDir(): string {
  const out = execFileSync('bash', [path.join(PACKAGE_ROOT, 'hack', 'tools.sh'), 'node-dir'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  return out.trim().split('\n').pop() ?? '';
}

/**
 * Resolves true when this process was relaunched on the pinned Node (it then exits with the child's
 * status), false when this Node runs the command itself.
 */
export async function relaunchOnPinnedNode(): Promise<boolean> {
  const engines = enginesNode();
  const decision = decideLaunch(process.versions.node, engines, process.env[RELAUNCHED_ENV] === '1');
  if (decision.action === 'run') return false;
  if (decision.action === 'fail') {
    process.stderr.write(`error: ${decision.message}\n`);
    process.exit(1);
  }
  let dir: string;
  try {
    dir = pinnedNodeDir();
  } catch (err) {
    process.stderr.write(
      `error: helm-operator needs Node ${engines ?? ''} (this is ${process.versions.node}) and could not fetch it with the package's hack/tools.sh node-dir: ${(err as Error).message}\nInstall Node ${engines ?? ''} and put it first on PATH.\n`,
    );
    process.exit(1);
  }
  // First on PATH too: what the command runs (npm in `init`, make targets) gets the same Node.
  const env = { ...process.env, [RELAUNCHED_ENV]: '1', PATH: `${dir}${path.delimiter}${process.env.PATH ?? ''}` };
  const child = spawn(path.join(dir, 'node'), [...process.execArgv, process.argv[1] ?? '', ...process.argv.slice(2)], {
    stdio: 'inherit',
    env,
  });
  // A terminal's Ctrl-C reaches both processes; a signal sent to this one alone is passed on.
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, () => child.kill(s));
  const status = await new Promise<number>((resolve) => {
    child.once('error', (err) => {
      process.stderr.write(`error: cannot run ${path.join(dir, 'node')}: ${err.message}\n`);
      resolve(1);
    });
    child.once('exit', (code, signal) => {
      resolve(exitStatus(code, signal));
    });
  });
  process.exit(status);
}
