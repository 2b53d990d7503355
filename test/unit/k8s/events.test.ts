/**
 * The event recorder against a loopback HTTP server that answers Event writes after a delay the
 * test controls: recording must not wait for it, and writes about one object stay in order.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loopbackKubeConfig } from '../../support/loopback-kubeconfig.js';
import { KubeEventRecorder } from '../../../src/k8s/events.js';
import { silentLogger } from '../../../src/telemetry/logger.js';

interface Write {
  readonly method: string;
  readonly path: string;
  readonly body: { reason?: string; count?: number; involvedObject?: { name?: string } };
}

/** Holds every request until `release()`; records them in arrival order. */
class SlowEventsServer {
  readonly writes: Write[] = [];
  /** Writes answered so far. */
  answered = 0;
  readonly #held: (() => void)[] = [];
  #open = false;
  readonly #server: Server = createServer((req, res) => {
    void this.#handle(req, res);
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  release(): void {
    this.#open = true;
    for (const go of this.#held.splice(0)) go();
  }

  async close(): Promise<void> {
    this.release();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) =>
      this.#server.close(() => {
        resolve();
      }),
    );
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = '';
    for await (const chunk of req) text += String(chunk);
    this.writes.push({ method: req.method ?? '', path: req.url ?? '', body: JSON.parse(text) as Write['body'] });
    if (!this.#open) await new Promise<void>((resolve) => this.#held.push(resolve));
    res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
    res.end(text);
    this.answered++;
  }
}

const cr = (name: string) => ({ apiVersion: 'example.com/v1', kind: 'Nginx', metadata: { name, namespace: 'ns1', uid: `uid-${name}` } });

let server: SlowEventsServer;

/**
 * Every wait here is for a condition (a write arriving, a flush returning); these bounds only stop a
 * hang. A loaded machine (load average 40 on 2 cores) takes seconds for the first request over
 * loopback, past `expect.poll`'s 1 s and the 5 s test default.
 */
const HANG = 60_000;
const arrived = { timeout: HANG };

afterEach(async () => {
  await server.close();
});

describe('KubeEventRecorder', { timeout: HANG }, () => {
  it('returns before the API server answers, and flush waits for the writes', async () => {
    server = new SlowEventsServer();
    const recorder = new KubeEventRecorder(loopbackKubeConfig(await server.listen()), 'nginx-controller', silentLogger());
    recorder.record(cr('a'), 'Normal', 'InstallSuccessful', 'Installed release a');
    recorder.record(cr('b'), 'Normal', 'InstallSuccessful', 'Installed release b');
    // Both objects' writes are in flight at once: one object's slow write does not hold another's.
    await expect.poll(() => server.writes.length, arrived).toBe(2);
    expect(
      await Promise.race([
        recorder.flush(HANG).then(() => 'flushed'),
        new Promise((r) =>
          setTimeout(() => {
            r('waiting');
          }, 200),
        ),
      ]),
    ).toBe('waiting');
    server.release();
    await recorder.flush(HANG);
    expect(server.writes.map((w) => [w.method, w.body.involvedObject?.name]).sort()).toEqual([
      ['POST', 'a'],
      ['POST', 'b'],
    ]);
  });

  it("keeps one object's writes in order, so a repeat bumps the count of the Event just created", async () => {
    server = new SlowEventsServer();
    const recorder = new KubeEventRecorder(loopbackKubeConfig(await server.listen()), 'nginx-controller', silentLogger());
    recorder.record(cr('a'), 'Warning', 'UpgradeFailed', 'boom');
    recorder.record(cr('a'), 'Warning', 'UpgradeFailed', 'boom');
    recorder.record(cr('a'), 'Warning', 'UpgradeFailed', 'boom');
    await expect.poll(() => server.writes.length, arrived).toBe(1);
    server.release();
    await recorder.flush(HANG);
    expect(server.writes.map((w) => w.method)).toEqual(['POST', 'PATCH', 'PATCH']);
    expect(server.writes.map((w) => w.body.count)).toEqual([1, 2, 3]);
    expect(server.writes[1]?.path).toMatch(/^\/api\/v1\/namespaces\/ns1\/events\/a\./);
  });

  it('forgets Events past the aggregation window: a repeat then starts a new Event', async () => {
    server = new SlowEventsServer();
    server.release();
    const recorder = new KubeEventRecorder(loopbackKubeConfig(await server.listen()), 'nginx-controller', silentLogger(), {
      limits: { windowMs: 100 },
    });
    recorder.record(cr('a'), 'Normal', 'UninstallSuccessful', 'Uninstalled release a');
    recorder.record(cr('b'), 'Normal', 'UninstallSuccessful', 'Uninstalled release b');
    await recorder.flush(HANG);
    expect(recorder.aggregating).toBe(2);
    await new Promise((r) => setTimeout(r, 150));
    recorder.record(cr('c'), 'Normal', 'InstallSuccessful', 'Installed release c');
    await recorder.flush(HANG);
    // a and b (CRs long gone, say) are no longer kept; c is.
    expect(recorder.aggregating).toBe(1);
    recorder.record(cr('a'), 'Normal', 'UninstallSuccessful', 'Uninstalled release a');
    await recorder.flush(HANG);
    expect(server.writes.map((w) => `${w.method} ${w.body.involvedObject?.name ?? ''}`)).toEqual(['POST a', 'POST b', 'POST c', 'POST a']);
  });

  it('flush gives up after its timeout when the API server does not answer', async () => {
    server = new SlowEventsServer();
    const recorder = new KubeEventRecorder(loopbackKubeConfig(await server.listen()), 'nginx-controller', silentLogger());
    recorder.record(cr('a'), 'Normal', 'InstallSuccessful', 'Installed release a');
    await expect.poll(() => server.writes.length, arrived).toBe(1);
    // The server holds the write until close(): flush returns without its answer.
    await recorder.flush(300);
    expect(server.answered).toBe(0);
  });
});
