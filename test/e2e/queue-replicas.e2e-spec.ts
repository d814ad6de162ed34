import { DataSource } from 'typeorm';
import { createTask, getTask } from '../harness/controller-tasks';
import { RoleProcess } from '../harness/role-process';
import { startControllerReplica, startTestSystem, TestSystem } from '../harness/system';
import { readUntil, waitFor } from '../harness/wait';

// Replica B runs from dist/: `npm run build` first.
jest.setTimeout(180_000);

const KEY = 'acme/app';
const LIMIT = 2;

/**
 * A concurrency key's limit across two controller replicas (one process each, one database,
 * one dispatcher of capacity 4): tasks of the key posted to both at once never have more
 * than `limit` dispatched or running, checked every 25 ms from the first post to the last
 * task's end, and every one of them runs.
 */
describe('a concurrency limit across controller replicas', () => {
  let a: TestSystem;
  let b: RoleProcess;
  let bSystem: TestSystem;

  beforeAll(async () => {
    a = await startTestSystem({ role: 'all', storage: 's3', env: { MAX_CONCURRENT_TASKS: '4' } });
    ({ process: b, view: bSystem } = await startControllerReplica(a));
  });
  afterAll(async () => {
    await b?.stop();
    await a?.close();
  });

  it('never exceeds the limit whichever replica claims, and runs every task', async () => {
    const db = a.controller!.get(DataSource);
    const held = async () => {
      const [row] = await db.query(
        `SELECT count(*)::int AS held FROM "controller"."tasks" WHERE concurrency_key = $1 AND status IN ('dispatched', 'running')`,
        [KEY],
      );
      return Number(row.held);
    };
    const seen: number[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        seen.push(await held());
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    // Stopped however the test ends: a watcher left polling after a failed wait outlived the
    // system and its rejected query took the whole Jest process down instead of failing here.
    try {
      const task = {
        agent_image: 'agent-examples/sleep',
        env: { SLEEP_SECONDS: '1' },
        concurrency: { key: KEY, limit: LIMIT, strategy: 'queue' },
      };
      const created = await Promise.all(Array.from({ length: 12 }, (_, i) => createTask(i % 2 === 0 ? a : bSystem, task)));
      expect(created.map((answer) => answer.status)).toEqual(Array(12).fill(201));
      expect(created[0].body).toMatchObject({ priority: 0, concurrency_key: KEY });
      const guids = created.map((answer) => answer.body.guid as string);

      // While some wait, they say why. Other reasons may come first and be as true: with
      // 1 s heartbeats, a dispatcher heard more than 2 s ago is not online (CONTRACT.md), and a
      // loaded machine can hold a heartbeat back that long.
      const full = `concurrency limit of ${KEY} reached (${LIMIT}/${LIMIT})`;
      const reasons = new Set<string>();
      await readUntil(async () => {
        for (const guid of guids) {
          const view = (await getTask(a, guid)).body;
          if (view.status === 'pending' && view.waiting_reason) reasons.add(view.waiting_reason);
        }
      }, () => reasons.has(full), 30_000);
      expect([...reasons]).toContain(full);

      await waitFor(async () => {
        const views = await Promise.all(guids.map((guid) => getTask(a, guid)));
        return views.every((view) => view.body.status === 'completed');
      }, 150_000, 'every task to complete', 500);
    } finally {
      watching = false;
      await watcher;
    }
    expect(Math.max(...seen)).toBe(LIMIT);
    expect(seen.filter((count) => count > LIMIT)).toEqual([]);
  });
});
