import { sentStatements } from '../harness/pg-statements';
import { startTestSystem, TestSystem } from '../harness/system';

jest.setTimeout(60_000);

const WINDOW_MS = 3000;
/** The scheduler's tick (`TasksRepository.tickProbe`): one statement twice a second. */
const TICK = /AS claimable,\s+ARRAY\(SELECT task_id::text/;
/** The questions it answers, each once a statement of its own on every tick (the callback outbox's claim once a second). */
const ASKED_ALONE = [
  /^SELECT EXISTS \(SELECT 1 FROM "dispatcher"\."tasks" WHERE status = 'pending'\)\s+AND \(SELECT count/,
  /^SELECT task_id FROM "dispatcher"\."tasks" WHERE status = ANY\(\$1\) AND deadline_at < now\(\)$/,
  /ORDER BY seq$/,
  /^WITH claimed AS \( UPDATE "dispatcher"\."callback_outbox"/,
];

/**
 * A dispatcher with nothing to do asks the database what its scheduler has to do in one
 * statement a tick: the start loop, the time-outs, the runtime watch and the callback
 * delivery each read nothing more until that statement found them something.
 */
describe('a dispatcher at rest', () => {
  let system: TestSystem;
  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher' });
    // Past the boot's own reads (recovery, the first rounds).
    await new Promise((resolve) => setTimeout(resolve, 1500));
  });
  afterAll(async () => {
    await system?.close();
  });

  it('sends one statement a tick, and none of the questions that statement answers', async () => {
    const sent = sentStatements();
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
    sent.stop();
    const texts = sent.texts.map((text) => text.replace(/\s+/g, ' ').trim());
    const ticks = sent.texts.filter((text) => TICK.test(text)).length;
    // 500 ms ticks: six in the window, fewer when a loaded machine holds the timer back.
    expect(ticks).toBeGreaterThanOrEqual(2);
    expect(ticks).toBeLessThanOrEqual(7);
    expect(texts.filter((text) => !TICK.test(text) && ASKED_ALONE.some((pattern) => pattern.test(text)))).toEqual([]);
  });
});
