import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { migrateRole } from '../../src/bootstrap';
import { CallbackDeliveryService } from '../../src/dispatcher/callbacks/callback-delivery.service';
import { ProgressForwarder } from '../../src/dispatcher/callbacks/progress-forwarder';
import { CallbackPoster } from '../../src/dispatcher/callbacks/callback-poster';
import { DISPATCHER_ENTITIES } from '../../src/dispatcher/entities';
import { CallbackTokenBox } from '../../src/dispatcher/tasks/callback-token-box';
import { TaskSignals } from '../../src/dispatcher/tasks/task-signals';
import { TasksRepository } from '../../src/dispatcher/tasks/tasks.repository';
import { AppConfig, loadConfig } from '../../src/shared/config/config';
import { roleDataSourceOptions } from '../../src/shared/database/data-sources';
import { startCallbackReceiver, waitFor } from '../harness/dispatcher';
import { testEnv } from '../harness/system';

jest.setTimeout(30_000);

const CALLBACKS = 25;

// Two delivery loops on one database stand for two dispatcher replicas.
describe('callback outbox shared by replicas', () => {
  let config: AppConfig;
  let replicas: DataSource[];
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;

  beforeAll(async () => {
    Logger.overrideLogger(false);
    config = loadConfig(await testEnv({ role: 'dispatcher' }));
    await migrateRole('dispatcher', config);
    const options = roleDataSourceOptions('dispatcher', { url: config.databaseUrl!, poolSize: config.databasePoolSize, migrationsRun: false }, { entities: DISPATCHER_ENTITIES, migrations: [] });
    replicas = await Promise.all([new DataSource(options).initialize(), new DataSource(options).initialize()]);
    receiver = await startCallbackReceiver(Array.from({ length: 5 }, () => 503));
  });
  afterAll(async () => {
    await receiver?.close();
    await Promise.all((replicas ?? []).map((replica) => replica.destroy()));
  });

  async function finishedTask(repository: TasksRepository, tokens: CallbackTokenBox): Promise<string> {
    const taskId = randomUUID();
    await repository.insertIfAbsent({
      taskId, agentImage: 'agent-examples/echo', runtimeType: 'local', runtimeNamespace: '', resources: { cpu: '1', memory: '1Gi' },
      env: {}, ports: [], briefKey: '', callbackUrl: receiver.callbackUrl(taskId), callbackTokenSealed: tokens.seal(`token-${taskId}`),
      timeoutSeconds: 60, requestDigest: 'd', status: 'running',
    });
    await repository.transition(taskId, 'completed', { exitCode: 0, resultKey: `results/${taskId}/r.json` });
    return taskId;
  }

  it('delivers every callback exactly once when two replicas deliver at the same time', async () => {
    const tokens = new CallbackTokenBox(config);
    const repository = new TasksRepository(replicas[0]);
    const taskIds: string[] = [];
    for (let i = 0; i < CALLBACKS; i++) taskIds.push(await finishedTask(repository, tokens));

    // Each replica under its own name (DISPATCHER_INSTANCE), as two pods are: a replica's start
    // frees only the callbacks its own earlier run was sending.
    // Each woken as a replica's scheduler wakes it: its 500 ms tick asks whether a callback is
    // due (a backoff after the 503s over) and signals the delivery when one is.
    const ticks: NodeJS.Timeout[] = [];
    const loops = replicas.map((replica, i) => {
      const replicaConfig = { ...config, dispatcherInstance: `replica-${i}` };
      const poster = new CallbackPoster(replicaConfig);
      const replicaTasks = new TasksRepository(replica);
      const progress = new ProgressForwarder(poster, tokens, replicaTasks);
      const signals = new TaskSignals();
      ticks.push(setInterval(() => void replicaTasks.tickProbe(config.maxConcurrentTasks, null).then((probe) => probe.callbacksDue && signals.deliver.next()), 500));
      return new CallbackDeliveryService(replica, replicaConfig, poster, tokens, progress, signals);
    });
    loops.forEach((loop) => loop.onApplicationBootstrap());
    try {
      const accepted = () => receiver.callbacks().filter((request) => request.answeredWith === 200);
      await waitFor(async () => accepted().length >= CALLBACKS, 20_000, 'every callback');
      await new Promise((resolve) => setTimeout(resolve, 2500));
      const perTask = taskIds.map((taskId) => accepted().filter((request) => request.path.includes(taskId)).length);
      expect(perTask).toEqual(taskIds.map(() => 1));
      expect(accepted()[0].headers.authorization).toMatch(/^Bearer token-/);
    } finally {
      ticks.forEach((tick) => clearInterval(tick));
      await Promise.all(loops.map((loop) => loop.onApplicationShutdown()));
    }
  });
});
