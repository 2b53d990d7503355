/**
 * `helm-operator run` flags: operator-sdk's names and defaults, parsed into typed options. A flag
 * operator-sdk has that we do not implement yet is refused by name instead of silently ignored.
 */
import os from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import { parseDuration } from '../config/duration.js';

export interface RunOptions {
  readonly watchesFile: string;
  readonly reconcilePeriodMs: number;
  readonly maxConcurrentReconciles: number;
  readonly suppressOverrideValues: boolean;
  readonly helmBinary: string;
  readonly kubeconfig?: string;
  readonly logLevel: string;
  readonly logPretty: boolean;
  /** From WATCH_NAMESPACE: empty means every namespace. */
  readonly namespaces: readonly string[];
}

/** operator-sdk helm-operator flags that this version does not implement. */
export const NOT_YET_IMPLEMENTED = [
  'metrics-bind-address',
  'metrics-addr',
  'health-probe-bind-address',
  'leader-elect',
  'enable-leader-election',
  'leader-election-id',
  'leader-election-namespace',
  'enable-http2',
  'metrics-secure',
  'metrics-require-rbac',
  'zap-stacktrace-level',
  'zap-time-encoding',
] as const;

const positiveInt = (flag: string) => (raw: string): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${flag} must be a whole number of at least 1, got "${raw}"`);
  return n;
};

const duration = (raw: string): number => {
  try {
    return parseDuration(raw);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
};

export function parseNamespaces(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
}

/** The `run` command's flag definitions; `action` receives the parsed options. */
export function defineRunCommand(action: (options: RunOptions) => Promise<void>): Command {
  const cmd = new Command('run')
    .description('Run the operator: reconcile every CR of the kinds in the watches file into a helm release')
    .option('--watches-file <path>', 'path to the watches file', './watches.yaml')
    .option('--reconcile-period <duration>', 'default periodic requeue of every CR (Go duration)', duration, 60_000)
    .option(
      '--max-concurrent-reconciles <n>',
      'default maximum number of concurrent reconciles per kind',
      positiveInt('--max-concurrent-reconciles'),
      os.availableParallelism(),
    )
    .option('--suppress-override-values', 'show overridden values as **** in OverrideValuesInUse events', false)
    .option('--helm-binary <path>', 'the helm executable (v3.13+ or v4)', process.env.HELM_BIN ?? 'helm')
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)')
    .addOption(new Option('--zap-log-level <level>', 'log level').choices(['debug', 'info', 'warn', 'error']).default('info'))
    .addOption(new Option('--zap-encoder <encoder>', 'log format').choices(['json', 'console']).default('json'))
    .option('--zap-devel', 'development logging: human-readable, debug level', false)
    .option('--log-format <format>', 'log format: json or text (text = --zap-encoder console)');
  for (const flag of NOT_YET_IMPLEMENTED) cmd.addOption(new Option(`--${flag} [value]`).hideHelp());
  cmd.action(async (raw: Record<string, unknown>) => {
    const unsupported = NOT_YET_IMPLEMENTED.filter((f) => raw[camel(f)] !== undefined);
    if (unsupported.length > 0) {
      cmd.error(`error: ${unsupported.map((f) => `--${f}`).join(', ')} is not implemented in this version of helm-operator`, {
        exitCode: 2,
      });
    }
    await action(toRunOptions(raw));
  });
  return cmd;
}

const camel = (flag: string): string => flag.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

function toRunOptions(raw: Record<string, unknown>): RunOptions {
  const devel = raw.zapDevel === true;
  const format = raw.logFormat as string | undefined;
  if (format !== undefined && format !== 'json' && format !== 'text') {
    throw new InvalidArgumentError(`--log-format must be json or text, got "${format}"`);
  }
  const kubeconfig = raw.kubeconfig as string | undefined;
  return {
    watchesFile: raw.watchesFile as string,
    reconcilePeriodMs: raw.reconcilePeriod as number,
    maxConcurrentReconciles: raw.maxConcurrentReconciles as number,
    suppressOverrideValues: raw.suppressOverrideValues === true,
    helmBinary: raw.helmBinary as string,
    ...(kubeconfig === undefined ? {} : { kubeconfig }),
    logLevel: devel && raw.zapLogLevel === 'info' ? 'debug' : (raw.zapLogLevel as string),
    logPretty: devel || raw.zapEncoder === 'console' || format === 'text',
    namespaces: parseNamespaces(process.env.WATCH_NAMESPACE),
  };
}
