import { DataSource } from 'typeorm';
import { ScheduleTicksRepository } from '../../src/controller/schedules/schedule-ticks.repository';
import { TasksRepository } from '../../src/controller/tasks/tasks.repository';
import { controllerDatabase, makeTaskRow, repositoryOn } from './controller-tasks';

/** The statement that stores a schedule tick with its task, raced by two replicas' pools. */
describe('ScheduleTicksRepository on PostgreSQL', () => {
  let sources: DataSource[];
  let close: () => Promise<void>;
  let tasks: TasksRepository[];
  let ticks: ScheduleTicksRepository;

  beforeAll(async () => {
    ({ sources, close } = await controllerDatabase(2));
    tasks = sources.map(repositoryOn);
    ticks = new ScheduleTicksRepository(sources[0]);
  });
  afterAll(() => close());

  async function workflow(id: string): Promise<string> {
    await sources[0].query(
      `INSERT INTO "controller"."workflows" (id, name, triggers, task_template) VALUES ($1, $1, '[]', '{}')`, [id],
    );
    return id;
  }

  /** Stores the tick's task through the given replica; null when the tick was not its to make. */
  const makeTick = (replica: number, workflowId: string, at: Date) => {
    const row = makeTaskRow({ workflowId });
    return tasks[replica].insertAfter(row, ticks.tickInsert(workflowId, at, row.guid!));
  };
  const taskCount = async (workflowId: string) =>
    (await sources[0].query(`SELECT count(*)::int AS n FROM "controller"."tasks" WHERE workflow_id = $1`, [workflowId]))[0].n as number;

  it('makes each tick once, however many replicas race for it', async () => {
    const id = await workflow('raced');
    const times = Array.from({ length: 20 }, (_, i) => new Date(Date.UTC(2026, 0, 1, 0, 0, i)));
    for (const at of times) {
      const made = await Promise.all([makeTick(0, id, at), makeTick(1, id, at), makeTick(0, id, at), makeTick(1, id, at)]);
      expect(made.filter(Boolean)).toHaveLength(1);
    }
    expect(await taskCount(id)).toBe(20);
    expect((await ticks.lastTicks([id, 'nothing-here'])).get(id)).toEqual(times.at(-1));
  });

  it('makes no tick behind a later one already stored', async () => {
    const id = await workflow('late-planner');
    expect(await makeTick(0, id, new Date('2026-01-01T00:00:10Z'))).not.toBeNull();
    expect(await makeTick(1, id, new Date('2026-01-01T00:00:09Z'))).toBeNull();
    expect(await makeTick(1, id, new Date('2026-01-01T00:00:11Z'))).not.toBeNull();
    expect(await taskCount(id)).toBe(2);
  });

  it("prunes day-old ticks but each workflow's latest, which is its schedule's state", async () => {
    const id = await workflow('pruned');
    for (let second = 0; second < 5; second++) await makeTick(0, id, new Date(Date.UTC(2026, 0, 1, 0, 0, second)));
    await sources[0].query(`UPDATE "controller"."schedule_ticks" SET created_at = now() - interval '2 days' WHERE workflow_id = $1`, [id]);
    expect(await ticks.prune()).toBe(4);
    expect((await ticks.lastTicks([id])).get(id)).toEqual(new Date(Date.UTC(2026, 0, 1, 0, 0, 4)));
    // Its tasks are untouched, and the pruned ticks still cannot be made again.
    expect(await makeTick(1, id, new Date(Date.UTC(2026, 0, 1, 0, 0, 2)))).toBeNull();
    expect(await taskCount(id)).toBe(5);
  });

  it('goes with its workflow', async () => {
    const id = await workflow('deleted');
    await makeTick(0, id, new Date('2026-01-01T00:00:00Z'));
    await sources[0].query(`DELETE FROM "controller"."workflows" WHERE id = $1`, [id]);
    expect((await ticks.lastTicks([id])).size).toBe(0);
  });
});
