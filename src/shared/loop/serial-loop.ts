import { context } from '@opentelemetry/api';
import { untracedContext } from '../logging/request-context';

/**
 * Runs one async round at a time: a kick during a round asks for one more round after
 * it, never a second one in parallel.
 */
export class SerialLoop {
  private running?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(private readonly round: () => Promise<void>, private readonly onError: (error: unknown) => void) {}

  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    // A round serves every task, not the request whose write kicked it: it starts no span of
    // that request's trace (a task's own steps open spans of the task's trace themselves).
    this.running = context.with(untracedContext(), this.round)
      .catch(this.onError)
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }
}
