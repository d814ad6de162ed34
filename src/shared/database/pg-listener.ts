import { Logger } from '@nestjs/common';
import { Client } from 'pg';

const RECONNECT_MS = [500, 1000, 2000, 5000];

/**
 * One plain `pg` connection that LISTENs on a channel (a pooled connection cannot hold
 * LISTEN) and can NOTIFY on it. When the connection drops it reconnects with backoff and
 * calls `onNotify` once connected again, since notifications sent meanwhile are lost: the
 * callers treat that as "something may have changed". Written here rather than taken from
 * a library because it is these thirty lines on top of `pg`, which the project has.
 */
export class PgListener {
  private client?: Client;
  /** Set once the connection's LISTEN has been answered: only then is it used for a NOTIFY. */
  private listening = false;
  private stopped = false;
  private attempt = 0;
  /** The NOTIFY under way, if any: the next one waits for it. */
  private sending: Promise<void> = Promise.resolve();
  /** Settles at `stop()`: a connect under way is not waited for past it (pg leaves its promise unsettled when ended meanwhile). */
  private readonly halted: Promise<'stopped'>;
  private halt!: () => void;

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly onNotify: (payload: string | undefined) => void,
    private readonly logger: Logger,
  ) {
    this.halted = new Promise((resolve) => (this.halt = () => resolve('stopped')));
  }

  start(): Promise<void> {
    return this.connect();
  }

  /** True while connected and listening. */
  get connected(): boolean {
    return this.listening;
  }

  /**
   * NOTIFYs on the channel, one at a time however many callers ask at once: `pg` queues a query
   * sent while another runs on its connection, which it deprecates (and pg 9 refuses). Without a
   * listening connection it sends nothing; the reconnect's `onNotify` stands for what was missed.
   */
  notify(payload: string): Promise<void> {
    const sent = this.sending.then(async () => {
      const client = this.listening ? this.client : undefined;
      await client?.query('SELECT pg_notify($1, $2)', [this.channel, payload]);
    });
    this.sending = sent.catch(() => undefined);
    return sent;
  }

  /**
   * NOTIFYs as `notify` does, but only when another connection listens on the channel (a
   * listener of this class, on this database, other than this one), in the same statement
   * that looks: answers whether one did. A replica alone is told nothing and sends nothing.
   */
  notifyOthers(payload: string): Promise<boolean> {
    const sent = this.sending.then(async () => {
      const client = this.listening ? this.client : undefined;
      if (!client) return true;
      const { rows } = await client.query<{ others: number }>(
        `SELECT count(*)::int AS others, CASE WHEN count(*) > 0 THEN pg_notify($1, $2) END AS sent
         FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = $3 AND pid <> pg_backend_pid()`,
        [this.channel, payload, this.applicationName],
      );
      return rows[0].others > 0;
    });
    this.sending = sent.then(() => undefined, () => undefined);
    return sent;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.listening = false;
    this.halt();
    await this.client?.end().catch(() => undefined);
  }

  /** How the listeners of a channel are told apart from other connections (pg_stat_activity). */
  private get applicationName(): string {
    return `agent-tasks-${this.channel}`;
  }

  private async connect(): Promise<void> {
    const client = new Client({ connectionString: this.url, application_name: this.applicationName });
    client.on('notification', (message) => this.onNotify(message.payload));
    client.on('error', (error) => this.logger.warn({ err: error }, `The ${this.channel} listener lost its connection`));
    client.on('end', () => this.reconnect(client));
    this.client = client;
    try {
      if ((await Promise.race([client.connect(), this.halted])) === 'stopped') return;
      await client.query(`LISTEN ${this.channel}`);
      // Stopped, or replaced by a reconnect, while its LISTEN was on the way.
      if (this.stopped || client !== this.client) return;
      this.listening = true;
      this.attempt = 0;
      this.onNotify(undefined);
    } catch (error) {
      this.logger.warn({ err: error }, `The ${this.channel} listener could not connect; trying again`);
      await client.end().catch(() => undefined);
      this.reconnect(client);
    }
  }

  /** Once per lost connection: `end` and a failed connect may both report the same one. */
  private reconnect(client: Client): void {
    if (this.stopped || client !== this.client) return;
    this.client = undefined;
    this.listening = false;
    const delay = RECONNECT_MS[Math.min(this.attempt++, RECONNECT_MS.length - 1)];
    setTimeout(() => void this.connect(), delay).unref();
  }
}
