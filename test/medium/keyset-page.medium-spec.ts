import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Task } from '../../src/controller/tasks/tasks.entity';
import { TaskListQuery, TasksRepository } from '../../src/controller/tasks/tasks.repository';
import { decodeCursor, encodeCursor, EXACT_COUNT_LIMIT, KeysetPage } from '../../src/shared/database/keyset-page';
import { controllerDatabase, makeTaskRow, repositoryOn } from './controller-tasks';

/** Inserts `n` tasks by SQL; `sameInstant` gives them all one created_at (microsecond ties). */
async function seed(source: DataSource, n: number, columns: { status?: string; workflow?: string; sameInstant?: boolean } = {}): Promise<void> {
  await source.query(
    `INSERT INTO "controller"."tasks" (guid, status, agent_image, runtime_target, resources, timeout_seconds, brief_key, workflow_id, created_at)
     SELECT gen_random_uuid(), $2, 'agent-examples/echo', '{"type":"local","namespace":""}', '{}', 60, 'briefs/x.json', $3,
            CASE WHEN $4 THEN timestamptz '2026-01-01 00:00:00.000001+00' ELSE now() - make_interval(secs => i * 0.0000013) END
       FROM generate_series(1, $1) AS i`,
    [n, columns.status ?? 'completed', columns.workflow ?? null, columns.sameInstant ?? false],
  );
}

/** Every task in list order, read in one query: the truth pages are checked against. */
async function everyGuid(source: DataSource, where = 'true'): Promise<string[]> {
  const rows = await source.query(`SELECT guid FROM "controller"."tasks" WHERE ${where} ORDER BY created_at DESC, guid DESC`);
  return rows.map((row: { guid: string }) => row.guid);
}

const guids = (page: KeysetPage<Task>) => page.items.map((task) => task.guid);

describe('lists paged by key', () => {
  let source: DataSource;
  let close: () => Promise<void>;
  let tasks: TasksRepository;

  beforeAll(async () => {
    const db = await controllerDatabase(1);
    [source] = db.sources;
    close = db.close;
    tasks = repositoryOn(source);
    await seed(source, 37, { workflow: 'paged' });
    await seed(source, 11, { workflow: 'paged', sameInstant: true });
    await seed(source, 5, { status: 'failed' });
  });
  afterAll(() => close());

  const list = (query: Partial<TaskListQuery>) => tasks.list({ limit: 10, ...query });

  it('walks every row once by next and back again by previous, ties on the instant included', async () => {
    const truth = await everyGuid(source, `workflow_id = 'paged'`);
    const seen: string[] = [];
    const pages: KeysetPage<Task>[] = [];
    let page = await list({ limit: 4, workflow: 'paged' });
    expect(page.previous).toBeNull();
    for (;;) {
      pages.push(page);
      seen.push(...guids(page));
      if (!page.next) break;
      page = await list({ limit: 4, workflow: 'paged', cursor: page.next });
    }
    expect(seen).toEqual(truth);
    expect(pages).toHaveLength(Math.ceil(truth.length / 4));
    expect(pages.every((each) => each.count === truth.length && !each.countEstimated)).toBe(true);

    const back: string[][] = [];
    page = pages[pages.length - 1];
    while (page.previous) {
      page = await list({ limit: 4, workflow: 'paged', cursor: page.previous });
      back.unshift(guids(page));
    }
    expect(back.flat()).toEqual(truth.slice(0, back.flat().length));
    expect(back.flat()).toHaveLength(truth.length - guids(pages[pages.length - 1]).length);
    expect(page.previous).toBeNull();
    expect(page.next).not.toBeNull();
  });

  it('neither repeats nor skips a row when new tasks arrive between pages', async () => {
    const first = await list({ limit: 5, status: 'failed' });
    const firstGuids = guids(first);
    expect(firstGuids).toHaveLength(5);
    const early = await list({ limit: 2, status: 'failed' });
    await tasks.insert(makeTaskRow({ status: 'failed' }));
    const rest = await list({ limit: 10, status: 'failed', cursor: early.next! });
    expect([...guids(early), ...guids(rest)]).toEqual(firstGuids);
    expect(rest.count).toBe(6);
  });

  it('still takes offset, and links onward with cursors', async () => {
    const truth = await everyGuid(source, `workflow_id = 'paged'`);
    const page = await list({ limit: 5, offset: 10, workflow: 'paged' });
    expect(guids(page)).toEqual(truth.slice(10, 15));
    const onward = await list({ limit: 5, workflow: 'paged', cursor: page.next! });
    expect(guids(onward)).toEqual(truth.slice(15, 20));
    const back = await list({ limit: 5, workflow: 'paged', cursor: page.previous! });
    expect(guids(back)).toEqual(truth.slice(5, 10));
    expect(guids(await list({ limit: 5, offset: truth.length, workflow: 'paged' }))).toEqual([]);
  });

  it('answers an empty page past either end with a way back', async () => {
    const truth = await everyGuid(source, `workflow_id = 'paged'`);
    const last = await list({ limit: 100, workflow: 'paged' });
    expect(last.next).toBeNull();
    const beyond = await list({ limit: 5, workflow: 'paged', cursor: { direction: 'after', time: '1970-01-01T00:00:00.000000Z', id: randomUUID() } });
    expect(beyond).toMatchObject({ items: [], next: null });
    expect(guids(await list({ limit: 5, workflow: 'paged', cursor: beyond.previous! }))).toEqual(truth.slice(-5));
  });

  it('writes cursors only it reads back, and refuses anything else', () => {
    const cursor = { direction: 'after' as const, time: '2026-11-23T10:00:00.123456Z', id: randomUUID() };
    expect(decodeCursor(encodeCursor(cursor))).toEqual(cursor);
    for (const text of ['', 'abc', 'offset=10', Buffer.from('[1,2,3]').toString('base64url'),
      Buffer.from(JSON.stringify(['a', "2026-01-01'; DROP TABLE tasks;--", 'x'])).toString('base64url'),
      Buffer.from(JSON.stringify(['z', '2026-11-23T10:00:00Z', 'x'])).toString('base64url'), 'é'.repeat(10)]) {
      expect(decodeCursor(text)).toBeNull();
    }
  });

  it('counts exactly up to the limit, then estimates and says so, and counts exactly when asked', async () => {
    await seed(source, EXACT_COUNT_LIMIT + 500, { status: 'cancelled', workflow: 'many' });
    await source.query('ANALYZE "controller"."tasks"');
    const estimated = await list({ workflow: 'many' });
    expect(estimated.countEstimated).toBe(true);
    expect(estimated.count).toBeGreaterThan(EXACT_COUNT_LIMIT);
    const exact = await list({ workflow: 'many', exactCount: true });
    expect(exact).toMatchObject({ count: EXACT_COUNT_LIMIT + 500, countEstimated: false });
    expect(await list({ status: 'failed' })).toMatchObject({ count: 6, countEstimated: false });
  });
});
