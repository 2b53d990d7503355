import { mkdtemp, rm, writeFile, cp, appendFile, symlink, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigReloader, configurationHash, watchConfigFiles, type ConfigWatcher } from '../../../src/config/reload.js';
import type { Watch } from '../../../src/config/watch.js';
import { ManualClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { watchOf } from '../../support/watch.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const NGINX = path.join(ROOT, 'helm-charts/nginx');
const SLOW = path.join(ROOT, 'test/fixtures/charts/slow-hook');
const FILE = '/config/watches.yaml';

const entry = (kind: string, chart: string) => `- group: example.com\n  version: v1alpha1\n  kind: ${kind}\n  chart: ${chart}\n`;

const flush = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
};

/** A logger whose JSON lines are kept for assertions. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { log: pino({ level: 'debug' }, stream), lines };
}

function setup(initialText: string, overrides: { parse?: (text: string, file: string) => Promise<Watch[]> } = {}) {
  const clock = new ManualClock();
  const files = { text: initialText };
  const applied: Watch[][] = [];
  let failApplies = 0;
  const { log, lines } = capturingLogger();
  const reloader = new ConfigReloader({
    file: FILE,
    log,
    clock,
    readText: () => Promise.resolve(files.text),
    ...(overrides.parse === undefined ? {} : { parse: overrides.parse }),
    apply: (watches) => {
      if (failApplies > 0) {
        failApplies--;
        return Promise.reject(new Error('no matches for kind "Widget" in version "example.com/v1alpha1"'));
      }
      applied.push([...watches]);
      return Promise.resolve({ added: watches.map((w) => w.kind), removed: [], restarted: [] });
    },
  });
  return {
    clock,
    files,
    applied,
    lines,
    reloader,
    failNextApplies: (n: number) => (failApplies = n),
    /** Fires the debounce timer and waits for the reload to finish. */
    settle: async (ms = 500) => {
      clock.advance(ms);
      await flush();
      await reloader.idle();
    },
  };
}

describe('ConfigReloader', () => {
  it('initial() parses the file, records it as applied and reports its chart paths', async () => {
    const t = setup(entry('Nginx', NGINX));
    const watches = await t.reloader.initial();
    expect(watches.map((w) => w.kind)).toEqual(['Nginx']);
    expect(t.reloader.chartPaths).toEqual([NGINX]);
    // Nothing changed since: an event does not apply anything.
    t.reloader.notify('config');
    await t.settle();
    expect(t.applied).toEqual([]);
    expect(t.reloader.lastOutcome).toBe('unchanged');
  });

  it('debounces a burst of events into one reload', async () => {
    const t = setup(entry('Nginx', NGINX));
    await t.reloader.initial();
    t.files.text += entry('Other', SLOW);
    t.reloader.notify('config');
    t.clock.advance(300);
    t.reloader.notify('config');
    t.clock.advance(300);
    t.reloader.notify('config');
    t.clock.advance(499);
    await flush();
    expect(t.applied).toHaveLength(0);
    await t.settle(1);
    expect(t.applied).toHaveLength(1);
    expect(t.applied[0]!.map((w) => w.kind)).toEqual(['Nginx', 'Other']);
    expect(t.reloader.lastOutcome).toBe('applied');
    expect(t.lines.find((l) => l.msg === 'Applied the reloaded watches file')).toMatchObject({ added: ['Nginx', 'Other'] });
  });

  it('skips a file whose content did not change (same hash), without parsing it', async () => {
    const parse = vi.fn((_text: string, _file: string): Promise<Watch[]> => Promise.resolve([]));
    const t = setup('[]\n', { parse });
    await t.reloader.initial();
    expect(parse).toHaveBeenCalledTimes(1);
    t.reloader.notify('config');
    await t.settle();
    expect(parse).toHaveBeenCalledTimes(1);
    expect(t.applied).toEqual([]);
  });

  it('on a chart event re-reads the charts and applies only when a chart digest changed', async () => {
    let digest = 'sha256:aaa';
    const watch = (): Watch =>
      watchOf(
        { path: NGINX, format: 'directory', name: 'nginx', version: '0.1.0', digest },
        { version: 'v1alpha1', source: { file: FILE, index: 0, line: 1 } },
      );
    const parse = vi.fn(() => Promise.resolve([watch()]));
    const t = setup(entry('Nginx', NGINX), { parse });
    await t.reloader.initial();
    t.reloader.notify('chart'); // e.g. a file touched without a content change
    await t.settle();
    expect(parse).toHaveBeenCalledTimes(2);
    expect(t.applied).toEqual([]);
    digest = 'sha256:bbb';
    t.reloader.notify('chart');
    await t.settle();
    expect(t.applied).toHaveLength(1);
    expect(t.applied[0]![0]!.chart.digest).toBe('sha256:bbb');
  });

  it('keeps the last good configuration on an invalid edit, logs file:line, and applies the next valid edit', async () => {
    const t = setup(entry('Nginx', NGINX));
    await t.reloader.initial();
    t.files.text = `${entry('Nginx', NGINX)}  reconcilePeriod: 2s\n  colour: blue\n`;
    t.reloader.notify('config');
    await t.settle();
    expect(t.reloader.lastOutcome).toBe('invalid');
    expect(t.applied).toEqual([]);
    const logged = t.lines.find((l) => l.msg === 'Invalid watches file; keeping the last good configuration');
    expect(logged?.level).toBe(50);
    expect(String(logged?.error)).toContain(`${FILE}:6:3`);
    expect(String(logged?.error)).toContain('colour');
    // The same broken text again is not re-reported.
    t.reloader.notify('config');
    await t.settle();
    expect(t.lines.filter((l) => l.msg === 'Invalid watches file; keeping the last good configuration')).toHaveLength(1);
    t.files.text = `${entry('Nginx', NGINX)}  reconcilePeriod: 2s\n`;
    t.reloader.notify('config');
    await t.settle();
    expect(t.reloader.lastOutcome).toBe('applied');
    expect(t.applied[0]![0]!.reconcilePeriodMs).toBe(2_000);
  });

  it('returning to the applied configuration after a broken edit applies nothing', async () => {
    const t = setup(entry('Nginx', NGINX));
    await t.reloader.initial();
    const good = t.files.text;
    t.files.text = 'not: [valid';
    t.reloader.notify('config');
    await t.settle();
    t.files.text = good;
    t.reloader.notify('config');
    await t.settle();
    expect(t.reloader.lastOutcome).toBe('unchanged');
    expect(t.applied).toEqual([]);
  });

  it('retries a failed apply with backoff until it succeeds', async () => {
    const t = setup(entry('Nginx', NGINX));
    await t.reloader.initial();
    t.failNextApplies(2);
    t.files.text += entry('Widget', SLOW);
    t.reloader.notify('config');
    await t.settle();
    expect(t.reloader.lastOutcome).toBe('apply-failed');
    expect(
      t.lines.some((l) => l.msg === 'Applying the reloaded watches file failed' && String(l.error).includes('no matches for kind')),
    ).toBe(true);
    await t.settle(999);
    expect(t.applied).toEqual([]);
    await t.settle(1); // 1 s: second failure
    expect(t.reloader.lastOutcome).toBe('apply-failed');
    await t.settle(2_000); // 2 s: success
    expect(t.reloader.lastOutcome).toBe('applied');
    expect(t.applied).toHaveLength(1);
    await t.settle(60_000);
    expect(t.applied).toHaveLength(1);
  });

  it('runs reloads one at a time and once more for events that arrive during one', async () => {
    let release!: () => void;
    let parses = 0;
    const gate = new Promise<void>((r) => (release = r));
    const t = setup('[]\n', {
      parse: async () => {
        parses++;
        if (parses === 2) await gate;
        return [];
      },
    });
    await t.reloader.initial();
    t.files.text = '[] # 1\n';
    t.reloader.notify('config');
    t.clock.advance(500);
    await flush();
    t.files.text = '[] # 2\n';
    t.reloader.notify('config');
    t.clock.advance(500);
    await flush();
    expect(parses).toBe(2); // the second reload waits for the first
    release();
    await flush();
    await t.reloader.idle();
    expect(parses).toBe(3);
  });

  it('tells listeners when the chart paths change', async () => {
    const t = setup(entry('Nginx', NGINX));
    await t.reloader.initial();
    const seen: (readonly string[])[] = [];
    t.reloader.onChartPaths((p) => seen.push(p));
    t.files.text = entry('Nginx', SLOW);
    t.reloader.notify('config');
    await t.settle();
    expect(seen).toEqual([[SLOW]]);
  });

  it('stops a running kind whose chart turns unsafe (a symlink out of it) and brings it back once fixed, without throwing', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'reload-unsafe-'));
    try {
      const chart = path.join(dir, 'nginx');
      await cp(NGINX, chart, { recursive: true });
      const t = setup(entry('Nginx', chart) + entry('Other', SLOW));
      await t.reloader.initial();
      await symlink('/etc/passwd', path.join(chart, 'templates', 'passwd.yaml'));
      t.reloader.notify('chart');
      await t.settle();
      expect(t.reloader.lastOutcome).toBe('invalid');
      // helm would read the chart path again at the next install: the kind is stopped, Other keeps running.
      expect(t.applied.map((ws) => ws.map((w) => w.kind))).toEqual([['Other']]);
      const stopped = t.lines.find(
        (l) => l.msg === 'A running chart turned unsafe; its kind is stopped until the watches file loads again',
      );
      expect(stopped).toMatchObject({ stopped: ['Nginx'] });
      expect(JSON.stringify(stopped)).toContain('\\"templates/passwd.yaml\\" is a symbolic link to \\"/etc/passwd\\"');
      await unlink(path.join(chart, 'templates', 'passwd.yaml'));
      t.reloader.notify('chart');
      await t.settle();
      expect(t.reloader.lastOutcome).toBe('applied');
      expect(t.applied.at(-1)?.map((w) => w.kind)).toEqual(['Nginx', 'Other']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('configurationHash changes with the text and with any chart digest', () => {
    const w = { chart: { path: '/c', digest: 'sha256:1' } } as unknown as Watch;
    const w2 = { chart: { path: '/c', digest: 'sha256:2' } } as unknown as Watch;
    expect(configurationHash('a', [w])).toBe(configurationHash('a', [w]));
    expect(configurationHash('a', [w])).not.toBe(configurationHash('b', [w]));
    expect(configurationHash('a', [w])).not.toBe(configurationHash('a', [w2]));
  });
});

describe('watchConfigFiles (real filesystem)', () => {
  let dir: string | undefined;
  let watcher: ConfigWatcher | undefined;
  afterEach(async () => {
    await watcher?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    watcher = undefined;
    dir = undefined;
  });

  it('reloads on a watches.yaml edit and on a chart edit', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'reload-'));
    const chart = path.join(dir, 'chart');
    await cp(SLOW, chart, { recursive: true });
    const file = path.join(dir, 'watches.yaml');
    await writeFile(file, entry('Nginx', chart));
    const applied: Watch[][] = [];
    const reloader = new ConfigReloader({
      file,
      log: silentLogger(),
      debounceMs: 100,
      apply: (w) => {
        applied.push([...w]);
        return Promise.resolve();
      },
    });
    await reloader.initial();
    watcher = watchConfigFiles(reloader, file, silentLogger());
    await watcher.ready;
    await writeFile(file, entry('Nginx', chart) + entry('Other', chart));
    await vi.waitFor(
      () => {
        expect(applied).toHaveLength(1);
      },
      { timeout: 5_000, interval: 50 },
    );
    expect(applied[0]!.map((w) => w.kind)).toEqual(['Nginx', 'Other']);
    const digest = applied[0]![0]!.chart.digest;
    await appendFile(path.join(chart, 'templates/configmap.yaml'), '# edited\n');
    await vi.waitFor(
      () => {
        expect(applied).toHaveLength(2);
      },
      { timeout: 5_000, interval: 50 },
    );
    expect(applied[1]![0]!.chart.digest).not.toBe(digest);
  });

  it('catches an edit made to a newly named chart while its watch is being set up', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'reload-'));
    const first = path.join(dir, 'first');
    const second = path.join(dir, 'second');
    await cp(SLOW, first, { recursive: true });
    await cp(SLOW, second, { recursive: true });
    const file = path.join(dir, 'watches.yaml');
    await writeFile(file, entry('Nginx', first));
    const applied: Watch[][] = [];
    const reloader = new ConfigReloader({
      file,
      log: silentLogger(),
      debounceMs: 100,
      apply: (w) => {
        applied.push([...w]);
        return Promise.resolve();
      },
    });
    await reloader.initial();
    watcher = watchConfigFiles(reloader, file, silentLogger());
    await watcher.ready;
    await writeFile(file, entry('Nginx', second));
    await vi.waitFor(
      () => {
        expect(applied).toHaveLength(1);
      },
      { timeout: 5_000, interval: 10 },
    );
    // At once, before chokidar has scanned the new path.
    await appendFile(path.join(second, 'templates/configmap.yaml'), '# edited\n');
    await vi.waitFor(
      () => {
        expect(applied).toHaveLength(2);
      },
      { timeout: 8_000, interval: 50 },
    );
    expect(applied[1]![0]!.chart.digest).not.toBe(applied[0]![0]!.chart.digest);
  });
});
