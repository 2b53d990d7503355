/**
 * Chart sources served on 127.0.0.1 for the scaffold tests: a chart repository (a Node HTTP server
 * over a directory holding `helm repo index`'s index.yaml) and an OCI registry (the distribution
 * registry binary that hack/tools.sh builds from its Go module).
 */

import { createReadStream } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { waitFor } from '../../support/kube.js';
import { freePort, startChild, type Child } from '../../support/process.js';

export interface Served {
  readonly url: string;
  stop(): Promise<void>;
}

export async function serveDirectory(dir: string): Promise<Served> {
  const server: Server = createServer((req, res) => {
    const file = path.join(dir, path.normalize(decodeURIComponent((req.url ?? '/').split('?')[0] ?? '/')).replace(/^(\.\.[/\\])+/, ''));
    stat(file).then(
      (s) => {
        if (!s.isFile()) throw new Error('not a file');
        res.writeHead(200, { 'content-length': s.size });
        createReadStream(file).pipe(res);
      },
      () => {
        res.writeHead(404).end('not found');
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      ),
  };
}

export interface Registry extends Served {
  /** host:port, for oci://host:port/… references. */
  readonly host: string;
}

export async function startRegistry(bin: string, workDir: string): Promise<Registry> {
  const port = await freePort();
  const root = path.join(workDir, 'registry');
  await mkdir(root, { recursive: true });
  const config = path.join(workDir, 'registry.yml');
  await writeFile(
    config,
    `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${root}\nhttp:\n  addr: 127.0.0.1:${port}\n`,
  );
  const child: Child = startChild(bin, ['serve', config], { cwd: workDir, env: { ...process.env, OTEL_TRACES_EXPORTER: 'none' } });
  const host = `127.0.0.1:${port}`;
  await waitFor(`the registry on ${host}`, async () => (await fetch(`http://${host}/v2/`)).status === 200, { timeoutMs: 30_000 }).catch(
    (err: unknown) => {
      throw new Error(`${String(err)}\n${child.output()}`);
    },
  );
  return { host, url: `http://${host}`, stop: () => child.stop() };
}
