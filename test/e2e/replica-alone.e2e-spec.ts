import { createTask, getTask } from '../harness/controller-tasks';
import { sentStatements } from '../harness/pg-statements';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

jest.setTimeout(60_000);

/**
 * One process in the `all` role on PostgreSQL, with no other replica: what its loops tell each
 * other stays in the process. The event feed and the subscription outbox share one signal on
 * the events channel, so neither counts the other as a replica to notify.
 */
describe('a replica alone on its database', () => {
  let system: TestSystem;
  beforeAll(async () => {
    system = await startTestSystem({ role: 'all' });
  });
  afterAll(async () => {
    await system?.close();
  });

  it('runs tasks to completion sending at most one look a second on each channel, not a NOTIFY per write', async () => {
    const sent = sentStatements();
    const began = Date.now();
    try {
      const guids: string[] = [];
      for (let i = 0; i < 8; i++) guids.push((await createTask(system, { brief: { prompt: `alone ${i}` } })).body.guid as string);
      for (const guid of guids) {
        await waitFor(async () => (await getTask(system, guid)).body.status === 'completed', 30_000, `task ${guid} to complete`);
      }
    } finally {
      sent.stop();
    }
    const seconds = Math.floor((Date.now() - began) / 1_000) + 1;
    const looks = sent.texts.filter((text) => text.includes('pg_notify'));
    // Two channels a process announces on: the tasks' and the events'.
    expect(looks.length).toBeLessThanOrEqual(2 * seconds);
  });
});
