import { QUEUE_CLAIM_LOCK } from '../../src/controller/scheduling/queue-claim';
import { NO_DISPATCHER_ONLINE } from '../../src/controller/tasks/dispatch-loop';
import { createTask, getTask } from '../harness/controller-tasks';
import { sentStatements } from '../harness/pg-statements';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

jest.setTimeout(60_000);

/** The controller's probe (the dispatcher's start loop has a look of its own, also `AS claimable`). */
const PROBE = 'AS online';
const CLAIM = `pg_advisory_xact_lock(${QUEUE_CLAIM_LOCK})`;
const STORE = 'INSERT INTO "controller"."tasks"';

/**
 * The dispatch loop's lock-free probe spares a claim's transaction to the rounds that find
 * nothing to claim. A round woken by a task this process stored has one to claim: it claims
 * at once, its opening read answering what the probe would (a dispatcher online, a superseded
 * task to stop), one round trip sooner on the way from the request to the dispatcher.
 */
describe('a dispatch round woken by a task stored here', () => {
  let system: TestSystem;
  beforeAll(async () => {
    // No timer round during the test: every round is one a stored task woke.
    system = await startTestSystem({ role: 'all', env: { TASK_DISPATCH_RETRY_SECONDS: '600' } });
  });
  afterAll(async () => {
    await system?.close();
  });

  const dispatched = (guid: string) =>
    waitFor(async () => ['dispatched', 'running'].includes((await getTask(system, guid)).body.status as string), 20_000, `task ${guid} to be dispatched`);

  it('claims without probing first, and the task goes to the dispatcher', async () => {
    // The first task waits for the dispatcher's check-in; its agent runs on past the test, so no callback wakes a round.
    const sleeper = { agent_image: 'agent-examples/sleep', env: { SLEEP_SECONDS: '30' } };
    await dispatched((await createTask(system, sleeper)).body.guid as string);
    const sent = sentStatements();
    try {
      for (let i = 0; i < 4; i++) await dispatched((await createTask(system, sleeper)).body.guid as string);
    } finally {
      sent.stop();
    }
    // Between each task's INSERT and the claim that takes it, no probe: the round its store woke
    // claimed at once. (A round another wake-up starts still probes first.)
    const steps = sent.texts.filter((text) => text.includes(STORE) || text.includes(PROBE) || text.includes(CLAIM));
    const claims = steps.map((text, at) => (text.includes(CLAIM) ? at : -1)).filter((at) => at >= 0);
    expect(claims.length).toBeGreaterThanOrEqual(4);
    const before = claims.map((at) => steps.slice(0, at).reverse().find((text) => !text.includes(CLAIM)) ?? '');
    expect(before.filter((text) => !text.includes(STORE)).map((text) => text.replace(/\s+/g, ' ').slice(0, 60))).toEqual([]);
  });
});

describe('a dispatch round woken by a task stored here, with no dispatcher online', () => {
  let system: TestSystem;
  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller' });
  });
  afterAll(async () => {
    await system?.close();
  });

  it('claims nothing: the task waits, told why', async () => {
    const guid = (await createTask(system, { brief: { prompt: 'nobody home' } })).body.guid as string;
    const waiting = await waitFor(async () => {
      const task = (await getTask(system, guid)).body;
      return task.last_dispatch_error ? task : null;
    }, 20_000, `task ${guid} to be told why it waits`);
    expect(waiting).toMatchObject({ status: 'pending', last_dispatch_error: NO_DISPATCHER_ONLINE, dispatch_attempts: 0 });
  });
});
