import { pino, stdSerializers, stdTimeFunctions, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

export interface LoggerConfig {
  level?: string;
  /** Where the lines go; default stdout. {@link prettyDestination} for development. */
  destination?: DestinationStream;
}

/**
 * The process logger. JSON lines with controller-runtime's field names; values, kubeconfigs and
 * release payloads are never passed to it, and the redact list is a second line of defence.
 * pino's `name` option is not used: reconcile loggers bind the CR's `name`.
 */
export function makeLogger(config: LoggerConfig = {}): Logger {
  const options: LoggerOptions = {
    level: config.level ?? 'info',
    base: { logger: 'helm-operator' },
    timestamp: stdTimeFunctions.isoTime,
    errorKey: 'error',
    formatters: { level: (label) => ({ level: label }) },
    serializers: { error: stdSerializers.err },
    redact: { paths: ['values', '*.values', 'stringData', '*.stringData', 'data', '*.data'], censor: '[REDACTED]' },
  };
  return config.destination === undefined ? pino(options) : pino(options, config.destination);
}

/**
 * Human-readable lines for development (`--zap-devel`), formatted in this thread: a pino transport
 * would start a worker thread from pino's own files, which the bundled executable does not have
 * (hack/bundle.ts). Loaded on demand, so production processes never load pino-pretty.
 */
export async function prettyDestination(): Promise<DestinationStream> {
  const { default: pretty } = await import('pino-pretty');
  return pretty({ colorize: true, ignore: 'pid,hostname' });
}

/** A logger that discards everything, for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
