/**
 * Deadlines of many tasks served by one timer, armed for the earliest: the number of timers
 * does not grow with the number of agents waiting out a grace (10,000 pods stuck on an image
 * pull are one timer, not 10,000). `onDue` runs for each key whose time has come.
 */
export class DueTimes {
  private readonly due = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Infinity;

  constructor(private readonly onDue: (key: string) => void) {}

  has(key: string): boolean {
    return this.due.has(key);
  }

  get size(): number {
    return this.due.size;
  }

  /** `key` is due `ms` from now (replacing any earlier time it had). */
  set(key: string, ms: number): void {
    const at = Date.now() + Math.max(0, ms);
    this.due.set(key, at);
    if (at < this.armedFor) this.arm(at);
  }

  /** A cleared key is never run; the timer may then fire with nothing due, and re-arms for the rest. */
  delete(key: string): void {
    this.due.delete(key);
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Infinity;
    this.due.clear();
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, at - Date.now()));
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Infinity;
    const now = Date.now();
    const ready: [string, number][] = [];
    let next = Infinity;
    for (const [key, at] of this.due) {
      if (at <= now) ready.push([key, at]);
      else next = Math.min(next, at);
    }
    for (const [key] of ready) this.due.delete(key);
    if (next < Infinity) this.arm(next);
    // Earliest first, also when a busy event loop let several come due at once.
    for (const [key] of ready.sort((a, b) => a[1] - b[1])) this.onDue(key);
  }
}
