import { SchedulerService } from '../../src/dispatcher/scheduler/scheduler.service';
import { makeTaskRequest, taskApi, waitFor } from '../harness/dispatcher';
import { DispatcherWithSql, startDispatcherWithSql } from '../harness/dispatcher-with-sql';

/**
 * A task's insert claims it for this replica only while the replica's scheduler runs: a task
 * that arrives after the scheduler's shutdown began (the HTTP server still answers while the
 * other shutdown steps run) is stored `pending` and unclaimed, and a start round of the next
 * replica on the database takes it up.
 */
describe('a task posted while the dispatcher\'s scheduler is stopping', () => {
  let bench: DispatcherWithSql;

  beforeAll(async () => {
    bench = await startDispatcherWithSql({ DISPATCHER_INSTANCE: 'replica-a' });
  });
  afterAll(() => bench?.close());

  it('is stored pending and unclaimed, and started by the replica that boots next', async () => {
    const { system, receiver, db } = bench;
    // The scheduler's own shutdown step, as the application's close runs it before the server closes.
    await system.dispatcher!.get(SchedulerService).onApplicationShutdown();

    const request = makeTaskRequest({ agent_image: 'agent-examples/sleep', brief_key: '', env: { SLEEP_SECONDS: '0' } });
    request.callback_url = receiver.callbackUrl(request.task_id);
    const created = await taskApi(system).create(request);
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ task_id: request.task_id, status: 'pending' });

    // Nothing here starts it: no claim with the insert, no start round.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const { rows: [row] } = await db.query('SELECT status, claimed_by, runtime_ref FROM dispatcher.tasks WHERE task_id = $1', [request.task_id]);
    expect(row).toEqual({ status: 'pending', claimed_by: null, runtime_ref: null });
    expect(receiver.callbacks()).toHaveLength(0);

    await system.restart();
    await waitFor(() => receiver.callbacks().length === 1, 20_000, 'the task started by the next replica and its callback');
    expect(receiver.callbacks()[0].path).toContain(request.task_id);
    expect(receiver.callbacks()[0].body).toMatchObject({ status: 'completed', exit_code: 0 });
    const { rows: [after] } = await db.query('SELECT status, claimed_by FROM dispatcher.tasks WHERE task_id = $1', [request.task_id]);
    expect(after).toEqual({ status: 'completed', claimed_by: 'replica-a' });
  }, 60_000);
});
