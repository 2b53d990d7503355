import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HelmError } from '../../../src/helm/errors.js';
import { installFile, PLUGIN_NAME, pluginsDir, PostRenderServer } from '../../../src/helm/post-render.js';

const run = promisify(execFile);
let tmp: string;
let server: PostRenderServer;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'post-render-'));
  server = new PostRenderServer(path.join(tmp, 'data'));
});
afterAll(async () => {
  await server.close();
  await rm(tmp, { recursive: true, force: true });
});

/** The script and its args, from helm 3's flags (`--post-renderer <script>`, then `--post-renderer-args <a>` each). */
function scriptOf(flags: string[]): { script: string; args: string[] } {
  const [, script, ...rest] = flags;
  return { script: script ?? '', args: rest.filter((_, i) => i % 2 === 1) };
}

/** Runs the script as helm 3 would: the manifest on stdin, the flags' args after the path. */
async function asHelm3(flags: string[], manifest: string): Promise<string> {
  const { script, args } = scriptOf(flags);
  const child = run(script, args);
  child.child.stdin?.end(manifest);
  return (await child).stdout;
}

describe('PostRenderServer', () => {
  it("gives helm the operator's rendering of the manifest, through the script helm 3 runs", async () => {
    const dir = await mkdtemp(path.join(tmp, 'run-'));
    const out = await server.with(
      dir,
      (m) => Promise.resolve(m.toUpperCase()),
      3,
      (flags) => asHelm3(flags, 'kind: ConfigMap\n'),
    );
    expect(out).toBe('KIND: CONFIGMAP\n');
  });

  it('passes a manifest of megabytes whole both ways, with no process but bash: the script runs with an empty PATH', async () => {
    const dir = await mkdtemp(path.join(tmp, 'run-'));
    const empty = await mkdtemp(path.join(tmp, 'no-commands-'));
    const line = String.raw`data: {k: "100% \n $(id) \`id\` '%s' \\ é"}`;
    const manifest = `---\n${Array.from({ length: 50_000 }, (_, i) => `${line} ${i}`).join('\n')}\n`;
    let seen = '';
    const out = await server.with(
      dir,
      (m) => {
        seen = m;
        return Promise.resolve(`${m}# stamped\n`);
      },
      3,
      async (flags) => {
        const { script, args: scriptArgs } = scriptOf(flags);
        const file = path.join(empty, 'manifest');
        await writeFile(file, manifest);
        // Through a pipe, as helm hands it over (node gives a child's stdin as a socket); bash's builtins only.
        const args = ['-c', 'm=$(<"$MANIFEST"); printf "%s\\n" "$m" | "$0" "$@"', script, ...scriptArgs];
        return (await run('/bin/bash', args, { env: { PATH: empty, MANIFEST: file }, maxBuffer: 64 * 1024 * 1024 })).stdout;
      },
    );
    expect(manifest.length).toBeGreaterThan(2_000_000);
    expect(seen).toBe(manifest);
    expect(out).toBe(`${manifest}# stamped\n`);
  });

  it('fails the post-render, with the reason on stderr, when rendering throws: helm then applies nothing', async () => {
    const dir = await mkdtemp(path.join(tmp, 'run-'));
    const failed = server.with(
      dir,
      () => Promise.reject(new Error('bad\nmanifest')),
      3,
      (flags) => asHelm3(flags, 'x'),
    );
    await expect(failed).rejects.toMatchObject({ code: 1, stdout: '', stderr: 'helm-operator post-renderer: bad manifest\n' });
  });

  it("a helm failure after the operator's render refused says what the render said, classified by it (helm 4 drops a plugin's stderr)", async () => {
    const dir = await mkdtemp(path.join(tmp, 'run-'));
    const wordless = new HelmError({
      reason: 'Unknown',
      verb: 'upgrade',
      summary:
        'error while running post render on files: failed to invoke post-renderer plugin "helm-operator-post-render": plugin "helm-operator-post-render" exited with error',
      exitCode: 1,
    });
    const refusal =
      'upgrade stopped before helm changed anything: 1 field conflict under conflictPolicy: fail: Deployment ns/web: field /spec/replicas is owned by field manager "kubectl"';
    const failed = server.with(
      dir,
      () => Promise.reject(new Error(refusal)),
      4,
      async (flags) => {
        await asHelm3(
          ['--post-renderer', path.join(pluginsDir(path.join(tmp, 'data')), PLUGIN_NAME, 'post-render.sh'), ...flags.slice(2)],
          'x',
        ).catch(() => undefined);
        throw wordless;
      },
    );
    await expect(failed).rejects.toMatchObject({
      name: 'HelmError',
      reason: 'ResourceConflict',
      verb: 'upgrade',
      summary: refusal,
      exitCode: 1,
    });
    // Without a refusal of ours, helm's error is what it was.
    const other = server.with(
      dir,
      (m) => Promise.resolve(m),
      4,
      () => Promise.reject(wordless),
    );
    await expect(other).rejects.toBe(wordless);
  });

  it('answers nothing to a token it did not give, or after the run ended', async () => {
    const dir = await mkdtemp(path.join(tmp, 'run-'));
    let saved: string[] = [];
    await server.with(
      dir,
      (m) => Promise.resolve(m),
      3,
      (flags) => {
        saved = flags;
        return Promise.resolve();
      },
    );
    await expect(asHelm3(saved, 'x')).rejects.toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'helm-operator post-renderer: unknown or expired run\n',
    });
  });

  it('refuses every post-render once its fence closes (the lease is lost): helm then applies nothing', async () => {
    let open = true;
    const fenced = new PostRenderServer(path.join(tmp, 'fenced-data'), () => open);
    try {
      const dir = await mkdtemp(path.join(tmp, 'run-'));
      await expect(
        fenced.with(
          dir,
          (m) => Promise.resolve(m),
          3,
          (flags) => asHelm3(flags, 'a\n'),
        ),
      ).resolves.toBe('a\n');
      open = false;
      const refused = fenced.with(
        dir,
        (m) => Promise.resolve(m),
        3,
        (flags) => asHelm3(flags, 'a\n'),
      );
      await expect(refused).rejects.toMatchObject({
        code: 1,
        stdout: '',
        stderr: 'helm-operator post-renderer: this replica no longer holds the leader lease\n',
      });
    } finally {
      await fenced.close();
    }
  });

  it('names the helm 4 plugin it wrote, whose command is the same script', async () => {
    const dir = await mkdtemp(path.join(tmp, 'run-'));
    const flags = await server.with(
      dir,
      (m) => Promise.resolve(m),
      4,
      (f) => Promise.resolve(f),
    );
    expect(flags.slice(0, 2)).toEqual(['--post-renderer', PLUGIN_NAME]);
    expect(flags.filter((_, i) => i >= 2 && i % 2 === 0)).toEqual(['--post-renderer-args', '--post-renderer-args', '--post-renderer-args']);
    const plugin = await readFile(path.join(pluginsDir(path.join(tmp, 'data')), PLUGIN_NAME, 'plugin.yaml'), 'utf8');
    expect(plugin).toContain('type: postrenderer/v1');
    expect(plugin).toContain('${HELM_PLUGIN_DIR}/post-render.sh');
  });
});

describe("the plugin's files", () => {
  it('are replaced whole by a rename, never rewritten in place, and left alone when they hold the content already', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'plugin-files-'));
    try {
      const file = path.join(dir, 'post-render.sh');
      await installFile(file, 'one', 0o700);
      const first = await stat(file);
      expect(first.mode & 0o777).toBe(0o700);
      await installFile(file, 'one', 0o700);
      expect((await stat(file)).ino, 'the same content is not written again').toBe(first.ino);
      await installFile(file, 'two', 0o700);
      expect((await stat(file)).ino, 'a new file, renamed over the old one').not.toBe(first.ino);
      expect(await readFile(file, 'utf8')).toBe('two');
      expect(await readdir(dir), 'no temporary file left').toEqual(['post-render.sh']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
