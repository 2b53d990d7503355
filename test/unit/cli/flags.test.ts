import { CommanderError } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineRunCommand, NOT_YET_IMPLEMENTED, parseBool, type RunOptions } from '../../../src/cli/flags.js';

/** Parses `args` as `helm-operator run …`; resolves the options the action received, or rejects with the CLI error. */
async function parse(args: string[]): Promise<RunOptions> {
  let got: RunOptions | undefined;
  const cmd = defineRunCommand((o) => {
    got = o;
    return Promise.resolve();
  });
  cmd.exitOverride();
  cmd.configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  await cmd.parseAsync(args, { from: 'user' });
  if (got === undefined) throw new Error('action not called');
  return got;
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('run flags', () => {
  it('defaults: metrics on :8080, probes on :8081, no leader election, 30s graceful shutdown, no reload', async () => {
    vi.stubEnv('OPERATOR_NAME', undefined);
    const o = await parse([]);
    expect(o.metricsBindAddress).toEqual({ host: undefined, port: 8080 });
    expect(o.healthProbeBindAddress).toEqual({ host: undefined, port: 8081 });
    expect(o.leaderElection).toBeUndefined();
    expect(o.gracefulShutdownTimeoutMs).toBe(30_000);
    expect(o.watchConfig).toBe(false);
    expect(o.watchesFile).toBe('./watches.yaml');
    expect(o.reconcilePeriodMs).toBe(60_000);
  });

  it('refuses a reconcile period under 1s (a busy loop), keeps 0 (off), and floors CR annotations at 30s by default', async () => {
    await expect(parse(['--reconcile-period', '1ms'])).rejects.toThrow(
      '--reconcile-period 1ms is shorter than the 1s floor: every CR would be reconciled in a busy loop',
    );
    expect((await parse(['--reconcile-period', '0'])).reconcilePeriodMs).toBe(0);
    expect((await parse(['--reconcile-period', '1s'])).reconcilePeriodMs).toBe(1_000);
    expect((await parse([])).annotationReconcilePeriodFloorMs).toBe(30_000);
    expect((await parse(['--annotation-reconcile-period-floor', '2s'])).annotationReconcilePeriodFloorMs).toBe(2_000);
    await expect(parse(['--annotation-reconcile-period-floor', '500ms'])).rejects.toThrow(
      /--annotation-reconcile-period-floor 500ms is shorter than the 1s floor/,
    );
    await expect(parse(['--annotation-reconcile-period-floor', '0'])).rejects.toThrow(
      /--annotation-reconcile-period-floor 0 is shorter than the 1s floor/,
    );
  });

  it('0 disables the metrics and health servers', async () => {
    const o = await parse(['--metrics-bind-address', '0', '--health-probe-bind-address=0']);
    expect(o.metricsBindAddress).toBeUndefined();
    expect(o.healthProbeBindAddress).toBeUndefined();
  });

  it('accepts host:port addresses', async () => {
    const o = await parse(['--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '[::1]:9440']);
    expect(o.metricsBindAddress).toEqual({ host: '127.0.0.1', port: 0 });
    expect(o.healthProbeBindAddress).toEqual({ host: '::1', port: 9440 });
  });

  it('accepts the deprecated --metrics-addr, but not together with --metrics-bind-address', async () => {
    expect((await parse(['--metrics-addr', ':9090'])).metricsBindAddress).toEqual({ host: undefined, port: 9090 });
    await expect(parse(['--metrics-addr', ':9090', '--metrics-bind-address', ':9091'])).rejects.toThrow(/aliases/);
  });

  it('rejects a malformed bind address naming the flag', async () => {
    await expect(parse(['--metrics-bind-address', '8080'])).rejects.toThrow(/--metrics-bind-address must be host:port/);
  });

  it('--leader-elect needs a lease name', async () => {
    vi.stubEnv('OPERATOR_NAME', undefined);
    await expect(parse(['--leader-elect'])).rejects.toThrow(/--leader-election-id is required/);
  });

  it('--leader-elect with an id and namespace, and controller-runtime timing defaults', async () => {
    const o = await parse(['--leader-elect', '--leader-election-id', 'my-op', '--leader-election-namespace', 'ops']);
    expect(o.leaderElection).toEqual({
      id: 'my-op',
      namespace: 'ops',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    });
  });

  it('--sharding is off by default, and needs --leader-elect, whose Leases it names after', async () => {
    expect((await parse(['--leader-elect', '--leader-election-id', 'x'])).sharding).toBe(false);
    expect((await parse(['--leader-elect', '--sharding', '--leader-election-id', 'x'])).sharding).toBe(true);
    await expect(parse(['--sharding'])).rejects.toThrow(/--sharding needs --leader-elect/);
  });

  it('accepts pflag-style booleans and the deprecated --enable-leader-election', async () => {
    expect((await parse(['--leader-elect=false', '--leader-election-id', 'x'])).leaderElection).toBeUndefined();
    expect((await parse(['--leader-elect=true', '--leader-election-id', 'x'])).leaderElection?.id).toBe('x');
    expect((await parse(['--enable-leader-election', '--leader-election-id', 'x'])).leaderElection?.id).toBe('x');
    await expect(parse(['--leader-elect=maybe'])).rejects.toThrow(/true or false/);
  });

  it('OPERATOR_NAME fills the lease name only when the flag is not given', async () => {
    vi.stubEnv('OPERATOR_NAME', 'from-env');
    expect((await parse(['--leader-elect'])).leaderElection?.id).toBe('from-env');
    expect((await parse(['--leader-elect', '--leader-election-id', 'from-flag'])).leaderElection?.id).toBe('from-flag');
  });

  it('leaves the namespace undefined when not given (resolved in-cluster at start-up)', async () => {
    const o = await parse(['--leader-elect', '--leader-election-id', 'x']);
    expect(o.leaderElection?.namespace).toBeUndefined();
    expect(o.operatorNamespace).toBeUndefined();
  });

  it("--leader-election-namespace alone is the operator's own namespace (key Secret, approvals), without leader election", async () => {
    vi.stubEnv('OPERATOR_NAME', undefined);
    const alone = await parse(['--leader-election-namespace', 'ops']);
    expect(alone.operatorNamespace).toBe('ops');
    expect(alone.leaderElection).toBeUndefined();
    const withElection = await parse(['--leader-elect', '--leader-election-id', 'x', '--leader-election-namespace=ops']);
    expect(withElection.operatorNamespace).toBe('ops');
    expect(withElection.leaderElection?.namespace).toBe('ops');
    expect((await parse(['--leader-election-namespace='])).operatorNamespace).toBeUndefined();
    expect((await parse([])).operatorNamespace).toBeUndefined();
  });

  it('validates leader election timings', async () => {
    await expect(
      parse([
        '--leader-elect',
        '--leader-election-id',
        'x',
        '--leader-election-lease-duration',
        '10s',
        '--leader-election-renew-deadline',
        '10s',
      ]),
    ).rejects.toThrow(/lease duration > renew deadline/);
    await expect(parse(['--leader-elect', '--leader-election-id', 'x', '--leader-election-lease-duration', '1500ms'])).rejects.toThrow(
      /whole number of seconds/,
    );
    const o = await parse([
      '--leader-elect',
      '--leader-election-id',
      'x',
      '--leader-election-lease-duration',
      '6s',
      '--leader-election-renew-deadline',
      '4s',
      '--leader-election-retry-period',
      '1s',
    ]);
    expect(o.leaderElection).toMatchObject({ leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 1_000 });
  });

  it('reconciles in flight tune themselves unless --max-concurrent-reconciles pins them', async () => {
    expect((await parse([])).selfTuningConcurrency).toBe(true);
    const pinned = await parse(['--max-concurrent-reconciles', '3']);
    expect(pinned).toMatchObject({ selfTuningConcurrency: false, maxConcurrentReconciles: 3 });
  });

  it('tenant fairness: --max-concurrent-reconciles-per-namespace (unset by default) and --helm-timeout (5m, at least 1s)', async () => {
    const defaults = await parse([]);
    expect(defaults.maxConcurrentReconcilesPerNamespace).toBeUndefined();
    expect(defaults.helmTimeoutMs).toBe(300_000);
    const o = await parse(['--max-concurrent-reconciles-per-namespace', '2', '--helm-timeout', '90s']);
    expect(o.maxConcurrentReconcilesPerNamespace).toBe(2);
    expect(o.helmTimeoutMs).toBe(90_000);
    await expect(parse(['--max-concurrent-reconciles-per-namespace', '0'])).rejects.toThrow(/at least 1/);
    await expect(parse(['--helm-timeout', '500ms'])).rejects.toThrow(/--helm-timeout must be at least 1s/);
  });

  it('retry delays: 1s doubling to 5m by default; the first at least 10ms, the longest at least the first and at most 24h', async () => {
    expect(await parse([])).toMatchObject({ minRetryDelayMs: 1_000, maxRetryDelayMs: 300_000 });
    expect(await parse(['--min-retry-delay', '250ms', '--max-retry-delay=30s'])).toMatchObject({
      minRetryDelayMs: 250,
      maxRetryDelayMs: 30_000,
    });
    // The last of a repeated flag wins (the tests' timings come before a test's own flags).
    expect((await parse(['--min-retry-delay=200ms', '--min-retry-delay=1s'])).minRetryDelayMs).toBe(1_000);
    await expect(parse(['--min-retry-delay', '5ms'])).rejects.toThrow(
      '--min-retry-delay must be at least 10ms, got 5ms: a failing release would be retried in a busy loop',
    );
    await expect(parse(['--min-retry-delay', '0'])).rejects.toThrow(/--min-retry-delay must be at least 10ms, got 0s/);
    await expect(parse(['--min-retry-delay', '10m'])).rejects.toThrow('--max-retry-delay 5m0s is shorter than --min-retry-delay 10m0s');
    await expect(parse(['--max-retry-delay', 'soon'])).rejects.toThrow(/--max-retry-delay.*invalid duration "soon"/);
    // Node fires a timer past ~24.8 days after 1 ms: the longest wait would become a busy loop.
    expect((await parse(['--max-retry-delay', '24h'])).maxRetryDelayMs).toBe(86_400_000);
    await expect(parse(['--max-retry-delay', '25h'])).rejects.toThrow('--max-retry-delay must be at most 24h0m0s, got 25h0m0s');
  });

  it('progress delay: 2s by default, 0 shows every helm action as Reconciling, at most 24h', async () => {
    expect((await parse([])).progressDelayMs).toBe(2_000);
    expect((await parse(['--progress-delay', '0'])).progressDelayMs).toBe(0);
    expect((await parse(['--progress-delay', '500ms'])).progressDelayMs).toBe(500);
    await expect(parse(['--progress-delay', '-1s'])).rejects.toThrow(/--progress-delay.*invalid duration "-1s"/);
    await expect(parse(['--progress-delay', '720h'])).rejects.toThrow('--progress-delay must be at most 24h0m0s, got 720h0m0s');
  });

  it('parses --graceful-shutdown-timeout and --watch-config', async () => {
    const o = await parse(['--graceful-shutdown-timeout', '1m30s', '--watch-config']);
    expect(o.gracefulShutdownTimeoutMs).toBe(90_000);
    expect(o.watchConfig).toBe(true);
    await expect(parse(['--graceful-shutdown-timeout', 'soon'])).rejects.toThrow(CommanderError);
  });

  it('logging: json by default, text with --log-format text or --zap-devel (which also lowers the level to debug)', async () => {
    expect(await parse([])).toMatchObject({ logPretty: false, logLevel: 'info' });
    expect(await parse(['--log-format', 'text'])).toMatchObject({ logPretty: true, logLevel: 'info' });
    expect(await parse(['--zap-devel'])).toMatchObject({ logPretty: true, logLevel: 'debug' });
    expect(await parse(['--zap-devel', '--zap-log-level', 'warn'])).toMatchObject({ logPretty: true, logLevel: 'warn' });
    expect(await parse(['--zap-encoder', 'console'])).toMatchObject({ logPretty: true });
    await expect(parse(['--log-format', 'xml'])).rejects.toThrow(/json or text/);
  });

  it.each(NOT_YET_IMPLEMENTED.map((f) => [f]))('refuses the unimplemented --%s by name', async (flag) => {
    const err: unknown = await parse([`--${flag}`]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommanderError);
    expect((err as CommanderError).exitCode).toBe(2);
    expect((err as CommanderError).message).toContain(`--${flag} is not implemented`);
  });

  it('no longer refuses the flags implemented here', () => {
    for (const f of [
      'metrics-secure',
      'metrics-require-rbac',
      'enable-http2',
      'metrics-bind-address',
      'metrics-addr',
      'health-probe-bind-address',
      'leader-elect',
      'enable-leader-election',
      'leader-election-id',
      'leader-election-namespace',
    ]) {
      expect(NOT_YET_IMPLEMENTED as readonly string[]).not.toContain(f);
    }
  });

  it('metrics: plain HTTP by default; --metrics-secure with RBAC, HTTP/2 and a certificate directory; tokens never over plain HTTP', async () => {
    const plain = await parse([]);
    expect(plain.metricsSecurity).toBeUndefined();
    expect(plain.metricsCrLimit).toBe(1000);
    expect((await parse(['--metrics-secure'])).metricsSecurity).toEqual({ http2: false, requireRbac: false });
    expect(
      (await parse(['--metrics-secure', '--metrics-require-rbac', '--enable-http2=true', '--metrics-cert-path', '/certs'])).metricsSecurity,
    ).toEqual({
      http2: true,
      requireRbac: true,
      certFiles: { dir: '/certs', certName: 'tls.crt', keyName: 'tls.key' },
    });
    expect(
      (await parse(['--metrics-secure', '--metrics-cert-path=/c', '--metrics-cert-name=a.pem', '--metrics-cert-key=b.pem'])).metricsSecurity
        ?.certFiles,
    ).toEqual({
      dir: '/c',
      certName: 'a.pem',
      keyName: 'b.pem',
    });
    await expect(parse(['--metrics-require-rbac'])).rejects.toThrow(
      '--metrics-require-rbac needs --metrics-secure: a bearer token must not be sent over plain HTTP',
    );
    await expect(parse(['--metrics-cert-path', '/c'])).rejects.toThrow('--metrics-cert-path needs --metrics-secure');
    await expect(parse(['--enable-http2'])).rejects.toThrow('--enable-http2 needs --metrics-secure');
    expect((await parse(['--metrics-cr-limit', '0'])).metricsCrLimit).toBe(0);
    await expect(parse(['--metrics-cr-limit', '-1'])).rejects.toThrow('--metrics-cr-limit must be a whole number of at least 0');
  });

  it('reads WATCH_NAMESPACE', async () => {
    vi.stubEnv('WATCH_NAMESPACE', 'a, b,,c');
    expect((await parse([])).namespaces).toEqual(['a', 'b', 'c']);
  });
});

describe('parseBool', () => {
  it('follows Go strconv.ParseBool', () => {
    for (const t of ['1', 't', 'T', 'true', 'TRUE', 'True', true]) expect(parseBool(t)).toBe(true);
    for (const f of ['0', 'f', 'F', 'false', 'FALSE', 'False', false]) expect(parseBool(f)).toBe(false);
    expect(() => parseBool('yes')).toThrow();
  });
});

describe('--default-service-account', () => {
  it('unset by default: watches without serviceAccountName act as the operator', async () => {
    vi.stubEnv('DEFAULT_SERVICE_ACCOUNT', undefined);
    expect((await parse([])).defaultServiceAccount).toBeUndefined();
  });

  it('from the flag, else from DEFAULT_SERVICE_ACCOUNT (the flag wins)', async () => {
    vi.stubEnv('DEFAULT_SERVICE_ACCOUNT', 'from-env');
    expect((await parse([])).defaultServiceAccount).toBe('from-env');
    expect((await parse(['--default-service-account', 'tenant-deployer'])).defaultServiceAccount).toBe('tenant-deployer');
  });

  it('refuses what cannot name a ServiceAccount', async () => {
    vi.stubEnv('DEFAULT_SERVICE_ACCOUNT', undefined);
    await expect(parse(['--default-service-account', 'Not_A_Name'])).rejects.toThrow(CommanderError);
  });
});
