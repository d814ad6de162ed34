import { DataSource } from 'typeorm';
import { TasksRepository, TokenCompletion } from '../../src/controller/tasks/tasks.repository';
import { controllerDatabase, makeTaskRow, repositoryOn } from './controller-tasks';

const outcome = (exitCode: number): TokenCompletion['outcome'] => ({ exitCode, resultKey: `results/${exitCode}.json`, resultMetadata: { pages: exitCode, quote: "it's \"x\"" }, errorMessage: null });

/**
 * Completions by the callback token's holder, many in one statement (the callbacks' group
 * commit): each task whose token matches and that is still open moves once, with its own
 * outcome and one `task.finished` event; the rest answer false and stay as they were.
 */
describe('completions by callback token, many in one statement', () => {
  let source: DataSource;
  let close: () => Promise<void>;
  let tasks: TasksRepository;

  beforeAll(async () => {
    ({ sources: [source], close } = await controllerDatabase(1));
    tasks = repositoryOn(source);
  });
  afterAll(() => close());

  /** A dispatched task whose callback token hashes to `hash-<n>`. */
  async function dispatched(n: number, status = 'dispatched'): Promise<string> {
    const task = await tasks.insert(makeTaskRow());
    await source.query(`UPDATE "controller"."tasks" SET status = $2, callback_token_hash = $3 WHERE guid = $1`, [task.guid, status, `hash-${n}`]);
    return task.guid;
  }

  it('moves each open task whose token matches, once, with its own outcome', async () => {
    const guids = await Promise.all(Array.from({ length: 40 }, (_, n) => dispatched(n, n % 2 === 0 ? 'dispatched' : 'running')));
    const done = await dispatched(100, 'completed');
    const items: TokenCompletion[] = [
      ...guids.map((guid, n) => ({ guid, tokenHash: `hash-${n}`, outcome: outcome(n) })),
      { guid: guids[0], tokenHash: 'hash-0', outcome: outcome(99) },
      { guid: done, tokenHash: 'hash-100', outcome: outcome(100) },
      { guid: await dispatched(101), tokenHash: 'not-its-hash', outcome: outcome(101) },
    ];
    const answers = await tasks.completeByTokens(items);
    expect(answers.map((answer) => answer.moved)).toEqual([...guids.map(() => true), false, false, false]);

    const rows = await source.query(
      `SELECT guid, status, exit_code, result_key, result_metadata, finished_at IS NOT NULL AS finished FROM "controller"."tasks" WHERE guid = ANY($1)`, [guids],
    );
    const byGuid = new Map(rows.map((row: { guid: string }) => [row.guid, row]));
    guids.forEach((guid, n) => expect(byGuid.get(guid)).toEqual({
      guid, status: 'completed', exit_code: n, result_key: `results/${n}.json`, result_metadata: { pages: n, quote: "it's \"x\"" }, finished: true,
    }));
    const events = await source.query(`SELECT task_guid, count(*)::int AS n FROM "controller"."events" WHERE kind = 'task.finished' AND task_guid = ANY($1) GROUP BY task_guid`, [[...guids, done]]);
    expect(events).toHaveLength(40);
    expect(events.every((event: { n: number }) => event.n === 1)).toBe(true);
    const untouched = await source.query(`SELECT status, exit_code FROM "controller"."tasks" WHERE guid = $1`, [items.at(-1)!.guid]);
    expect(untouched).toEqual([{ status: 'dispatched', exit_code: null }]);
  });

  it('tells with the moves whether a pending task is due and unclaimed, the dispatch loop\'s question', async () => {
    await source.query(`UPDATE "controller"."tasks" SET status = 'cancelled' WHERE status = 'pending'`);
    const alone = await dispatched(200);
    expect(await tasks.completeByTokens([{ guid: alone, tokenHash: 'hash-200', outcome: outcome(0) }])).toEqual([{ moved: true, pendingWaits: false }]);

    // A pending task claimed by a batch in flight, or waiting out its retry time, is no taker.
    const claimed = await tasks.insert(makeTaskRow());
    const later = await tasks.insert(makeTaskRow());
    await source.query(`UPDATE "controller"."tasks" SET dispatch_claimed_until = now() + interval '1 minute' WHERE guid = $1`, [claimed.guid]);
    await source.query(`UPDATE "controller"."tasks" SET next_dispatch_at = now() + interval '1 minute' WHERE guid = $1`, [later.guid]);
    const second = await dispatched(201);
    expect(await tasks.completeByTokens([{ guid: second, tokenHash: 'hash-201', outcome: outcome(0) }])).toEqual([{ moved: true, pendingWaits: false }]);

    await tasks.insert(makeTaskRow());
    const third = await dispatched(202);
    const fourth = await dispatched(203);
    expect(await tasks.completeByTokens([
      { guid: third, tokenHash: 'hash-202', outcome: outcome(0) },
      { guid: fourth, tokenHash: 'wrong', outcome: outcome(0) },
    ])).toEqual([{ moved: true, pendingWaits: true }, { moved: false, pendingWaits: true }]);
  });
});
