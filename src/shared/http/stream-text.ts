import { once } from 'node:events';
import type { Response } from 'express';

const NEVER = new Promise<never>(() => undefined);

/** A line written after `everyMs` of quiet, so proxies and load balancers keep an idle stream open. */
export interface KeepAlive {
  everyMs: number;
  line: string;
}

/** Log follows: an empty line after 15 s of quiet, shorter than the 60 s idle time-out of common load balancers. */
export const LOG_FOLLOW_KEEP_ALIVE: KeepAlive = { everyMs: 15_000, line: '\n' };

/**
 * Sends each chunk as it comes (chunked `text/plain`, or `text/event-stream` frames) and
 * ends the response when the chunks end; a client that goes away stops the generator.
 */
export async function streamText(
  response: Response,
  chunks: AsyncGenerator<string>,
  contentType = 'text/plain; charset=utf-8',
  keepAlive?: KeepAlive,
): Promise<void> {
  response.status(200);
  response.setHeader('Content-Type', contentType);
  response.setHeader('Cache-Control', 'no-cache');
  response.setHeader('X-Accel-Buffering', 'no');
  response.flushHeaders();
  const closed = new Promise<void>((resolve) => response.once('close', resolve));
  let pending = chunks.next();
  try {
    let lastByte = '\n';
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const quiet = keepAlive ? new Promise<'quiet'>((resolve) => (timer = setTimeout(resolve, keepAlive.everyMs, 'quiet'))) : NEVER;
      const next = await Promise.race([pending, closed.then(() => null), quiet]).finally(() => clearTimeout(timer));
      if (next === 'quiet') {
        // Only between whole lines, so the keep-alive never splits one of the output's lines.
        if (lastByte === '\n' && !response.destroyed) response.write(keepAlive!.line);
        continue;
      }
      if (!next || next.done || response.destroyed) break;
      pending = chunks.next();
      if (next.value) lastByte = next.value.slice(-1);
      // Backpressure: a client that reads slowly holds this stream, not an ever-growing buffer.
      if (next.value && !response.write(next.value)) await Promise.race([once(response, 'drain').catch(() => undefined), closed]);
    }
  } catch {
    // The task or its dispatcher went away mid-stream: what was sent stands, the stream ends.
  } finally {
    // Not awaited: a generator waiting for its next chunk ends at its next yield.
    void pending.catch(() => undefined);
    void chunks.return(undefined).catch(() => undefined);
    if (!response.writableEnded) response.end();
  }
}

/** Aborted when the client goes away, so a stream's upstream work (polls, proxied requests) stops with it. */
export function abortOnClose(response: Response): AbortSignal {
  const controller = new AbortController();
  response.once('close', () => controller.abort());
  return controller.signal;
}
