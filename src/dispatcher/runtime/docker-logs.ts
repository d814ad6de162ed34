import type DockerModem from 'docker-modem';
import { once } from 'node:events';
import { Readable, Writable } from 'node:stream';

/** Most output kept per agent, as for the process engine (CONTRACT: last 1 MiB). */
export const MAX_LOG_BYTES = 1024 * 1024;

/**
 * The engine's log stream of a container without a TTY is multiplexed (an 8-byte header
 * per frame); the modem's `demuxStream` splits it, and output that is not framed (a TTY
 * container) passes through as it is. stdout and stderr are joined in the order the
 * engine sent them, as a person reading the task's output expects.
 */
export async function demultiplexLogs(modem: DockerModem, raw: Buffer): Promise<Buffer> {
  const parts: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      parts.push(chunk);
      done();
    },
  });
  const source = Readable.from([raw], { objectMode: false });
  const ended = once(source, 'end');
  modem.demuxStream(source, sink, sink);
  await ended;
  return Buffer.concat(parts);
}

/** The last `maxBytes` of the output, as text. */
export function lastBytes(output: Buffer, maxBytes = MAX_LOG_BYTES): string {
  return (output.length > maxBytes ? output.subarray(output.length - maxBytes) : output).toString('utf8');
}
