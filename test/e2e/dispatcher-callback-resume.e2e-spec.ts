import { makeTaskRequest, taskApi, waitFor } from '../harness/dispatcher';
import { DispatcherWithSql, startDispatcherWithSql } from '../harness/dispatcher-with-sql';
import { TestSystem } from '../harness/system';

/**
 * A dispatcher killed while sending a callback leaves the outbox row claimed (hidden for
 * the lease). When that replica starts again it sends the row at once.
 */
describe('a callback interrupted by a dispatcher stop', () => {
  let bench: DispatcherWithSql;
  let system: TestSystem;
  let receiver: DispatcherWithSql['receiver'];
  let db: DispatcherWithSql['db'];

  beforeAll(async () => {
    bench = await startDispatcherWithSql({ DISPATCHER_INSTANCE: 'replica-a' });
    ({ system, receiver, db } = bench);
  });
  afterAll(() => bench?.close());

  it('is sent again within seconds of the restart, not after its lease', async () => {
    const request = makeTaskRequest({ agent_image: 'agent-examples/sleep', brief_key: '', env: { SLEEP_SECONDS: '0' } });
    request.callback_url = receiver.callbackUrl(request.task_id);
    await taskApi(system).create(request);
    await waitFor(() => receiver.callbacks().length === 1, 20_000, 'the first callback');
    // The attempt records `delivered` after the answer: the rewrite below must come after that.
    await waitFor(async () => (await taskApi(system).get(request.task_id)).body.data.callback.state === 'delivered', 10_000, 'the delivered state');
    // As the row looks when its sender died mid-attempt: claimed by this replica, leased two minutes.
    await db.query(
      `UPDATE dispatcher.callback_outbox SET state = 'pending', delivered_at = NULL, claimed_by = 'replica-a',
         next_attempt_at = now() + interval '120 seconds' WHERE task_id = $1`,
      [request.task_id],
    );
    await system.restart();
    await waitFor(() => receiver.callbacks().length === 2, 10_000, 'the interrupted callback sent again');
    expect(receiver.callbacks()[1].raw).toBe(receiver.callbacks()[0].raw);
    // The receiver has the body before the dispatcher has its answer and records the delivery.
    await waitFor(async () => (await taskApi(system).get(request.task_id)).body.data.callback.state === 'delivered', 10_000, 'the resent callback recorded as delivered');
  }, 60_000);
});
