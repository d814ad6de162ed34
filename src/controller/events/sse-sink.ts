import type { Response } from 'express';

/** How long a stream ended with bytes still unsent may take to hand them over before its socket is closed. */
const END_GRACE_MS = 10_000;

/**
 * One client's `text/event-stream` answer as the event fan-out writes to it: bytes go out
 * as they are given, and what the client has not taken yet is measured, so the fan-out can
 * bound it. The HTTP response stays here; the fan-out sees bytes, a measure and a close.
 */
export class SseSink {
  private onCloseListeners: (() => void)[] = [];
  private graceTimer?: NodeJS.Timeout;

  constructor(private readonly response: Response) {
    response.status(200);
    response.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    response.setHeader('Cache-Control', 'no-cache');
    response.setHeader('X-Accel-Buffering', 'no');
    response.flushHeaders();
    response.once('close', () => {
      clearTimeout(this.graceTimer);
      for (const listener of this.onCloseListeners) listener();
      this.onCloseListeners = [];
    });
  }

  get closed(): boolean {
    return this.response.destroyed || this.response.writableEnded;
  }

  /** Bytes given to this client that it has not taken yet (the response's buffer and its socket's). */
  get unsent(): number {
    return this.response.writableLength;
  }

  /** Queues `chunk` (the Buffer itself, shared with every other stream it is given to: never copied per stream). */
  write(chunk: Buffer): void {
    if (!this.closed) this.response.write(chunk);
  }

  /** Resolves once the socket took what was queued beyond its high-water mark, or the stream closed. */
  drained(): Promise<void> {
    if (this.closed || !this.response.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.response.off('drain', done);
        this.response.off('close', done);
        resolve();
      };
      this.response.once('drain', done);
      this.response.once('close', done);
    });
  }

  /**
   * Ends the stream after `lastLine`. A client that does not take the bytes still queued
   * within END_GRACE_MS loses its socket: an ended stream holds no memory for ever.
   */
  end(lastLine?: string): void {
    if (this.closed) return;
    this.response.end(lastLine);
    if (!this.response.destroyed) {
      this.graceTimer = setTimeout(() => this.response.destroy(), END_GRACE_MS);
      this.graceTimer.unref();
    }
  }

  onClose(listener: () => void): void {
    if (this.response.destroyed) listener();
    else this.onCloseListeners.push(listener);
  }
}
