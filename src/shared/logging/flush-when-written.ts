/** A destination that keeps lines until it has a block of them (sonic-boom with `minLength`), and writes what it keeps on `flush`. */
export interface BufferedSink {
  write(text: string): boolean;
  /** With a callback (pino's `logger.flush(cb)`): called once what waits is written. */
  flush(callback?: (error?: Error | null) => void): void;
  /** Ended (pino ends its destination when the event loop empties): a flush then throws. */
  readonly destroyed?: boolean;
}

/**
 * Log lines written in blocks, each at most about `maxWaitMs` after its first line, and no
 * timer at all while nothing is logged. sonic-boom's own `periodicFlush` flushed on an interval
 * whether or not a line had come: an empty write through the thread pool ten times a second on
 * a server at rest.
 *
 * The lines stay in the sink (which writes them out synchronously at the process's exit); this
 * only decides when to flush. A flush that meets a block still being written does nothing, so
 * the timer runs once more after the last line came, and writes what that flush left.
 */
export class FlushWhenWritten implements BufferedSink {
  private timer?: NodeJS.Timeout;
  /** A line came since the timer last fired. */
  private written = false;

  constructor(
    private readonly sink: BufferedSink,
    private readonly maxWaitMs: number,
  ) {}

  write(line: string): boolean {
    this.written = true;
    this.timer ??= this.arm();
    return this.sink.write(line);
  }

  flush(callback?: (error?: Error | null) => void): void {
    if (this.sink.destroyed) callback?.();
    else this.sink.flush(callback);
  }

  private arm(): NodeJS.Timeout {
    return setTimeout(() => {
      this.timer = undefined;
      if (this.sink.destroyed) return;
      this.sink.flush();
      if (!this.written) return;
      this.written = false;
      this.timer = this.arm();
    }, this.maxWaitMs).unref();
  }
}
