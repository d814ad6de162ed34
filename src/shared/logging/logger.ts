import { LoggerService } from '@nestjs/common';
import pino, { Logger as PinoLogger } from 'pino';
import { FlushWhenWritten } from './flush-when-written';
import { LogFormat, prettyDestination } from './pretty-output';
import { requestContext } from './request-context';
import { censorSecrets } from './secret-fields';
import { logTraceFields } from '../tracing/trace-context';

let root: PinoLogger | undefined;

/** The process's logger: JSON lines, or pretty lines for a terminal (`LOG_FORMAT`). */
export function createRootLogger(level: string, format: LogFormat = 'json', destination?: pino.DestinationStream): PinoLogger {
  root = pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin: () => {
        const context = requestContext.getStore();
        const trace = logTraceFields();
        if (!context) return trace ?? {};
        return { ...(context.role ? { role: context.role } : {}), ...(context.requestId ? { request_id: context.requestId } : {}), ...trace };
      },
      formatters: { level: (label) => ({ level: label }), log: censorSecrets },
    },
    destination ?? (format === 'pretty' ? prettyDestination() : bufferedStdout()),
  );
  return root;
}

/**
 * Standard output written in blocks rather than a write per line: on a busy server each line
 * was a system call of its own (a task's life logs about ten). Lines wait at most about
 * LOG_FLUSH_MS (`FlushWhenWritten`), and what is buffered is written out synchronously when the
 * process exits (pino's exit hook), so only a SIGKILL can lose the last fraction of a second.
 */
const LOG_BUFFER_BYTES = 4096;
const LOG_FLUSH_MS = 100;

function bufferedStdout(): pino.DestinationStream {
  return new FlushWhenWritten(pino.destination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES }), LOG_FLUSH_MS);
}

export function rootLogger(): PinoLogger {
  return root ?? createRootLogger(process.env.LOG_LEVEL ?? 'info');
}

/**
 * In the `all` role each role is its own Nest application with its own default data
 * source; @nestjs/typeorm keeps one process-wide list of names and warns about the second,
 * which does not apply to separate applications.
 */
const DEBUG_ONLY_CONTEXTS = new Set(['DataSourceNameRegistry']);

/** Nest's logger interface on top of pino; the Nest context becomes the `context` field. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: PinoLogger) {}

  log(message: unknown, ...rest: unknown[]): void {
    this.write('info', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('trace', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, rest);
  }

  private write(given: pino.Level, message: unknown, rest: unknown[]): void {
    const context = typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
    const level = context && DEBUG_ONLY_CONTEXTS.has(context) ? 'debug' : given;
    if (!this.logger.isLevelEnabled(level)) return;
    const bindings = context ? { context } : {};
    if (message !== null && typeof message === 'object' && !(message instanceof Error)) {
      const text = typeof rest[0] === 'string' ? rest[0] : undefined;
      this.logger[level]({ ...bindings, ...(message as object) }, text);
    } else if (message instanceof Error) {
      this.logger[level]({ ...bindings, err: message }, message.message);
    } else {
      const stack = level === 'error' && typeof rest[0] === 'string' && rest[0].includes('\n    at ') ? rest[0] : undefined;
      this.logger[level]({ ...bindings, ...(stack ? { stack } : {}) }, String(message));
    }
  }
}
