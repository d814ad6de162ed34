/** Most output kept per agent, as for the process engine (CONTRACT: last 1 MiB). */
export const MAX_LOG_BYTES = 1024 * 1024;

/**
 * The engine's log stream of a container without a TTY is multiplexed: frames of an
 * 8-byte header (stream 1 stdout or 2 stderr, three zero bytes, big-endian length) and
 * the payload. This joins the payloads in order; anything else is taken as plain text.
 */
export function demultiplexLogs(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset < raw.length) {
    const isFrame = offset + 8 <= raw.length && raw[offset] <= 2 && raw[offset + 1] === 0 && raw[offset + 2] === 0 && raw[offset + 3] === 0;
    if (!isFrame) return offset === 0 ? raw : Buffer.concat([...parts, raw.subarray(offset)]);
    const length = raw.readUInt32BE(offset + 4);
    parts.push(raw.subarray(offset + 8, offset + 8 + length));
    offset += 8 + length;
  }
  return Buffer.concat(parts);
}

/** The last `maxBytes` of the output, as text. */
export function lastBytes(output: Buffer, maxBytes = MAX_LOG_BYTES): string {
  return (output.length > maxBytes ? output.subarray(output.length - maxBytes) : output).toString('utf8');
}
