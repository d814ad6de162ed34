import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { migrateRole } from '../../src/bootstrap';
import { CallbackPoster } from '../../src/dispatcher/callbacks/callback-poster';
import { ProgressForwarder } from '../../src/dispatcher/callbacks/progress-forwarder';
import { DISPATCHER_ENTITIES } from '../../src/dispatcher/entities';
import { CallbackTokenBox } from '../../src/dispatcher/tasks/callback-token-box';
import { TaskEntity } from '../../src/dispatcher/tasks/task.entity';
import { TasksRepository } from '../../src/dispatcher/tasks/tasks.repository';
import { AppConfig, loadConfig } from '../../src/shared/config/config';
import { roleDataSourceOptions } from '../../src/shared/database/data-sources';
import { startCallbackReceiver, waitFor } from '../harness/dispatcher';
import { testEnv } from '../harness/system';

jest.setTimeout(30_000);

/**
 * Before a report held back for its second is sent, the forwarder reads the task (a report due
 * after its end is left for the final callback); one that goes at once does not. A report that
 * comes while that read is slow, as on a loaded database, must still wait its second: the real
 * repository and the controller stand-in, with the first read held back until the next report is in.
 */
describe('progress forwarding while the task is being read', () => {
  let config: AppConfig;
  let db: DataSource;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;

  beforeAll(async () => {
    Logger.overrideLogger(false);
    config = loadConfig(await testEnv({ role: 'dispatcher' }));
    await migrateRole('dispatcher', config);
    db = await new DataSource(roleDataSourceOptions('dispatcher', { url: config.databaseUrl!, poolSize: 4, migrationsRun: false }, { entities: DISPATCHER_ENTITIES, migrations: [] })).initialize();
    receiver = await startCallbackReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await db?.destroy();
  });

  it('sends no two reports within a second when one comes while the one before is read for', async () => {
    const tokens = new CallbackTokenBox(config);
    const repository = new TasksRepository(db);
    const taskId = randomUUID();
    await repository.insertIfAbsent({
      taskId, agentImage: 'agent-examples/echo', runtimeType: 'local', runtimeNamespace: '', resources: { cpu: '1', memory: '1Gi' },
      env: {}, ports: [], briefKey: '', callbackUrl: receiver.callbackUrl(taskId), callbackTokenSealed: tokens.seal(`token-${taskId}`),
      timeoutSeconds: 60, requestDigest: 'd', status: 'running',
    });
    const task = (await repository.findById(taskId)) as TaskEntity;

    // The first read waits until the test lets it go; later ones go straight to PostgreSQL.
    let letFirstReadGo!: () => void;
    const firstReadHeld = new Promise<void>((resolve) => (letFirstReadGo = resolve));
    const read = repository.findById.bind(repository);
    let reads = 0;
    jest.spyOn(repository, 'findById').mockImplementation(async (id: string) => {
      if (reads++ === 0) await firstReadHeld;
      return read(id);
    });

    const forwarder = new ProgressForwarder(new CallbackPoster(config), tokens, repository);
    // The first report goes at once, on the task its statement found live: no read.
    forwarder.forward(task, { percentage: 10, message: 'first', data: {} });
    await waitFor(async () => receiver.progress().some((r) => r.body.percentage === 10), 5_000, 'the first report');
    expect(reads).toBe(0);
    // The next one is held back for its second, then read for.
    forwarder.forward(task, { percentage: 50, message: 'second', data: {} });
    await waitFor(async () => reads === 1, 5_000, 'the held-back report to be read for');
    forwarder.forward(task, { percentage: 90, message: 'third', data: {} });
    await new Promise((resolve) => setTimeout(resolve, 100));
    letFirstReadGo();

    // The latest report wins: 90 goes out (it replaced the second before that was sent);
    // whatever goes, never two within a second.
    await waitFor(async () => receiver.progress().some((r) => r.body.percentage === 90), 5_000, 'the latest report');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const reports = receiver.progress();
    expect(reports.at(-1)!.body).toEqual({ percentage: 90, message: 'third', data: {} });
    for (let i = 1; i < reports.length; i += 1) expect(reports[i].at - reports[i - 1].at).toBeGreaterThanOrEqual(800);
  });
});
