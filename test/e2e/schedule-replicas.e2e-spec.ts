import { Client } from 'pg';
import { http } from '../harness/http';
import { RoleProcess } from '../harness/role-process';
import { testEnv } from '../harness/system';
import { makeWorkflow } from '../harness/webhooks';
import { waitFor } from '../harness/wait';

// The replicas run from dist/: `npm run build` first.
jest.setTimeout(240_000);

const TICKS = 100;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A seconds schedule across two controller processes on one database: every tick makes
 * exactly one task while replicas die and come back, and after both were down the missed
 * ticks are caught up as each workflow says (latest: the most recent once; none: none).
 */
describe('schedules across two controller replicas', () => {
  let replicas: RoleProcess[] = [];
  let db: Client;
  let controllerUrl: string;
  let auth: Record<string, string>;

  beforeAll(async () => {
    const first = await testEnv({ role: 'controller', redis: false });
    const second = await testEnv({ role: 'controller', redis: false, databaseUrl: first.DATABASE_URL });
    for (const name of ['API_TOKEN', 'SECRET_KEY', 'CALLBACK_SIGNING_KEY', 'DISPATCHER_API_KEY']) second[name] = first[name];
    replicas = [first, second].map((env) => new RoleProcess(env, `http://127.0.0.1:${env.CONTROLLER_PORT}/health/`));
    await replicas[0].start();
    await replicas[1].start();
    controllerUrl = `http://127.0.0.1:${first.CONTROLLER_PORT}`;
    auth = { authorization: `Token ${first.API_TOKEN}` };
    db = new Client({ connectionString: first.DATABASE_URL });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await Promise.all(replicas.map((replica) => replica.stop()));
  });

  /** Tick times (ms) each task of a workflow was made for, as its brief says, in the order they were stored. */
  async function tickTimes(workflow: string): Promise<number[]> {
    const rows: { at: string | null }[] = (await db.query(
      `SELECT brief_pending::jsonb->>'at' AS at FROM controller.tasks WHERE workflow_id = $1 ORDER BY created_at, guid`, [workflow],
    )).rows;
    return rows.map((row) => Date.parse(row.at!));
  }

  async function createWorkflow(id: string, catchUp: string): Promise<void> {
    const body = makeWorkflow(id, { triggers: [{ source: 'schedule', cron: '* * * * * *', catch_up: catchUp }] });
    (body.task_template as Record<string, unknown>).brief = { at: '{{schedule.time}}', previous: '{{schedule.previous_time}}' };
    expect((await http('POST', `${controllerUrl}/api/v1/workflows/`, { json: body, headers: auth })).status).toBe(201);
  }

  const countAtLeast = (workflow: string, n: number, what: string) =>
    waitFor(async () => (await tickTimes(workflow)).length >= n, 60_000, what, 200);

  it(`makes every one of ${TICKS} ticks exactly once while a replica is killed and comes back`, async () => {
    await createWorkflow('tick-latest', 'latest');
    await createWorkflow('tick-none', 'none');
    await countAtLeast('tick-latest', 40, '40 ticks');
    await replicas[0].kill();
    await countAtLeast('tick-latest', 60, '60 ticks with one replica');
    await replicas[0].start();
    await countAtLeast('tick-latest', TICKS + 5, `${TICKS} ticks`);

    for (const workflow of ['tick-latest', 'tick-none']) {
      // The ticks go on while this reads: the tasks and the ledger are read in one snapshot.
      await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      const times = await tickTimes(workflow);
      const ledger = (await db.query(`SELECT count(*)::int AS n FROM controller.schedule_ticks WHERE workflow_id = $1`, [workflow])).rows[0].n;
      await db.query('COMMIT');
      const sorted = [...times].sort((a, b) => a - b);
      expect(new Set(times).size).toBe(times.length);
      // None lost: consecutive seconds from the first tick to the last.
      expect(sorted.at(-1)! - sorted[0]).toBe((sorted.length - 1) * 1000);
      expect(sorted.length).toBeGreaterThanOrEqual(TICKS);
      expect(ledger).toBe(times.length);
    }
  });

  it('after both replicas were down, latest makes the most recent missed tick once and none makes none', async () => {
    await Promise.all(replicas.map((replica) => replica.stop()));
    const lastLatest = Math.max(...(await tickTimes('tick-latest')));
    const lastNone = Math.max(...(await tickTimes('tick-none')));
    await sleep(4000);
    const restartedAt = Date.now();
    await Promise.all(replicas.map((replica) => replica.start()));
    const readyAt = Date.now();
    await waitFor(async () => Math.max(...(await tickTimes('tick-none'))) >= readyAt + 2000, 20_000, 'ticks after the restart', 200);

    const after = async (workflow: string, last: number) => (await tickTimes(workflow)).filter((time) => time > last).sort((a, b) => a - b);
    const latest = await after('tick-latest', lastLatest);
    const none = await after('tick-none', lastNone);
    // Nothing from the downtime itself, on either.
    expect(latest[0]).toBeGreaterThanOrEqual(Math.floor(restartedAt / 1000) * 1000 - 1000);
    expect(none[0]).toBeGreaterThanOrEqual(restartedAt);
    // latest: one tick more than none, the missed one just before the replicas' first round.
    expect(latest[0]).toBe(none[0] - 1000);
    const end = Math.min(latest.at(-1)!, none.at(-1)!);
    expect(latest.filter((time) => time <= end).slice(1)).toEqual(none.filter((time) => time <= end));
    // After that, every second again.
    expect(none.at(-1)! - none[0]).toBe((none.length - 1) * 1000);
  });
});
