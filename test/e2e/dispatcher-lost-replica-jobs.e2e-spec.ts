import { killAgents } from '../harness/agent-processes';
import { makeTaskRequest, taskApi, waitForStatus } from '../harness/dispatcher';
import { DispatcherWithSql, startDispatcherWithSql } from '../harness/dispatcher-with-sql';

/**
 * A lost replica's tasks as the database holds them: only the host-local ones are failed.
 * A Kubernetes Job runs on the cluster, so any replica follows it; its task is left alone.
 */
describe('the tasks of a lost replica, by backend', () => {
  let bench: DispatcherWithSql;
  const taskIds: string[] = [];

  beforeAll(async () => {
    bench = await startDispatcherWithSql({ DISPATCHER_INSTANCE: 'survivor', DISPATCHER_REPLICA_HEARTBEAT_SECONDS: '1', DISPATCHER_REPLICA_LOST_SECONDS: '3' });
  });
  afterAll(async () => {
    killAgents(taskIds);
    await bench?.close();
  });

  async function runningTask(): Promise<string> {
    const request = makeTaskRequest({ agent_image: 'agent-examples/sleep', brief_key: '', env: { SLEEP_SECONDS: '300' }, timeout_seconds: 600 });
    request.callback_url = bench.receiver.callbackUrl(request.task_id);
    taskIds.push(request.task_id);
    expect((await taskApi(bench.system).create(request)).status).toBe(201);
    await waitForStatus(bench.system, request.task_id, ['running'], 30_000);
    return request.task_id;
  }

  it('fails the host-local task and leaves the Job running', async () => {
    const [local, job] = [await runningTask(), await runningTask()];
    // As a replica that went silent a minute ago leaves them: one process agent, one Job. One
    // transaction, so the reaper never sees the Job's task half made (owned by the lost replica
    // but still marked host-local).
    await bench.db.query('BEGIN');
    await bench.db.query(`INSERT INTO dispatcher.replicas (instance, host_local_backends, last_seen) VALUES ('gone-host', '{local}', now() - interval '1 minute')`);
    await bench.db.query(`UPDATE dispatcher.tasks SET runtime_owner = 'gone-host' WHERE task_id = ANY($1)`, [[local, job]]);
    await bench.db.query(`UPDATE dispatcher.tasks SET runtime_backend = 'kubernetes', runtime_type = 'kubernetes' WHERE task_id = $1`, [job]);
    await bench.db.query('COMMIT');

    const failed = await waitForStatus(bench.system, local, ['failed'], 20_000);
    expect(failed.error_message).toContain('"gone-host"');
    const { rows: replicas } = await bench.db.query(`SELECT instance FROM dispatcher.replicas ORDER BY instance`);
    expect(replicas).toEqual([{ instance: 'survivor' }]);
    expect((await taskApi(bench.system).get(job)).body.data).toMatchObject({ status: 'running', error_message: null });
    const { rows: outbox } = await bench.db.query(`SELECT task_id FROM dispatcher.callback_outbox`);
    expect(outbox).toEqual([{ task_id: local }]);
  });
});
