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
    this.running = this.round()
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
