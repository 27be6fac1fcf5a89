/**
 * The Temporal SDK's logs (workers, workflows, activities, and Core's own, forwarded from Rust) through the
 * process's pino logger, so a gateway or worker writes one stream of JSON lines (docs/operations.md).
 */
import { IllegalStateError } from '@temporalio/common';
import { Runtime, type LogLevel, type LogMetadata, type Logger as TemporalLogger } from '@temporalio/worker';
import type { Logger } from 'pino';

const PINO_LEVEL = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;

/** A Temporal Logger writing to `logger` (a child with `component: "temporal"`); an `error` field becomes `err`. */
export function pinoTemporalLogger(logger: Logger): TemporalLogger {
  const child = logger.child({ component: 'temporal' });
  const log = (level: LogLevel, message: string, meta?: LogMetadata) => {
    const { error, ...rest } = meta ?? {};
    const fields = error === undefined ? rest : { ...rest, err: error };
    child[PINO_LEVEL[level] ?? 'info'](fields, message);
  };
  return {
    log,
    trace: (message, meta) => log('TRACE', message, meta),
    debug: (message, meta) => log('DEBUG', message, meta),
    info: (message, meta) => log('INFO', message, meta),
    warn: (message, meta) => log('WARN', message, meta),
    error: (message, meta) => log('ERROR', message, meta),
  };
}

/** Core's filter for a pino level: Core logs at most what the logger would print (never below INFO: Core's
 * DEBUG is a firehose). */
function coreLevel(level: string): LogLevel {
  if (level === 'warn' || level === 'error' || level === 'fatal') return level === 'warn' ? 'WARN' : 'ERROR';
  if (level === 'silent') return 'ERROR';
  return 'INFO';
}

/**
 * Installs Temporal's Runtime with `logger` before a Worker or NativeConnection needs one. Returns false when
 * a Runtime is already in place (installed earlier, or by a test): that one stays. Temporal drops its Runtime
 * once the last Worker and connection close, so a process that starts Workers again installs again.
 */
export function installTemporalRuntime(logger: Logger): boolean {
  const level = coreLevel(logger.level);
  try {
    Runtime.install({
      logger: pinoTemporalLogger(logger),
      telemetryOptions: { logging: { filter: { core: level, other: level }, forward: {} } },
    });
  } catch (error) {
    if (error instanceof IllegalStateError) return false;
    throw error;
  }
  return true;
}
