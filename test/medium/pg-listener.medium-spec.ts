import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { Client } from 'pg';
import { PgListener } from '../../src/shared/database/pg-listener';
import { testServices } from '../harness/services';
import { waitFor } from '../harness/wait';

const logger = new Logger('pg-listener-spec');

/** A channel of this spec's own on the shared database: NOTIFY is database-wide. */
const channel = () => `spec_${randomBytes(6).toString('hex')}`;

/**
 * The queries sent on a `pg` client while another of its queries was still unanswered, from now
 * until `stop()`: pg queues them, which it deprecates (and pg 9 refuses).
 */
function overlappingQueries(): { overlaps: string[]; stop: () => void } {
  const overlaps: string[] = [];
  const original = Client.prototype.query;
  const inFlight = new WeakMap<object, number>();
  Client.prototype.query = function (this: Client, ...args: unknown[]) {
    const running = inFlight.get(this) ?? 0;
    if (running > 0) overlaps.push(String(typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text));
    inFlight.set(this, running + 1);
    const answer = (original as (...a: unknown[]) => unknown).apply(this, args);
    const done = () => inFlight.set(this, (inFlight.get(this) ?? 1) - 1);
    if (answer instanceof Promise) answer.then(done, done);
    else done();
    return answer;
  } as typeof Client.prototype.query;
  return { overlaps, stop: () => (Client.prototype.query = original) };
}

describe('one LISTEN/NOTIFY connection shared by many callers', () => {
  const url = testServices().databaseUrl;
  const listeners: PgListener[] = [];
  const listener = (name: string, onNotify: (payload: string | undefined) => void) => {
    const made = new PgListener(url, name, onNotify, logger);
    listeners.push(made);
    return made;
  };
  afterEach(async () => {
    await Promise.all(listeners.splice(0).map((made) => made.stop()));
  });

  it('sends NOTIFYs asked for at once one after another, each heard in order, with no query queued on the connection', async () => {
    const name = channel();
    const heard: string[] = [];
    const hearer = listener(name, (payload) => payload !== undefined && heard.push(payload));
    const sender = listener(name, () => undefined);
    await Promise.all([hearer.start(), sender.start()]);
    const { overlaps, stop } = overlappingQueries();
    try {
      const payloads = Array.from({ length: 50 }, (_, i) => `payload-${i}`);
      await Promise.all(payloads.map((payload) => sender.notify(payload)));
      await waitFor(() => heard.length === payloads.length, 5_000);
      expect(heard).toEqual(payloads);
      expect(overlaps).toEqual([]);
    } finally {
      stop();
    }
  });

  it('sends nothing before its LISTEN is answered, and says it is connected only then', async () => {
    const name = channel();
    const heard: string[] = [];
    const hearer = listener(name, (payload) => payload !== undefined && heard.push(payload));
    await hearer.start();
    const sender = listener(name, () => undefined);
    const { overlaps, stop } = overlappingQueries();
    try {
      const starting = sender.start();
      expect(sender.connected).toBe(false);
      await sender.notify('too early');
      await starting;
      expect(sender.connected).toBe(true);
      await sender.notify('in time');
      await waitFor(() => heard.length === 1, 5_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(heard).toEqual(['in time']);
      expect(overlaps).toEqual([]);
    } finally {
      stop();
    }
  });

  it('never says it is connected, nor sends, once stopped, even when stopped while its LISTEN was on the way', async () => {
    const sender = listener(channel(), () => undefined);
    const { overlaps, stop } = overlappingQueries();
    try {
      const starting = sender.start();
      await sender.stop();
      await starting;
      expect(sender.connected).toBe(false);
      await expect(sender.notify('after the stop')).resolves.toBeUndefined();
      expect(overlaps).toEqual([]);
    } finally {
      stop();
    }
  });
});
