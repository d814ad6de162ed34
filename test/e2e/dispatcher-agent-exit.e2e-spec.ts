import { RuntimeRegistry } from '../../src/dispatcher/runtime/runtime-registry';
import { makeTaskRequest, startCallbackReceiver, taskApi, waitFor } from '../harness/dispatcher';
import { sentStatements } from '../harness/pg-statements';
import { startTestSystem, TestSystem } from '../harness/system';

// Agents run from dist/: `npx tsc -p tsconfig.build.json` first.
jest.setTimeout(60_000);

const READ_BY_ID = /^SELECT .* FROM "dispatcher"\."tasks" WHERE task_id = \$1/s;
const FINAL_MOVE = /^WITH moved AS \(\s*UPDATE "dispatcher"\."tasks" SET status = \$2, exit_code/;

/**
 * The runtime reports each agent's exit, and the dispatcher removes the agent once its task is
 * final. A task that ended here (its agent checked back to this replica) is final already, and
 * a final row never changes: its agent's exit is applied, and the agent removed, without
 * reading the task again. The statements of the rest of its life give back what the next step
 * needs, so the task is read at most once in all (a progress report held back for its second).
 */
describe('an agent that exits after checking back here', () => {
  let system: TestSystem;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    system = await startTestSystem({ role: 'dispatcher' });
  });
  afterAll(async () => {
    await system?.close();
    await receiver?.close();
  });

  it('is removed without a read of its task, and the task is completed with its progress, its output stored and its callback sent', async () => {
    const runtimes = system.dispatcher!.get(RuntimeRegistry);
    const request = makeTaskRequest({ brief_key: '', agent_image: 'agent-examples/echo' });
    request.callback_url = receiver.callbackUrl(request.task_id);
    const sent = sentStatements();
    try {
      expect((await taskApi(system).create(request)).status).toBe(201);
      await waitFor(() => receiver.callbacks().find((callback) => callback.path.includes(request.task_id)), 30_000, 'the callback');
      // Removed at its exit (the echo agent ends right after its check-back), well within the grace.
      await waitFor(async () => runtimes.endedTask(request.task_id) === undefined || null, 10_000, 'the agent to be removed');
    } finally {
      sent.stop();
    }
    // From the check-back's final move on, no read of the task. Before it, the agent's two
    // progress reports are recorded by statements that give the live task back: only a report
    // held back for its second may read whether the task has ended meanwhile.
    const checkBack = sent.texts.findIndex((text) => FINAL_MOVE.test(text));
    expect(checkBack).toBeGreaterThan(0);
    expect(sent.texts.slice(checkBack).filter((text) => READ_BY_ID.test(text))).toEqual([]);
    expect(sent.texts.filter((text) => text.includes('SET progress_percentage'))).toHaveLength(2);
    expect(sent.texts.slice(0, checkBack).filter((text) => READ_BY_ID.test(text)).length).toBeLessThanOrEqual(1);
    const task = (await taskApi(system).get(request.task_id)).body.data;
    expect(task).toMatchObject({ status: 'completed', exit_code: 0 });
    // The statement that records the stored output also takes the callback it lets go, which
    // is then delivered, once: no round of the outbox had to claim it.
    const stored = sent.texts.filter((text) => text.includes('logs_stored_at = now()'));
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatch(/UPDATE "dispatcher"\."callback_outbox" o SET .*claimed_by = \$3/s);
    expect(receiver.callbacks().filter((callback) => callback.path.includes(request.task_id))).toHaveLength(1);
  });
});
