import type { Response } from 'express';

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
  let pending = chunks.next();
  try {
    let lastByte = '\n';
    for (;;) {
      const next = await nextOrInterruption(response, pending, keepAlive?.everyMs);
      if (next === 'quiet') {
        // Only between whole lines, so the keep-alive never splits one of the output's lines.
        if (lastByte === '\n' && !response.destroyed) response.write(keepAlive!.line);
        continue;
      }
      if (next === 'closed' || next.done || response.destroyed) break;
      pending = chunks.next();
      if (next.value) lastByte = next.value.slice(-1);
      // Backpressure: a client that reads slowly holds this stream, not an ever-growing buffer.
      if (next.value && !response.write(next.value)) await drainedOrClosed(response);
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

/**
 * The generator's next chunk, or 'closed' when the client goes away, or 'quiet' after
 * `quietMs`. Its listener and timer are removed once one of them happens: a long stream
 * leaves nothing behind per chunk (a race against one long-lived promise would keep a
 * reaction per chunk until the stream ends).
 */
function nextOrInterruption<T>(response: Response, pending: Promise<T>, quietMs?: number): Promise<T | 'closed' | 'quiet'> {
  if (response.destroyed) return Promise.resolve('closed');
  return new Promise((resolve, reject) => {
    const finish = (value: T | 'closed' | 'quiet') => {
      clearTimeout(timer);
      response.off('close', onClose);
      resolve(value);
    };
    const onClose = () => finish('closed');
    const timer = quietMs === undefined ? undefined : setTimeout(() => finish('quiet'), quietMs);
    response.once('close', onClose);
    pending.then(finish, (error: unknown) => {
      clearTimeout(timer);
      response.off('close', onClose);
      reject(error);
    });
  });
}

function drainedOrClosed(response: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      response.off('drain', done);
      response.off('close', done);
      resolve();
    };
    response.once('drain', done);
    response.once('close', done);
  });
}
