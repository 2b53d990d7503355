/**
 * A new operator author's shell, for the tutorial tier: a private HOME (no ~/.kube/config, no helm
 * repositories, no npm configuration), a global npm prefix of its own, and a PATH on which neither
 * helm nor kubectl is found. Commands run through bash as typed; a failed one throws with its exit
 * status and the tail of its output, and every command's full output is kept in a log file.
 *
 * What is shared with the machine, because it is a cache and not a user's set-up: the tool cache
 * (HELM_OPERATOR_CACHE_DIR: the pinned Node, helm, kubectl and the control plane binaries, built
 * once) and npm's package cache. Podman's image storage is the system's (root).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { appendFile, mkdir, realpath, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { toolCacheDir } from '../support/tool-cache.js';

/** Never on the session's PATH: the tutorial must work without them. */
export const HIDDEN_TOOLS = ['helm', 'kubectl'] as const;
/**
 * What the runtime's image.sh installs from apt when missing (podman, runc, mmdebstrap). A PATH
 * directory that is replaced by a filtered copy gets links to these in advance, dangling until the
 * install, so a command that installs them finds them right after.
 */
const INSTALLED_LATER = ['podman', 'runc', 'mmdebstrap'];
const TAIL_LINES = 60;

export { toolCacheDir };

const isExecutable = (file: string): boolean => {
  try {
    const s = statSync(file);
    return s.isFile() && (s.mode & 0o111) !== 0;
  } catch {
    return false;
  }
};

export interface RunResult {
  readonly code: number;
  readonly output: string;
}

export class CommandError extends Error {
  override readonly name = 'CommandError';
}

export const tail = (text: string, lines = TAIL_LINES): string => text.trimEnd().split('\n').slice(-lines).join('\n');

export class Session {
  readonly home: string;
  readonly npmPrefix: string;
  readonly logDir: string;
  private readonly extra = new Map<string, string>();
  private pathPrefix = '';
  private pathDir = 0;
  private logNo = 0;

  constructor(
    readonly work: string,
    private readonly npmCache: string,
  ) {
    this.home = path.join(work, 'home');
    this.npmPrefix = path.join(work, 'npm-global');
    this.logDir = path.join(work, 'logs');
  }

  async init(): Promise<void> {
    await mkdir(this.home, { recursive: true });
    await mkdir(path.join(this.npmPrefix, 'bin'), { recursive: true });
    await mkdir(this.logDir, { recursive: true });
  }

  /** Sets (or with undefined, unsets) a variable for the following commands, as `export` would. */
  set(name: string, value: string | undefined): void {
    if (value === undefined) this.extra.delete(name);
    else this.extra.set(name, value);
  }

  /** Directories put first on PATH for the following commands, as `export PATH=<dirs>:$PATH` would. */
  prependPath(dirs: string): void {
    this.pathPrefix = this.pathPrefix === '' ? dirs : `${dirs}${path.delimiter}${this.pathPrefix}`;
  }

  /**
   * The outer PATH without this test runner's Node (the user has the system's) and with every
   * directory that holds helm or kubectl replaced by a copy of it without them (links to the rest).
   */
  private async userPath(): Promise<string> {
    const runnerNode = path.dirname(process.execPath);
    const seen = new Set<string>();
    const dirs: string[] = [path.join(this.npmPrefix, 'bin')];
    const n = this.pathDir++;
    for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
      if (dir === '' || dir === runnerNode || dir.startsWith(toolCacheDir()) || !existsSync(dir)) continue;
      const real = await realpath(dir).catch(() => undefined);
      if (real === undefined) continue;
      if (seen.has(real)) continue;
      seen.add(real);
      dirs.push(
        HIDDEN_TOOLS.some((t) => isExecutable(path.join(real, t)))
          ? await this.withoutHidden(real, path.join(this.work, 'path', `${n}-${seen.size}`))
          : dir,
      );
    }
    return [...(this.pathPrefix === '' ? [] : [this.pathPrefix]), ...dirs].join(path.delimiter);
  }

  /** A directory of links to everything in `real` but helm and kubectl (and to INSTALLED_LATER). */
  private async withoutHidden(real: string, copy: string): Promise<string> {
    await rm(copy, { recursive: true, force: true });
    await mkdir(copy, { recursive: true });
    for (const name of new Set([...readdirSync(real), ...INSTALLED_LATER])) {
      if ((HIDDEN_TOOLS as readonly string[]).includes(name)) continue;
      await symlink(path.join(real, name), path.join(copy, name));
    }
    return copy;
  }

  /** The user's environment: nothing of the runner's helm, kube, XDG or make state. */
  async env(): Promise<NodeJS.ProcessEnv> {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (/^(HELM_|KUBE|XDG_|MAKE|MFLAGS|npm_|NPM_|TEST_|VITEST|KEEP_CLUSTER|IMG$|CONTAINERS_CONF$|NODE_OPTIONS$)/i.test(k)) continue;
      env[k] = v;
    }
    return {
      ...env,
      HOME: this.home,
      PATH: await this.userPath(),
      HELM_OPERATOR_CACHE_DIR: toolCacheDir(),
      npm_config_cache: this.npmCache,
      npm_config_prefix: this.npmPrefix,
      ...Object.fromEntries(this.extra),
    };
  }

  private async logFile(label: string): Promise<string> {
    const file = path.join(
      this.logDir,
      `${String(++this.logNo).padStart(2, '0')}-${label.replace(/[^a-zA-Z0-9]+/g, '-').slice(0, 60)}.log`,
    );
    await appendFile(file, `$ ${label}\n`);
    return file;
  }

  /** `bash -c command` in its own process group, its combined output collected and logged. */
  private async spawnLogged(command: string, cwd: string, label: string): Promise<Spawned> {
    const log = await this.logFile(label);
    const child = spawn('bash', ['-c', command], { cwd, env: await this.env(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const state = { output: '', done: false };
    const collect = (d: Buffer): void => {
      state.output += d.toString();
      void appendFile(log, d);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const exited = new Promise<number>((resolve) => {
      child.once('error', () => {
        state.done = true;
        resolve(127);
      });
      child.once('close', (c, signal) => {
        state.done = true;
        resolve(c ?? (signal === null ? 1 : 128 + os.constants.signals[signal]));
      });
    });
    return {
      exited,
      output: () => state.output,
      done: () => state.done,
      // The whole group: make → bash → node → helm stop together.
      kill: (signal) => {
        if (!state.done && child.pid !== undefined) process.kill(-child.pid, signal);
      },
    };
  }

  /** Runs `command` with bash in `cwd`; resolves with its status and combined output. */
  async run(command: string, opts: { cwd: string; timeoutMs: number }): Promise<RunResult> {
    const p = await this.spawnLogged(command, opts.cwd, command);
    const state = { timedOut: false };
    const timer = setTimeout(() => {
      state.timedOut = true;
      p.kill('SIGKILL');
    }, opts.timeoutMs);
    const code = await p.exited;
    clearTimeout(timer);
    return { code, output: state.timedOut ? `${p.output()}\n(killed after ${opts.timeoutMs} ms)` : p.output() };
  }

  /** Like {@link run}, throwing the command, its status and its output's tail unless it exits 0. */
  async ok(command: string, opts: { cwd: string; timeoutMs: number }): Promise<string> {
    const r = await this.run(command, opts);
    if (r.code !== 0) throw new CommandError(`\`${command}\` exited ${r.code}; last lines of its output:\n${tail(r.output)}`);
    return r.output;
  }

  /** A long-running command (make run, podman run) until {@link Background.stop}. */
  async background(command: string, cwd: string): Promise<Background> {
    const p = await this.spawnLogged(command, cwd, `${command} (background)`);
    return {
      command,
      output: () => p.output(),
      running: () => !p.done(),
      stop: async (timeoutMs = 60_000) => {
        p.kill('SIGTERM');
        const timer = setTimeout(() => {
          p.kill('SIGKILL');
        }, timeoutMs);
        const code = await p.exited;
        clearTimeout(timer);
        return code;
      },
    };
  }
}

interface Spawned {
  readonly exited: Promise<number>;
  output(): string;
  done(): boolean;
  kill(signal: NodeJS.Signals): void;
}

export interface Background {
  readonly command: string;
  output(): string;
  running(): boolean;
  /** SIGTERM to the group (SIGKILL after timeoutMs); resolves with the exit status. */
  stop(timeoutMs?: number): Promise<number>;
}
