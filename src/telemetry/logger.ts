import { pino, stdSerializers, stdTimeFunctions, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

export interface LoggerConfig {
  level?: string;
  /** Human-readable output for development; JSON otherwise. */
  pretty?: boolean;
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
  if (config.pretty === true) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true, ignore: 'pid,hostname' } } });
  }
  return pino(options);
}

/** A logger that discards everything, for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
