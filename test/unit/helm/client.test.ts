import { readdirSync, statSync } from 'node:fs';
import { access, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HelmClient, type HelmClientOptions, type HelmExecution } from '../../../src/helm/client.js';
import { HelmError } from '../../../src/helm/errors.js';
import type { LeaseFence } from '../../../src/helm/runner.js';
import { HELM_BINARIES, writeFakeHelm, writeTinyChart, writeUnreachableKubeconfig } from './helpers.js';
import { helmRejection } from '../../support/helm.js';
import { jsonDigest } from '../../../src/util/canonical-json.js';

let work: string;
let chart: string;

beforeEach(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'helm-client-test-'));
  chart = await writeTinyChart(work);
});

afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

/** The values directories the client has left in its tmpDir. */
async function valuesDirs(tmp: string): Promise<string[]> {
  return (await readdir(tmp)).filter((n) => n.startsWith('helm-values-'));
}

const releaseOpts = { release: 'web', namespace: 'demo' };

describe.runIf(HELM_BINARIES.length > 0).each(HELM_BINARIES)(
  'with the real helm v$major binary',
  ({ major, bin }) => {
    const client = (extra: Partial<HelmClientOptions> = {}): HelmClient => new HelmClient({ binary: bin, tmpDir: work, ...extra });

    it('detects the version once', async () => {
      const events: HelmExecution[] = [];
      const c = client({ observer: (e) => events.push(e) });
      const [a, b] = await Promise.all([c.version(), c.version()]);
      expect(a).toBe(b);
      expect(a.major).toBe(major);
      expect(a.semver).toMatch(major === 4 ? /^4\.1\.4/ : /^3\.21\.4/);
      await c.version();
      expect(c.executions).toBe(1);
      expect(events).toEqual([{ verb: 'version', outcome: 'success', durationMs: expect.any(Number) as number }]);
    });

    it('template renders the values and removes the values file', async () => {
      const c = client();
      const manifest = await c.template({ ...releaseOpts, chart, values: { greeting: 'bonjour' } });
      expect(manifest).toContain('name: web-cm');
      expect(manifest).toContain('greeting: "bonjour"');
      expect(await valuesDirs(work)).toEqual([]);
      expect(c.executions).toBe(2); // version + template
    });

    it('the values file is 0600 in a 0700 directory while helm runs', async () => {
      let modes: { dir: number; file: number } | undefined;
      // The observer runs synchronously after helm exits, before the finally block removes the directory.
      const c2 = client({
        observer: (e) => {
          if (e.verb !== 'template') return;
          const d = readdirSync(work).find((n) => n.startsWith('helm-values-'));
          if (d === undefined) return;
          modes = {
            dir: statSync(path.join(work, d)).mode & 0o777,
            file: statSync(path.join(work, d, 'values.json')).mode & 0o777,
          };
        },
      });
      await c2.template({ ...releaseOpts, chart, values: { greeting: 'x' } });
      expect(modes).toEqual({ dir: 0o700, file: 0o600 });
      const failed = await helmRejection(c2.template({ ...releaseOpts, chart, values: { fail: true } }));
      expect(failed.reason).toBe('RenderFailed');
      expect(modes).toEqual({ dir: 0o700, file: 0o600 });
      expect(await valuesDirs(work)).toEqual([]);
    });

    it('a failing render rejects with RenderFailed and still removes the values file', async () => {
      const events: HelmExecution[] = [];
      const c = client({ observer: (e) => events.push(e) });
      const err = await helmRejection(c.template({ ...releaseOpts, chart, values: { fail: true, secret: 'hunter2' } }));
      expect(err.reason).toBe('RenderFailed');
      expect(err.verb).toBe('template');
      expect(err.exitCode).toBe(1);
      expect(err.summary).toContain('fail was requested');
      expect(err.message).not.toContain('hunter2');
      expect(await valuesDirs(work)).toEqual([]);
      expect(events.map((e) => `${e.verb}:${e.outcome}`)).toEqual(['version:success', 'template:error']);
      expect(c.executions).toBe(2);
    });

    it('schema violations, bad charts and bad names are classified', async () => {
      const c = client();
      expect((await helmRejection(c.template({ ...releaseOpts, chart, values: { greeting: 5 } }))).reason).toBe('ValuesSchemaInvalid');
      expect((await helmRejection(c.template({ ...releaseOpts, chart: path.join(work, 'nope'), values: {} }))).reason).toBe('ChartInvalid');
      expect((await helmRejection(c.template({ ...releaseOpts, release: 'Bad_Name', chart, values: {} }))).reason).toBe(
        'InvalidReleaseName',
      );
      expect((await helmRejection(c.template({ ...releaseOpts, release: 'a'.repeat(54), chart, values: {} }))).reason).toBe(
        'InvalidReleaseName',
      );
      expect(await valuesDirs(work)).toEqual([]);
    });

    it('a pre-aborted signal is Canceled without spawning helm', async () => {
      const c = client();
      await c.version();
      const ac = new AbortController();
      ac.abort();
      const err = await helmRejection(c.template({ ...releaseOpts, chart, values: {}, signal: ac.signal }));
      expect(err.reason).toBe('Canceled');
      expect(err.canceled).toBe(true);
      expect(c.executions).toBe(1);
    });

    /**
     * A lease as the manager wires it: held for the first `heldFor` questions (either kind), then
     * gone; `check` then declares the loss, which aborts the reconciles in the same tick.
     */
    const lease = (heldFor: number): { fence: LeaseFence; reconcile: AbortController; asked: string[] } => {
      const reconcile = new AbortController();
      const asked: string[] = [];
      const answer = (how: string): boolean => {
        asked.push(how);
        return asked.length <= heldFor;
      };
      const fence: LeaseFence = {
        holds: () => answer('holds'),
        check: () => {
          if (answer('check')) return true;
          reconcile.abort(new Error('leadership lost'));
          return false;
        },
      };
      return { fence, reconcile, asked };
    };

    it('a closed fence (the lease is lost) refuses release writers without spawning helm; reads outside a reconcile still run', async () => {
      const l = lease(1);
      const c = client({ fence: l.fence });
      await c.version();
      const err = await helmRejection(c.uninstall({ release: 'r1', namespace: 'ns' }));
      expect(err.reason).toBe('Canceled');
      expect(err.message).toMatch(/no longer holds the leader lease/);
      expect(c.executions).toBe(1);
      await c.template({ ...releaseOpts, chart, values: {} });
      expect(c.executions).toBe(2);
    });

    it('a fence that closes between the check and the fork (the process paused there) kills the writer it forked, then declares the loss', async () => {
      const l = lease(2);
      const c = client({ fence: l.fence });
      await c.version(); // one check
      const err = await helmRejection(c.uninstall({ release: 'r1', namespace: 'ns', signal: l.reconcile.signal }));
      expect(l.asked).toEqual(['check', 'check', 'holds', 'check']);
      expect(l.reconcile.signal.aborted).toBe(true);
      expect(err.reason).toBe('Canceled');
      expect(err.message).toMatch(/no longer holds the leader lease/);
      expect(c.executions).toBe(2);
    });

    it("a reconcile's read is refused by the check that finds the lease lost: the loss aborts its signal first", async () => {
      const l = lease(1);
      const c = client({ fence: l.fence });
      await c.version(); // no signal: a standby's reads run
      const err = await helmRejection(c.template({ ...releaseOpts, chart, values: {}, signal: l.reconcile.signal }));
      expect(err.reason).toBe('Canceled');
      expect(l.reconcile.signal.aborted).toBe(true);
      expect(c.executions).toBe(1);
    });

    it("a fence that closes between the check and the fork kills a reconcile's read it forked", async () => {
      const l = lease(2);
      const c = client({ fence: l.fence });
      await c.version();
      const err = await helmRejection(c.template({ ...releaseOpts, chart, values: {}, signal: l.reconcile.signal }));
      expect(l.asked).toEqual(['check', 'check', 'holds', 'check']);
      expect(err.reason).toBe('Canceled');
      expect(err.message).toMatch(/no longer holds the leader lease/);
      expect(c.executions).toBe(2);
    });

    it("a sharded fence is asked with the release's namespace: a writer in a namespace this replica does not own never starts", async () => {
      const asked: (string | undefined)[] = [];
      const owned = (ns: string | undefined): boolean => {
        asked.push(ns);
        return ns !== 'theirs';
      };
      const c = client({ fence: { holds: owned, check: owned } });
      await c.version();
      asked.length = 0;
      const before = c.executions;
      const err = await helmRejection(c.uninstall({ release: 'r1', namespace: 'theirs' }));
      expect(err.reason).toBe('Canceled');
      expect(err.message).toMatch(/sharded: the namespace's share/);
      expect(c.executions).toBe(before);
      // In a namespace it owns, the writer starts (and fails on its own: no such release).
      expect((await helmRejection(c.uninstall({ release: 'r1', namespace: 'mine' }))).reason).not.toBe('Canceled');
      expect(c.executions).toBe(before + 1);
      expect(asked).toEqual(['theirs', 'mine', 'mine']);
    });

    it('logs verb, release, namespace, duration and outcome at debug, never values', async () => {
      const lines: string[] = [];
      const sink = new Writable({
        write(chunk: Buffer, _enc, cb) {
          lines.push(chunk.toString('utf8'));
          cb();
        },
      });
      const c = client({ log: pino({ level: 'debug' }, sink) });
      await c.template({ ...releaseOpts, chart, values: { greeting: 'TOPSECRET-VALUE' } });
      await helmRejection(c.template({ ...releaseOpts, chart, values: { fail: true, token: 'TOPSECRET-VALUE' } }));
      const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(records.filter((r) => r.verb === 'template').map((r) => [r.release, r.namespace, r.outcome, typeof r.durationMs])).toEqual([
        ['web', 'demo', 'success', 'number'],
        ['web', 'demo', 'error', 'number'],
      ]);
      expect(records.find((r) => r.outcome === 'error')?.reason).toBe('RenderFailed');
      expect(lines.join('')).not.toContain('TOPSECRET');
    });

    describe('release verbs against the memory storage driver (no cluster)', () => {
      /** Release "web" in ns1: revision 1 superseded, revision 2 deployed; "stuck" has a pending upgrade. */
      const seed = [
        rel('web', 1, 'superseded', '0.1.0'),
        rel('web', 2, 'deployed', '0.2.0'),
        rel('stuck', 1, 'superseded', '0.1.0'),
        rel('stuck', 2, 'pending-upgrade', '0.2.0'),
      ];

      function rel(name: string, version: number, status: string, chartVersion: string): Record<string, unknown> {
        return {
          name,
          namespace: 'ns1',
          version,
          info: {
            first_deployed: '2026-01-01T00:00:00Z',
            last_deployed: `2026-01-0${version}T00:00:00Z`,
            status,
            description: version === 1 ? 'Install complete' : 'Upgrade complete',
            notes: `notes ${version}`,
          },
          chart: { metadata: { name: 'tiny', version: chartVersion, appVersion: '1.0.0' } },
          config: { password: 's3cret' },
          manifest: `a: ${version}\n`,
        };
      }

      async function memoryClient(events?: HelmExecution[]): Promise<HelmClient> {
        const data = path.join(work, 'releases.json');
        await writeFile(data, JSON.stringify(seed));
        return client({
          driver: 'memory',
          extraEnv: { HELM_MEMORY_DRIVER_DATA: data },
          kubeconfig: await writeUnreachableKubeconfig(work),
          ...(events ? { observer: (e: HelmExecution) => events.push(e) } : {}),
        });
      }

      it('status: latest revision with its chart from get metadata, of the values only their digest', async () => {
        const events: HelmExecution[] = [];
        const c = await memoryClient(events);
        const got = await c.status('web', 'ns1');
        expect(got).toEqual({
          valuesDigest: jsonDigest({ password: 's3cret' }),
          name: 'web',
          namespace: 'ns1',
          revision: 2,
          status: 'deployed',
          chart: { name: 'tiny', version: '0.2.0', appVersion: '1.0.0' },
          notes: 'notes 2',
          manifest: 'a: 2\n',
          deleteHooks: false,
          description: 'Upgrade complete',
          firstDeployed: '2026-01-01T00:00:00Z',
          lastDeployed: '2026-01-02T00:00:00Z',
        });
        expect(JSON.stringify(got)).not.toContain('s3cret');
        expect(events.map((e) => e.verb)).toEqual(['version', 'status', 'get-metadata']);
      });

      it('status of a missing release is undefined; history of it is []', async () => {
        const c = await memoryClient();
        expect(await c.status('nope', 'ns1')).toBeUndefined();
        expect(await c.status('web', 'other-ns')).toBeUndefined();
        expect(await c.history('nope', 'ns1')).toEqual([]);
      });

      it('history, oldest first, and --max', async () => {
        const c = await memoryClient();
        const all = await c.history('web', 'ns1');
        expect(all.map((h) => [h.revision, h.status, h.chart, h.appVersion, h.description])).toEqual([
          [1, 'superseded', 'tiny-0.1.0', '1.0.0', 'Install complete'],
          [2, 'deployed', 'tiny-0.2.0', '1.0.0', 'Upgrade complete'],
        ]);
        expect((await c.history('web', 'ns1', { max: 1 })).map((h) => h.revision)).toEqual([2]);
      });

      it('uninstall of a missing release is found: false', async () => {
        const c = await memoryClient();
        expect(await c.uninstall({ release: 'nope', namespace: 'ns1' })).toEqual({ found: false });
      });

      it('upgrade while another operation is pending', async () => {
        const c = await memoryClient();
        const err = await helmRejection(c.upgrade({ release: 'stuck', namespace: 'ns1', chart, values: {} }));
        expect(err.reason).toBe('AnotherOperationInProgress');
        expect(err.summary).toBe('another operation (install/upgrade/rollback) is in progress');
        expect(await valuesDirs(work)).toEqual([]);
      });

      it('upgrade and rollback of a missing release are ReleaseNotFound', async () => {
        const c = await memoryClient();
        expect((await helmRejection(c.upgrade({ release: 'nope', namespace: 'ns1', chart, values: {} }))).reason).toBe('ReleaseNotFound');
        expect((await helmRejection(c.rollback({ release: 'nope', namespace: 'ns1', revision: 1 }))).reason).toBe('ReleaseNotFound');
      });

      it('install over an existing release is a ResourceConflict', async () => {
        const c = await memoryClient();
        const err = await helmRejection(c.install({ release: 'web', namespace: 'ns1', chart, values: {}, labels: { team: 'a' } }));
        expect(err.reason).toBe('ResourceConflict');
      });
    });

    it('an unreachable cluster is a KubernetesAPIError', async () => {
      const c = client({ kubeconfig: await writeUnreachableKubeconfig(work) });
      const err = await helmRejection(c.install({ ...releaseOpts, chart, values: {} }));
      expect(err.reason).toBe('KubernetesAPIError');
      expect(err.summary).toMatch(/connection refused/);
      expect(await c.status('web', 'demo').catch((e: unknown) => (e as HelmError).reason)).toBe('KubernetesAPIError');
      // Three helm processes (install, then status and get metadata): a loaded machine needs more than the default 5 s.
    }, 30_000);

    it('passes --kube-context before the -- terminator', async () => {
      const c = client({ kubeconfig: await writeUnreachableKubeconfig(work), kubeContext: 'nope' });
      const err = await helmRejection(c.history('web', 'demo'));
      expect(err.reason).toBe('KubernetesAPIError');
      expect(err.summary).toMatch(/context "nope" does not exist/);
    });
    // Each case runs real helm processes (2-4 of them): a second or two alone, past vitest's 5 s
    // default on a 2-core machine that is also linting and running the rest of the unit tier.
  },
  30_000,
);

describe('without a usable helm', () => {
  it('a missing binary is HelmNotFound, and the failure is not cached', async () => {
    const c = new HelmClient({ binary: path.join(work, 'no-such-helm'), tmpDir: work });
    const err = await helmRejection(c.version());
    expect(err.reason).toBe('HelmNotFound');
    expect(err.summary).toBe('cannot run helm: ENOENT');
    await helmRejection(c.status('web', 'demo'));
    expect(c.executions).toBe(2);
  });

  it('helm older than 3.13 is rejected with a clear message', async () => {
    const c = new HelmClient({ binary: await writeFakeHelm(work), tmpDir: work, extraEnv: { FAKE_HELM_VERSION: 'v3.12.3' } });
    const err = await helmRejection(c.version());
    expect(err.reason).toBe('HelmNotFound');
    expect(err.summary).toMatch(/helm 3\.12\.3 is too old: need >= 3\.13\.0/);
  });
});

describe('cancellation and observation (stand-in helm that hangs)', () => {
  it('aborting a running helm rejects with Canceled and removes the values file', async () => {
    const events: HelmExecution[] = [];
    const running = path.join(work, 'install-running');
    const c = new HelmClient({
      binary: await writeFakeHelm(work),
      tmpDir: work,
      observer: (e) => events.push(e),
      extraEnv: { FAKE_HELM_STARTED: running },
    });
    const ac = new AbortController();
    const pending = c.install({ ...releaseOpts, chart, values: { a: 1 }, signal: ac.signal });
    await vi.waitFor(() => access(running), { timeout: 5_000, interval: 20 });
    expect(await valuesDirs(work)).toHaveLength(1);
    const started = Date.now();
    ac.abort();
    const err = await helmRejection(pending);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(err.reason).toBe('Canceled');
    expect(err.canceled).toBe(true);
    expect(err.verb).toBe('install');
    expect(await valuesDirs(work)).toEqual([]);
    expect(events.map((e) => `${e.verb}:${e.outcome}`)).toEqual(['version:success', 'install:error']);
    expect(c.executions).toBe(2);
  });

  it('counts a release as running until its cancelled helm has exited, whoever it acts as', async () => {
    const running = path.join(work, 'upgrade-running');
    const c = new HelmClient({
      binary: await writeFakeHelm(work),
      tmpDir: work,
      extraEnv: { FAKE_HELM_STARTED: running, FAKE_HELM_SLOW_EXIT: '1' },
    });
    const ac = new AbortController();
    expect(c.running('web', 'demo')).toBe(false);
    const grant = { kubeconfig: path.join(work, 'grant.kubeconfig'), cacheDir: path.join(work, 'grant-cache') };
    const pending = c.upgrade({
      ...releaseOpts,
      chart,
      values: {},
      signal: ac.signal,
      impersonate: 'system:serviceaccount:demo:deployer',
      grant,
    });
    await vi.waitFor(() => access(running), { timeout: 5_000, interval: 20 });
    expect(c.running('web', 'demo')).toBe(true);
    expect(c.running('web', 'other')).toBe(false);
    expect(c.running('api', 'demo')).toBe(false);
    ac.abort();
    // SIGTERM sent, the process still cleaning up: the release is still being changed.
    expect(c.running('web', 'demo')).toBe(true);
    expect((await helmRejection(pending)).reason).toBe('Canceled');
    expect(c.running('web', 'demo')).toBe(false);
  });

  it('does not count reads as changing a release', async () => {
    const running = path.join(work, 'status-running');
    const c = new HelmClient({ binary: await writeFakeHelm(work), tmpDir: work, extraEnv: { FAKE_HELM_STARTED: running } });
    const ac = new AbortController();
    const pending = c.status('web', 'demo', { signal: ac.signal });
    await vi.waitFor(() => access(running), { timeout: 5_000, interval: 20 });
    expect(c.running('web', 'demo')).toBe(false);
    ac.abort();
    await helmRejection(pending);
  });

  it('an observer that throws does not fail the call', async () => {
    const c = new HelmClient({
      binary: await writeFakeHelm(work),
      tmpDir: work,
      observer: () => {
        throw new Error('metrics bug');
      },
    });
    await expect(c.version()).resolves.toEqual({ major: 4, semver: '4.1.4' });
    expect(c.executions).toBe(1);
  });
});
