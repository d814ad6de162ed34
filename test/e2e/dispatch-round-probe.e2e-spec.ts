import { QUEUE_CLAIM_LOCK } from '../../src/controller/scheduling/queue-claim';
import { NO_DISPATCHER_ONLINE } from '../../src/controller/tasks/dispatch-loop';
import { createTask, getTask } from '../harness/controller-tasks';
import { http } from '../harness/http';
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

  it('records the offer to the dispatcher it chose in the claim, and the callback with that token closes the task', async () => {
    // The claim chooses a dispatcher (and holds its slot) once the dispatcher's heartbeat has told its capacity.
    await waitFor(async () => {
      const listed = await http('GET', `${system.controllerUrl}/api/v1/dispatchers/`, { headers: { authorization: `Token ${system.apiToken}` } });
      return (listed.body as { capacity: number | null }[]).some((dispatcher) => dispatcher.capacity !== null);
    }, 10_000, 'the dispatcher to report its capacity');
    const sent = sentStatements();
    let task: Awaited<ReturnType<typeof getTask>>;
    try {
      const guid = (await createTask(system, { agent_image: 'agent-examples/echo' })).body.guid as string;
      task = await waitFor(async () => {
        const read = await getTask(system, guid);
        return read.body.status === 'completed' ? read : null;
      }, 30_000, 'the echo task to complete');
    } finally {
      sent.stop();
    }
    expect(task.body).toMatchObject({ status: 'completed', dispatch_attempts: 1 });
    expect(sent.texts.filter((text) => text.includes('callback_token_hash = coalesce(v.hash'))).toHaveLength(1);
    // The offer's own statement (TasksRepository.assign) is left to a failover.
    expect(sent.texts.filter((text) => /SET callback_token_hash = v\.hash/.test(text))).toEqual([]);
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
