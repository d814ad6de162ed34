import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { migrateRole } from '../../src/bootstrap';
import { CallbackOutboxEntity } from '../../src/dispatcher/callbacks/callback-outbox.entity';
import { DISPATCHER_ENTITIES } from '../../src/dispatcher/entities';
import { TaskEntity } from '../../src/dispatcher/tasks/task.entity';
import { TasksRepository } from '../../src/dispatcher/tasks/tasks.repository';
import { roleDataSourceOptions } from '../../src/shared/database/data-sources';
import { loadConfig } from '../../src/shared/config/config';
import { testEnv } from '../harness/system';

// Two data sources on one database stand for two dispatcher replicas.
describe('task state changes against PostgreSQL', () => {
  let replicas: DataSource[];
  let repositories: TasksRepository[];

  beforeAll(async () => {
    const config = loadConfig(await testEnv({ role: 'dispatcher' }));
    await migrateRole('dispatcher', config);
    const options = roleDataSourceOptions('dispatcher', { url: config.databaseUrl!, poolSize: config.databasePoolSize, migrationsRun: false }, { entities: DISPATCHER_ENTITIES, migrations: [] });
    replicas = await Promise.all([new DataSource(options).initialize(), new DataSource(options).initialize()]);
    repositories = replicas.map((replica) => new TasksRepository(replica));
  });
  afterAll(async () => {
    await Promise.all((replicas ?? []).map((replica) => replica.destroy()));
  });

  async function makeTask(status: TaskEntity['status'] = 'pending'): Promise<string> {
    const taskId = randomUUID();
    await repositories[0].insertIfAbsent({
      taskId, agentImage: 'agent-examples/echo', runtimeType: 'local', runtimeNamespace: '', resources: { cpu: '1', memory: '1Gi' },
      env: {}, ports: [], briefKey: '', callbackUrl: 'http://127.0.0.1:9/cb', callbackTokenSealed: 'v1.x', timeoutSeconds: 60,
      requestDigest: 'd', status,
    });
    return taskId;
  }

  it('lets exactly one of many racing final moves win, with exactly one callback queued', async () => {
    const taskId = await makeTask('running');
    const moves = (['completed', 'failed', 'timed_out', 'cancelled'] as const).flatMap((status) =>
      repositories.map((repository) => repository.transition(taskId, status, { exitCode: 0 })));
    const results = await Promise.all(moves);
    const winners = results.filter((task) => task !== null);
    expect(winners).toHaveLength(1);
    const stored = await repositories[1].findById(taskId);
    expect(stored?.status).toBe(winners[0]!.status);
    expect(stored?.finishedAt).toBeInstanceOf(Date);
    expect(await replicas[0].getRepository(CallbackOutboxEntity).countBy({ taskId })).toBe(1);
  });

  it('refuses moves the state machine does not allow', async () => {
    const pending = await makeTask('pending');
    expect(await repositories[0].transition(pending, 'running')).toBeNull();
    expect(await repositories[0].transition(pending, 'timed_out')).toBeNull();
    const done = await makeTask('completed');
    expect(await repositories[0].transition(done, 'failed')).toBeNull();
    expect(await repositories[0].transition(done, 'cancelled')).toBeNull();
    expect((await repositories[0].findById(done))?.status).toBe('completed');
  });

  it('never claims more than the capacity across replicas, oldest first', async () => {
    await replicas[0].query(`UPDATE "dispatcher"."tasks" SET status = 'failed' WHERE status IN ('pending', 'starting', 'running')`);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await makeTask());
    const claims = await Promise.all([1, 2, 3].flatMap(() => repositories.map((repository) => repository.claimPending(4))));
    const claimed = claims.flat().map((task) => task.taskId);
    expect(claimed).toHaveLength(4);
    expect(new Set(claimed)).toEqual(new Set(ids.slice(0, 4)));
    const started = await Promise.all(claimed.map((taskId) => repositories[0].findById(taskId)));
    expect(started.every((task) => task?.status === 'starting' && task.deadlineAt && task.runtimeBackend === 'local')).toBe(true);
  });
});
