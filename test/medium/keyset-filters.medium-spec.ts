import { DataSource } from 'typeorm';
import { AuditEntry } from '../../src/controller/audit/audit.entity';
import { AuditFilters, AuditRepository } from '../../src/controller/audit/audit.repository';
import { DeliveryFilters, DeliveryLedger } from '../../src/controller/webhooks/delivery-ledger';
import { WebhookDelivery } from '../../src/controller/webhooks/webhook-delivery.entity';
import { KeysetPage, KeysetRequest } from '../../src/shared/database/keyset-page';
import { controllerDatabase } from './controller-tasks';

/** Every subset of `filters`: each list is walked with every combination of its filters. */
function subsets<T extends object>(filters: T): Partial<T>[] {
  const entries = Object.entries(filters);
  return Array.from({ length: 2 ** entries.length }, (_, mask) => Object.fromEntries(entries.filter((_, i) => mask & (1 << i))) as Partial<T>);
}

/**
 * Walks a list to its end by `next` and back to its start by `previous`, LIMIT rows a page,
 * and checks both walks, and every page's count, against one query of the truth.
 */
async function walkBothWays<F>(list: (filters: F, request: KeysetRequest) => Promise<KeysetPage<{ id: string }>>, filters: F, truth: string[], limit: number): Promise<void> {
  const ids = (page: KeysetPage<{ id: string }>) => page.items.map((item) => item.id);
  const forward: string[] = [];
  let page = await list(filters, { limit });
  expect(page.previous).toBeNull();
  const pages = [page];
  for (;;) {
    forward.push(...ids(page));
    expect({ count: page.count, estimated: page.countEstimated }).toEqual({ count: truth.length, estimated: false });
    if (!page.next) break;
    page = await list(filters, { limit, cursor: page.next });
    pages.push(page);
  }
  expect(forward).toEqual(truth);
  const backward: string[] = [...ids(page)];
  while (page.previous) {
    page = await list(filters, { limit, cursor: page.previous });
    backward.unshift(...ids(page));
  }
  expect(backward).toEqual(truth);
  expect(page.next === null).toBe(truth.length <= limit);
}

/**
 * Lists whose filters lead their index's order (`equalityFilters`) and lists whose filters do
 * not: for every combination of each list's filters, on rows whose values are spread through
 * time in runs and turns and whose times tie, the pages walked both ways are exactly the rows
 * the filters match, newest first, each once.
 */
describe('list filters, every combination, paged both ways', () => {
  let source: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const db = await controllerDatabase(1);
    [source] = db.sources;
    close = db.close;
    // 400 rows: the first half in runs of one value, the second taking turns; every fourth row
    // shares its instant with the one before.
    await source.query(
      `INSERT INTO "controller"."webhook_deliveries" (source, event, delivery_id, verified, workflow_id, outcome, status_code, payload_size, received_at)
       SELECT (ARRAY['forge','chat','custom'])[1 + CASE WHEN i <= 200 THEN i / 70 ELSE i % 3 END],
              (ARRAY['push','issues'])[1 + CASE WHEN i <= 200 THEN i / 101 ELSE i % 2 END],
              'd-' || i, true,
              (ARRAY['workflow-a', NULL, 'workflow-b'])[1 + i % 3],
              (ARRAY['routed','ignored','ignored','ignored','failed'])[1 + CASE WHEN i <= 200 THEN i / 41 ELSE i % 5 END],
              202, 10, timestamptz '2026-11-01 00:00:00+00' + make_interval(secs => i - i % 4 / 3)
         FROM generate_series(1, 400) AS i`,
    );
    await source.query(
      `INSERT INTO "controller"."audit_entries" (at, actor_kind, actor_id, actor_name, action, resource_type, resource_id, outcome, status_code)
       SELECT timestamptz '2026-11-01 00:00:00+00' + make_interval(secs => i - i % 4 / 3), 'operator', 'o', (ARRAY['ops','ci'])[1 + i % 2],
              (ARRAY['tasks.cancel','tasks.create','skills.create'])[1 + CASE WHEN i <= 150 THEN i / 51 ELSE i % 3 END],
              (ARRAY['task','skill'])[1 + i % 2 * (i / 200)], (ARRAY['r1','r2','r3'])[1 + i % 3], 'succeeded', 200
         FROM generate_series(1, 300) AS i`,
    );
    await source.query('ANALYZE "controller"."webhook_deliveries"; ANALYZE "controller"."audit_entries"');
  }, 60_000);
  afterAll(() => close());

  /** The ids of a table's rows equal to every value set (column -> value), newest first: one query, the truth the pages are held to. */
  async function matching(table: string, time: string, equal: Record<string, string | undefined>): Promise<string[]> {
    const where = Object.entries(equal).filter(([, value]) => value !== undefined);
    const rows: { id: string }[] = await source.query(
      `SELECT id FROM "controller"."${table}" WHERE ${where.map(([column], i) => `${column} = $${i + 1}`).join(' AND ') || 'true'} ORDER BY ${time} DESC, id DESC`,
      where.map(([, value]) => value),
    );
    expect(rows.length).toBeGreaterThan(0);
    return rows.map((row) => row.id);
  }

  const deliveryFilters: Required<DeliveryFilters> = { source: 'forge', event: 'push', outcome: 'ignored', workflow: 'workflow-a' };
  it.each(subsets(deliveryFilters).map((filters) => [JSON.stringify(filters), filters]))('the delivery ledger, %s', async (_name, filters) => {
    const ledger = new DeliveryLedger(source.getRepository(WebhookDelivery));
    const truth = await matching('webhook_deliveries', 'received_at', { source: filters.source, event: filters.event, outcome: filters.outcome, workflow_id: filters.workflow });
    await walkBothWays((f: DeliveryFilters, request) => ledger.list(f, request), filters, truth, 9);
  });

  const auditFilters: Required<Omit<AuditFilters, 'since'>> = { actor: 'ops', action: 'tasks.create', resource_type: 'task', resource_id: 'r2' };
  it.each(subsets(auditFilters).map((filters) => [JSON.stringify(filters), filters]))('the audit trail, %s', async (_name, filters) => {
    const audit = new AuditRepository(source.getRepository(AuditEntry));
    const truth = await matching('audit_entries', 'at', { actor_name: filters.actor, action: filters.action, resource_type: filters.resource_type, resource_id: filters.resource_id });
    await walkBothWays((f: AuditFilters, request) => audit.list(f, request), filters, truth, 7);
  });
});
