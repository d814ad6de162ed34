/**
 * Readiness through a short outage of a backend's control plane: a Kubernetes API server
 * that stops answering for a few seconds (an upgrade, a leader election) must not take
 * every dispatcher out of its Service, since agents still reach them and running tasks
 * go on. Only an outage longer than the grace, or one with no success before it, is down.
 * Each process judges its own connection, so this state is rightly per process.
 */
export class OutageGrace {
  private lastSuccess: number | undefined;
  private failingSince: number | undefined;

  constructor(private readonly graceSeconds: number, private readonly now: () => number = Date.now) {}

  /** Runs the check; a failure within the grace resolves with what to say about it instead of throwing. */
  async check(ping: () => Promise<void>, timeoutMs = 2500): Promise<{ outage?: string }> {
    try {
      await within(ping(), timeoutMs);
      this.lastSuccess = this.now();
      this.failingSince = undefined;
      return {};
    } catch (error) {
      this.failingSince ??= this.now();
      const seconds = Math.round((this.now() - this.failingSince) / 1000);
      if (this.lastSuccess === undefined || seconds >= this.graceSeconds) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      return { outage: `unreachable for ${seconds} s (${reason}); still ready within the ${this.graceSeconds} s outage grace` };
    }
  }
}

/** A hung connection counts as a failure here, inside the grace, not only at the probe's own limit. */
async function within(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([work, new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}
