import { DataSource } from 'typeorm';
import { ConcurrencyAdmission } from '../../src/controller/scheduling/concurrency-admission';
import { Task } from '../../src/controller/tasks/tasks.entity';
import { TasksRepository } from '../../src/controller/tasks/tasks.repository';
import { controllerDatabase, makeTaskRow, repositoryOn } from './controller-tasks';

/**
 * A key's admission (cancel_newest, cancel_in_progress) on a pool of one connection, as the
 * embedded database has: every statement of the decision must run on the transaction that
 * holds the key's lock, or the admission waits for a connection that never comes.
 */
describe('concurrency admission on a pool of one connection', () => {
  let source: DataSource;
  let close: () => Promise<void>;
  let tasks: TasksRepository;
  let admission: ConcurrencyAdmission;

  beforeAll(async () => {
    let sources: DataSource[];
    ({ sources, close } = await controllerDatabase(1, 1));
    [source] = sources;
    tasks = repositoryOn(source);
    admission = new ConcurrencyAdmission(source, tasks);
  });
  afterAll(() => close());
  beforeEach(() => source.query(`DELETE FROM "controller"."tasks"`));

  const keyed = (strategy: Task['concurrencyStrategy'], overrides: Partial<Task> = {}) => tasks.insert(makeTaskRow({
    concurrencyKey: 'repo-a', concurrencyLimit: 1, concurrencyStrategy: strategy, fairnessGroup: 'key:repo-a',
    nextDispatchAt: new Date(Date.now() + 30_000), ...overrides,
  }));

  it('cancels the newest task when its key is full (cancel_newest)', async () => {
    await keyed('cancel_newest', { status: 'running', nextDispatchAt: null });
    const admitted = await admission.admit(await keyed('cancel_newest'));
    expect(admitted.status).toBe('cancelled');
    expect(admitted.errorMessage).toContain('concurrency limit of repo-a reached (1/1)');
  }, 10_000);

  it('lets the new task into the queue at once while its key has room', async () => {
    const admitted = await admission.admit(await keyed('cancel_newest'));
    expect(admitted.status).toBe('pending');
    expect(admitted.nextDispatchAt).toBeNull();
  }, 10_000);

  it('replaces the waiting task and supersedes the running one (cancel_in_progress)', async () => {
    const running = await keyed('cancel_in_progress', { status: 'running', nextDispatchAt: null });
    const waiting = await keyed('cancel_in_progress', { nextDispatchAt: null });
    const admitted = await admission.admit(await keyed('cancel_in_progress'));
    expect(admitted.status).toBe('pending');
    expect(admitted.nextDispatchAt).toBeNull();
    expect((await tasks.findByGuid(waiting.guid))?.status).toBe('cancelled');
    expect((await tasks.findByGuid(running.guid))?.supersededBy).toBe(admitted.guid);
  }, 10_000);
});
