import type { Response } from 'express';

/**
 * Sends each chunk as it comes (chunked `text/plain`, or `text/event-stream` frames) and
 * ends the response when the chunks end; a client that goes away stops the generator.
 */
export async function streamText(response: Response, chunks: AsyncGenerator<string>, contentType = 'text/plain; charset=utf-8'): Promise<void> {
  response.status(200);
  response.setHeader('Content-Type', contentType);
  response.setHeader('Cache-Control', 'no-cache');
  response.setHeader('X-Accel-Buffering', 'no');
  response.flushHeaders();
  const closed = new Promise<void>((resolve) => response.once('close', resolve));
  try {
    for (;;) {
      const next = await Promise.race([chunks.next(), closed.then(() => null)]);
      if (!next || next.done || response.destroyed) break;
      if (next.value) response.write(next.value);
    }
  } catch {
    // The task or its dispatcher went away mid-stream: what was sent stands, the stream ends.
  } finally {
    // Not awaited: a generator waiting for its next chunk ends at its next yield.
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
