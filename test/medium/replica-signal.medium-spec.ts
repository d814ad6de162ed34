import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { ReplicaSignal } from '../../src/shared/database/replica-signal';
import { testServices } from '../harness/services';
import { sentStatements } from '../harness/pg-statements';
import { waitFor } from '../harness/wait';

const logger = new Logger('replica-signal-spec');

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** "Something was written" between replicas, and nothing sent by a replica alone. */
describe('ReplicaSignal on PostgreSQL', () => {
  const url = testServices().databaseUrl;
  const signals: ReplicaSignal[] = [];
  /** A replica on the channel, counting what it hears from the others. */
  const replica = async (channel: string) => {
    const signal = new ReplicaSignal(channel, logger);
    signals.push(signal);
    const heard = { count: 0 };
    await signal.start(url, false, () => heard.count++);
    return { signal, heard };
  };
  afterEach(async () => {
    await Promise.all(signals.splice(0).map((signal) => signal.stop()));
  });

  it('sends no NOTIFY while no other replica listens: one look a second however many writes', async () => {
    const channel = `spec_${randomBytes(6).toString('hex')}`;
    const alone = await replica(channel);
    const sent = sentStatements();
    const began = Date.now();
    try {
      for (let i = 0; i < 20; i++) {
        alone.signal.announce();
        await pause(60);
      }
    } finally {
      sent.stop();
    }
    const elapsed = Date.now() - began;
    // Writes announced every 60 ms (1.2 s, longer on a loaded machine): at most one look a second
    // of the run, and one more where the run began inside the second the start's look opened.
    const looks = sent.texts.filter((text) => text.includes('pg_notify'));
    expect(looks.length).toBeGreaterThanOrEqual(1);
    expect(looks.length).toBeLessThanOrEqual(Math.floor(elapsed / 1_000) + 1);
  });

  it('tells a replica of another one\'s writes, and a replica that starts ends the others\' silence at once', async () => {
    const channel = `spec_${randomBytes(6).toString('hex')}`;
    const first = await replica(channel);
    first.signal.announce();
    await pause(150);
    // Alone, it now sends nothing for a second; the second replica's start is heard at once.
    const second = await replica(channel);
    await waitFor(() => first.heard.count >= 2, 2_000, 'the first replica to hear the second start (after its own connect)');
    const before = second.heard.count;
    first.signal.announce();
    await waitFor(() => second.heard.count > before, 500, 'the second replica to hear the first write well within the silence');
    const firstBefore = first.heard.count;
    second.signal.announce();
    await waitFor(() => first.heard.count > firstBefore, 500, 'the first replica to hear the second write');
  });
});
