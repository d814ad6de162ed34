import { DataSource, ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { TasksRepository } from '../../src/controller/tasks/tasks.repository';
import { controllerDatabase, repositoryOn } from './controller-tasks';

const ROWS = 300_000;
const WORKFLOWS = 5;
const NEWEST = 30_000;

/** Plan node names, outermost first, with the index or table each scan reads. */
function planNodes(plan: PlanNode): string[] {
  const scan = plan['Index Name'] ?? plan['Relation Name'];
  return [`${plan['Node Type']}${scan ? ` (${scan})` : ''}`, ...(plan.Plans ?? []).flatMap(planNodes)];
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/**
 * The statements a task list runs, planned by PostgreSQL on a table whose matches are spread
 * through it (five workflows taking turns, statuses too: each filter matches tens of thousands
 * of rows, several times the count cap) below newer rows that match none of the filters: each
 * one, the page and the capped count included, walks the filter's index; none reads the table
 * from end to end.
 */
describe('the plans of a task list, matches spread through the table', () => {
  let source: DataSource;
  let close: () => Promise<void>;
  let tasks: TasksRepository;

  beforeAll(async () => {
    const db = await controllerDatabase(1);
    [source] = db.sources;
    close = db.close;
    tasks = repositoryOn(source);
    await source.query(
      `INSERT INTO "controller"."tasks" (guid, status, agent_image, runtime_target, resources, timeout_seconds, brief_key, workflow_id, created_at)
       SELECT gen_random_uuid(), (ARRAY['completed','completed','completed','failed'])[1 + i % 4], 'agent-examples/echo',
              '{"type":"local","namespace":""}', '{}', 60, 'briefs/x.json', 'workflow-' || (i % ${WORKFLOWS}), now() - make_interval(secs => i)
         FROM generate_series(1, $1) AS i`,
      [ROWS],
    );
    // The newest rows all of one other status and workflow: a walk of the time index that
    // checks each entry for a filter would pass all of them before its first match.
    await source.query(
      `INSERT INTO "controller"."tasks" (guid, status, agent_image, runtime_target, resources, timeout_seconds, brief_key, workflow_id, created_at)
       SELECT gen_random_uuid(), 'cancelled', 'agent-examples/echo', '{"type":"local","namespace":""}', '{}', 60, 'briefs/x.json', 'workflow-new',
              now() + make_interval(secs => i)
         FROM generate_series(1, $1) AS i`,
      [NEWEST],
    );
    await source.query('VACUUM ANALYZE "controller"."tasks"');
  }, 120_000);
  afterAll(() => close());

  /** Every SELECT the list sends, with its parameters, planned by EXPLAIN. */
  async function plansOf(list: () => Promise<unknown>): Promise<{ count: boolean; nodes: string[] }[]> {
    type QueryParameters = Parameters<DataSource['query']>[1];
    const sent: [string, QueryParameters][] = [];
    const query = source.query.bind(source);
    const spy = jest.spyOn(source, 'query').mockImplementation(async (sql: string, parameters?: QueryParameters) => {
      if (/^\s*SELECT/i.test(sql)) sent.push([sql, parameters]);
      return query(sql, parameters);
    });
    // The page itself is read through the query builder.
    const read = SelectQueryBuilder.prototype.getRawAndEntities;
    const pageSpy = jest.spyOn(SelectQueryBuilder.prototype, 'getRawAndEntities').mockImplementation(function (this: SelectQueryBuilder<ObjectLiteral>) {
      sent.push(this.getQueryAndParameters());
      return read.call(this);
    });
    try {
      await list();
    } finally {
      spy.mockRestore();
      pageSpy.mockRestore();
    }
    const plans: { count: boolean; nodes: string[] }[] = [];
    for (const [sql, parameters] of sent) {
      const [row] = (await source.query(`EXPLAIN (FORMAT JSON) ${sql}`, parameters)) as { 'QUERY PLAN': [{ Plan: PlanNode }] }[];
      plans.push({ count: /count\(\*\)/.test(sql), nodes: planNodes(row['QUERY PLAN'][0].Plan) });
    }
    return plans;
  }

  it.each([
    ['?workflow=', 'tasks_workflow_created_idx', { workflow: 'workflow-3' }],
    ['?status=', 'tasks_status_created_idx', { status: 'failed' as const }],
    ['?status= of three rows in four', 'tasks_status_created_idx', { status: 'completed' as const }],
    ['no filter', 'tasks_created_idx', {}],
  ])('%s: the page and the capped count walk %s', async (_name, index, filter) => {
    const answer = await tasks.list({ limit: 50, ...filter });
    expect(answer.items).toHaveLength(50);
    expect(answer.countEstimated).toBe(true);

    const plans = await plansOf(() => tasks.list({ limit: 50, ...filter }));
    // The page and the capped count (the estimate past the cap is an EXPLAIN, never run).
    expect(plans.map((plan) => plan.count).sort()).toEqual([false, true]);
    for (const plan of plans) expect(plan.nodes.join(' > ')).not.toContain('Seq Scan');
    // Both walk the filter's index, even for a value most rows have, whose matches the newest
    // rows are not.
    const count = plans.find((plan) => plan.count)!;
    expect(count.nodes.some((node) => node.startsWith('Index Only Scan') && node.includes(`(${index})`))).toBe(true);
    const page = plans.find((plan) => !plan.count)!;
    expect(page.nodes).toEqual(['Limit', `Index Scan (${index})`]);
  });
});
