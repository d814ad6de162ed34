import pino, { DestinationStream } from 'pino';
import { prettyFactory } from 'pino-pretty';

export type LogFormat = 'json' | 'pretty';

/** `LOG_FORMAT` decides; `auto` is pretty for a person at a terminal and JSON for everything else. */
export function logFormatFor(setting: 'auto' | LogFormat, stdoutIsTty = process.stdout.isTTY === true): LogFormat {
  if (setting !== 'auto') return setting;
  return stdoutIsTty ? 'pretty' : 'json';
}

type Line = Record<string, unknown>;

/** The access log's fields, which a pretty access line says in its message instead. */
const ACCESS_FIELDS = ['method', 'url', 'status', 'duration_ms', 'request_id'];

const isAccessLine = (line: Line) => line.msg === 'request completed' || line.msg === 'request aborted';

/** `controller Boot: message`. */
function prettyMessage(line: Line): string {
  const prefix = `${typeof line.role === 'string' ? `${line.role} ` : ''}${typeof line.context === 'string' ? `${line.context}: ` : ''}`;
  return `${prefix}${String(line.msg ?? '')}`;
}

/** An access line says its fields as its message: `GET /api/v1/tasks/ 200 3.1 ms`. */
function asAccessMessage(line: Line): Line {
  const aborted = line.msg === 'request aborted' ? ' (aborted)' : '';
  const msg = `${String(line.method)} ${String(line.url)} ${String(line.status)} ${String(line.duration_ms)} ms${aborted}`;
  const rest: Line = { ...line, msg };
  for (const field of ACCESS_FIELDS) delete rest[field];
  return rest;
}

/**
 * Lines for a person: time, level, role and message on one line, other fields after it as
 * compact JSON, errors with their stacks. Formatted and written synchronously in this
 * thread (no transport worker), so a line is out before the process exits and lines come
 * in the order of events. pino-pretty formats; this only drops the access fields that an
 * access line's message already says.
 */
export function prettyDestination(colorize = process.stdout.isTTY === true, out: DestinationStream = pino.destination({ dest: 1, sync: true })): DestinationStream {
  const format = prettyFactory({
    colorize,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,role,context',
    messageFormat: (line) => prettyMessage(line),
  });
  return {
    write(json: string) {
      const line = JSON.parse(json) as Line;
      out.write(format(isAccessLine(line) ? asAccessMessage(line) : line));
    },
  };
}
