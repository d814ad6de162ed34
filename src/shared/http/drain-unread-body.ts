import type { IncomingMessage } from 'node:http';
import type { Request, RequestHandler } from 'express';

/** Unread request bytes worth reading and discarding after an early answer. */
export const DRAIN_MAX_BYTES = 4 * 1024 * 1024;
/** How long a client may take to send them. */
export const DRAIN_MAX_MS = 10_000;
/** How often a drain looks at the byte count (a fast client may overshoot by what it sends in this time). */
const DRAIN_CHECK_MS = 10;

/**
 * Called once a request is answered. A request answered before its body was read (413 over a limit, 401, 415) has its
 * remaining bytes read and discarded, up to DRAIN_MAX_BYTES within DRAIN_MAX_MS, so the
 * connection stays usable and a client that writes its whole body before it reads (Node's
 * fetch, many HTTP libraries) gets the answer instead of EPIPE. Past the bound the
 * connection is closed: a client sending gigabytes after a refusal costs a few megabytes.
 * Go's net/http does the same (with 256 KiB); Node's own dump of an unread body has no bound.
 */
export function drainUnreadBody(request: IncomingMessage): void {
  if (request.complete || request.destroyed) return;
  // Watched through the socket's byte count: Node's HTTP parser reads the socket natively,
  // and once it dumps an unread body (after the answer) its bytes reach no JS listener.
  const socket = request.socket;
  const start = socket.bytesRead;
  const started = Date.now();
  const stop = () => {
    clearInterval(watch);
    request.removeListener('end', stop);
    socket.removeListener('close', stop);
  };
  const watch = setInterval(() => {
    if (socket.bytesRead - start > DRAIN_MAX_BYTES || Date.now() - started > DRAIN_MAX_MS) {
      stop();
      socket.destroy();
    }
  }, DRAIN_CHECK_MS);
  watch.unref();
  request.once('end', stop);
  socket.once('close', stop);
  request.resume();
}

/** An over-limit error shaped as body-parser's own, so the error mapping answers it the same way. */
export function tooLarge(): Error {
  return Object.assign(new Error('request entity too large'), { type: 'entity.too.large', status: 413, statusCode: 413, expose: true });
}

/**
 * A body-parser middleware that answers 413 as soon as a body is known to be over `limit`
 * (its Content-Length, or the bytes seen so far). body-parser itself reads the whole of an
 * over-limit body before it passes the error on ("read off entire request"), however large;
 * here the answer goes at once and drainUnreadBody reads what follows, within its bound.
 */
export function answerOverLimitAtOnce(parser: RequestHandler, limit: number, reads: (request: Request) => boolean): RequestHandler {
  return (request, response, next) => {
    // Only a body this parser reads is counted: a listener would start the stream flowing
    // under a later reader (multer's multipart parts).
    if (!reads(request)) return parser(request, response, next);
    if (Number(request.headers['content-length']) > limit) return next(tooLarge());
    let seen = 0;
    let answered = false;
    const count = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > limit && !answered) {
        answered = true;
        request.removeListener('data', count);
        next(tooLarge());
      }
    };
    request.on('data', count);
    parser(request, response, (error?: unknown) => {
      request.removeListener('data', count);
      if (answered) return;
      answered = true;
      next(error);
    });
  };
}
