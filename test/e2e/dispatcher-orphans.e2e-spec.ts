import { makeTaskRequest, taskApi, waitForStatus } from '../harness/dispatcher';
import { DispatcherWithSql, startDispatcherWithSql } from '../harness/dispatcher-with-sql';
import { TestSystem } from '../harness/system';

/**
 * A dispatcher that claimed a task (`starting`) and was killed before it handed the task to
 * its runtime leaves an orphan. Another process (or this one after a restart) starts it.
 */
describe('a task claimed by a dispatcher that stopped before starting its agent', () => {
  let bench: DispatcherWithSql;
  let system: TestSystem;
  let receiver: DispatcherWithSql['receiver'];
  let db: DispatcherWithSql['db'];

  beforeAll(async () => {
    bench = await startDispatcherWithSql({ MAX_CONCURRENT_TASKS: '1', DISPATCHER_INSTANCE: 'orphans-replica' });
    ({ system, receiver, db } = bench);
  });
  afterAll(() => bench?.close());

  const sleepTask = (seconds: number) => {
    const request = makeTaskRequest({ agent_image: 'agent-examples/sleep', brief_key: '', timeout_seconds: 600, env: { SLEEP_SECONDS: String(seconds) } });
    request.callback_url = receiver.callbackUrl(request.task_id);
    return request;
  };

  it('is started and runs to its end instead of failing', async () => {
    const api = taskApi(system);
    const busy = sleepTask(60);
    await api.create(busy);
    await waitForStatus(system, busy.task_id, ['running']);
    // The one slot is taken, so this task waits; then it is made to look claimed two minutes
    // ago by a process that never submitted it.
    const orphan = sleepTask(1);
    await api.create(orphan);
    await db.query(
      `UPDATE dispatcher.tasks SET status = 'starting', runtime_backend = runtime_type, started_at = now() - interval '2 minutes',
         deadline_at = now() - interval '2 minutes' + make_interval(secs => timeout_seconds) WHERE task_id = $1 AND status = 'pending'`,
      [orphan.task_id],
    );

    const ended = await waitForStatus(system, orphan.task_id, ['completed', 'failed', 'timed_out', 'cancelled'], 30_000);
    expect(ended).toMatchObject({ status: 'completed', result_metadata: { slept_seconds: 1 } });
    // Its time-out counted from the new start, not from the lost claim.
    expect(Date.parse(ended.started_at)).toBeGreaterThan(Date.now() - 60_000);
    await api.cancel(busy.task_id);
  }, 60_000);

  it('is started as soon as the replica that claimed it starts again, not after the orphan wait', async () => {
    const api = taskApi(system);
    const busy = sleepTask(60);
    await api.create(busy);
    await waitForStatus(system, busy.task_id, ['running']);
    // Claimed a moment ago by this replica, which then stopped before submitting it.
    const orphan = sleepTask(1);
    await api.create(orphan);
    await db.query(
      `UPDATE dispatcher.tasks SET status = 'starting', runtime_backend = runtime_type, started_at = now(), claimed_by = 'orphans-replica',
         deadline_at = now() + make_interval(secs => timeout_seconds) WHERE task_id = $1 AND status = 'pending'`,
      [orphan.task_id],
    );
    await system.restart();
    const restartedAt = Date.now();
    const ended = await waitForStatus(system, orphan.task_id, ['completed', 'failed', 'timed_out', 'cancelled'], 30_000);
    expect(ended).toMatchObject({ status: 'completed', result_metadata: { slept_seconds: 1 } });
    expect(Date.now() - restartedAt).toBeLessThan(30_000);
    await api.cancel(busy.task_id);
  }, 60_000);
});
