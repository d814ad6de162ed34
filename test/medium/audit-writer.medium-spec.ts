import { DataSource } from 'typeorm';
import { auditTime, NewAuditEntry } from '../../src/controller/audit/audit-plan';
import { AuditEntry } from '../../src/controller/audit/audit.entity';
import { AuditRepository } from '../../src/controller/audit/audit.repository';
import { AuditWriter } from '../../src/controller/audit/audit-writer';
import { controllerDatabase } from './controller-tasks';

const row = (action: string): NewAuditEntry => ({
  at: auditTime(), actorKind: 'oauth_client', actorId: 'client-1', actorName: 'client-1', action, resourceType: 'task', resourceId: null,
  outcome: 'succeeded', statusCode: 201, remoteAddr: '203.0.113.9', details: { fields: ['brief'], quote: "it's \"quoted\" {and} braced" },
});

/** The audit writer's group commit against the real table: what is queued while a write runs goes in one statement, in order. */
describe('AuditWriter on PostgreSQL', () => {
  let source: DataSource;
  let close: () => Promise<void>;
  let repository: AuditRepository;

  beforeAll(async () => {
    ({ sources: [source], close } = await controllerDatabase(1));
    repository = new AuditRepository(source.getRepository(AuditEntry));
  });
  afterAll(() => close());

  it('stores a burst with fewer statements than rows, each row whole and in the order it came', async () => {
    const statements: number[] = [];
    const counting = { insertMany: async (batch: NewAuditEntry[]) => { statements.push(batch.length); await repository.insertMany(batch); } } as AuditRepository;
    const writer = new AuditWriter(counting);
    const actions = Array.from({ length: 200 }, (_, i) => `burst.${String(i).padStart(3, '0')}`);
    for (const action of actions) writer.add(row(action));
    await writer.idle();
    expect(statements.reduce((sum, n) => sum + n, 0)).toBe(200);
    expect(statements.length).toBeLessThan(10);
    const stored = await source.query(`SELECT action, details, status_code FROM "controller"."audit_entries" WHERE action LIKE 'burst.%' ORDER BY at, id`);
    expect(stored.map((entry: { action: string }) => entry.action)).toEqual(actions);
    expect(stored[0]).toEqual({ action: 'burst.000', details: row('x').details, status_code: 201 });
  });

  it('logs a failed batch and goes on with the next', async () => {
    let calls = 0;
    const failingOnce = { insertMany: async (batch: NewAuditEntry[]) => { calls += 1; if (calls === 1) throw new Error('database gone'); await repository.insertMany(batch); } } as AuditRepository;
    const writer = new AuditWriter(failingOnce);
    writer.add(row('lost.1'));
    await writer.idle();
    writer.add(row('kept.1'));
    await writer.beforeApplicationShutdown();
    const stored = await source.query(`SELECT action FROM "controller"."audit_entries" WHERE action IN ('lost.1', 'kept.1')`);
    expect(stored).toEqual([{ action: 'kept.1' }]);
  });
});
