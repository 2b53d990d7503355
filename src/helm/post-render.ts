/**
 * A helm post-renderer that runs in the operator process: helm hands the rendered manifest to a
 * short bash script, which passes it to the operator over loopback and prints the answer. The
 * operator changes the manifest (the reconciler's ownership stamp, ADR 0060) without a process of
 * its own per install: the script's one bash process costs a few milliseconds, a node process
 * 30–50 ms of CPU.
 *
 * Protocol, per helm run: the script writes the manifest to `<dir>/manifest` (the run's private
 * 0700 values directory), connects to 127.0.0.1:<port>, sends the run's random token and a
 * newline, and reads one line back: `ok` (the new manifest is in `<dir>/rendered`) or the error.
 * Anything else, or no answer, fails the post-render, so helm fails the release operation: an
 * empty or partial manifest is never applied.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import type { HelmMajor } from './args.js';
import { classifyHelmError, HelmError } from './errors.js';

/** Changes a rendered manifest (multi-document YAML) before helm applies it. */
export type PostRender = (manifest: string) => Promise<string>;

/** The helm 4 plugin's name (helm 4 takes post-renderers only as plugins). */
export const PLUGIN_NAME = 'helm-operator-post-render';
/** The largest manifest read back from a run's directory (helm's own release limit is ~1 MiB compressed). */
const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;
const MAX_TOKEN_LINE = 128;
/** A refusal's one line: long enough for the fields of a conflict and how to settle them (upgrade-fields.ts). */
const MAX_ANSWER = 1000;

/**
 * bash reads and writes the manifests itself: `$(<file)` starts no process (bash 5.2), where a
 * `cat` each way was two more processes per install, 40 % of the post-render's CPU. It drops
 * trailing newlines, which YAML ignores, and NUL bytes, which YAML does not allow. Assignments, so
 * that a failed read fails the script (`set -e`) instead of printing an empty manifest. helm hands
 * the manifest over a pipe; a socket (a caller's socketpair, as node's child processes get) cannot
 * be opened as /dev/stdin, and `cat` reads that.
 */
const SCRIPT = `#!/bin/bash
# helm-operator's post-renderer: args <run dir> <port> <token>; see src/helm/post-render.ts.
set -euo pipefail
if [ -S /dev/stdin ]; then manifest=$(cat); else manifest=$(</dev/stdin); fi
printf '%s\\n' "$manifest" > "$1/manifest"
exec 3<>"/dev/tcp/127.0.0.1/$2"
printf '%s\\n' "$3" >&3
IFS= read -r answer <&3 || answer='no answer from the operator'
[ "$answer" = ok ] || { printf 'helm-operator post-renderer: %s\\n' "$answer" >&2; exit 1; }
rendered=$(<"$1/rendered")
printf '%s\\n' "$rendered"
`;

const PLUGIN_YAML = `apiVersion: v1
type: postrenderer/v1
name: ${PLUGIN_NAME}
version: 0.1.0
runtime: subprocess
runtimeConfig:
  platformCommand:
    - command: \${HELM_PLUGIN_DIR}/post-render.sh
`;

interface Run {
  readonly dir: string;
  readonly render: PostRender;
}

/** The directory that holds the helm 4 plugin, under a runner's private helm data home. */
export const pluginsDir = (helmDataHome: string): string => path.join(helmDataHome, 'plugins');

interface Listening {
  readonly port: number;
  readonly script: string;
  readonly server: net.Server;
}

export class PostRenderServer {
  readonly #runs = new Map<string, Run>();
  #listening: Promise<Listening> | undefined;

  /**
   * `helmDataHome`: where the script and the helm 4 plugin are written (private to the operator);
   * `fence`: false refuses every post-render (the runner's `fence`: the lease is lost).
   */
  constructor(
    private readonly helmDataHome: string,
    private readonly fence?: () => boolean,
  ) {}

  /**
   * Runs `fn` with the helm flags that post-render through `render`; `dir` is the run's private
   * directory (the values file's). The flags stop working when `fn` ends.
   */
  async with<T>(dir: string, render: PostRender, major: HelmMajor, fn: (flags: string[]) => Promise<T>): Promise<T> {
    this.#listening ??= this.#listen();
    const { port, script } = await this.#listening;
    const token = randomBytes(24).toString('base64url');
    let refusal: string | undefined;
    const tracked: PostRender = (manifest) =>
      render(manifest).catch((err: unknown) => {
        refusal = oneLine(err);
        throw err;
      });
    this.#runs.set(token, { dir, render: tracked });
    try {
      const renderer = major === 4 ? ['--post-renderer', PLUGIN_NAME] : ['--post-renderer', script];
      return await fn([...renderer, ...[dir, String(port), token].flatMap((a) => ['--post-renderer-args', a])]);
    } catch (err) {
      // helm 4 reports a plugin's failure without its words ("plugin … exited with error"): the
      // refusal is ours, so its own text is what the failure says, and what decides its reason.
      if (refusal === undefined || !(err instanceof HelmError) || err.canceled || err.timedOut) throw err;
      const reason = classifyHelmError(refusal, err.exitCode);
      throw new HelmError({
        reason: reason === 'Unknown' ? err.reason : reason,
        verb: err.verb,
        summary: refusal,
        ...(err.exitCode === undefined ? {} : { exitCode: err.exitCode }),
      });
    } finally {
      this.#runs.delete(token);
    }
  }

  async close(): Promise<void> {
    const listening = this.#listening;
    this.#listening = undefined;
    const server = await listening?.then((l) => l.server).catch(() => undefined);
    if (server === undefined) return;
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
  }

  async #listen(): Promise<Listening> {
    const pluginDir = path.join(pluginsDir(this.helmDataHome), PLUGIN_NAME);
    await mkdir(pluginDir, { recursive: true, mode: 0o700 });
    const script = path.join(pluginDir, 'post-render.sh');
    await installFile(script, SCRIPT, 0o700);
    await installFile(path.join(pluginDir, 'plugin.yaml'), PLUGIN_YAML, 0o600);
    const server = net.createServer((socket) => {
      this.#serve(socket);
    });
    // Idle between installs: it must not keep the process alive.
    server.unref();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        resolve();
      });
    });
    return { port: (server.address() as net.AddressInfo).port, script, server };
  }

  #serve(socket: net.Socket): void {
    let line = '';
    socket.setEncoding('utf8');
    socket.on('error', () => {
      socket.destroy();
    });
    const onData = (chunk: string): void => {
      line += chunk;
      const end = line.indexOf('\n');
      if (end < 0 && line.length <= MAX_TOKEN_LINE) return;
      socket.off('data', onData);
      const run = end < 0 ? undefined : this.#runs.get(line.slice(0, end));
      void this.#answer(run).then((answer) => socket.end(`${answer}\n`));
    };
    socket.on('data', onData);
  }

  /** `ok` once the rendered manifest is written; else a one-line reason (no manifest text in it). */
  async #answer(run: Run | undefined): Promise<string> {
    if (run === undefined) return 'unknown or expired run';
    if (this.fence?.() === false) return 'this replica no longer holds the leader lease';
    try {
      const manifest = await readFile(path.join(run.dir, 'manifest'), 'utf8');
      if (manifest.length > MAX_MANIFEST_BYTES) return 'manifest too large';
      await writeFile(path.join(run.dir, 'rendered'), await run.render(manifest), { mode: 0o600 });
      return 'ok';
    } catch (err) {
      return oneLine(err);
    }
  }
}

/** A refusal as one line, bounded: what the script prints, and what the failure says. */
const oneLine = (err: unknown): string => (err instanceof Error ? err.message : String(err)).replaceAll(/\s+/g, ' ').slice(0, MAX_ANSWER);

/**
 * Writes `content` to `file` by a rename, unless it holds it already: another operator process on the
 * same machine and temporary directory (a second replica in one pod's volume, tests side by side)
 * may be running helm with this very plugin, and must never read a half-written one.
 */
export async function installFile(file: string, content: string, mode: number): Promise<void> {
  if ((await readFile(file, 'utf8').catch(() => undefined)) === content) return;
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(tmp, content, { mode });
  await rename(tmp, file);
}
