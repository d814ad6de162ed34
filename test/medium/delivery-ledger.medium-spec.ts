import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { DeliveryLedger } from '../../src/controller/webhooks/delivery-ledger';
import { DeliveryOutcome, WebhookDelivery } from '../../src/controller/webhooks/webhook-delivery.entity';
import { controllerDatabase } from './controller-tasks';

const delivery = (dedupKey: string | null, outcome: string = 'ignored'): Partial<WebhookDelivery> & { id: string } => ({
  id: randomUUID(), source: 'forge', event: 'push', verified: true, deliveryId: dedupKey, dedupKey, outcome: outcome as DeliveryOutcome, statusCode: 202,
  payload: '{"ref":"refs/heads/main"}', payloadSize: 25, workflowId: null,
});

/**
 * `recordOnce` group-commits its rows: a burst of deliveries costs fewer statements than rows,
 * and each caller still learns whether its own row was stored, "seen before" decided by the
 * unique dedup key across statements and inside one, and a row PostgreSQL refuses fails only
 * its own caller.
 */
describe('the delivery ledger, group-committed', () => {
  let source: DataSource;
  let close: () => Promise<void>;
  let ledger: DeliveryLedger;
  let statements: jest.SpyInstance;

  beforeAll(async () => {
    ({ sources: [source], close } = await controllerDatabase(1));
    ledger = new DeliveryLedger(source.getRepository(WebhookDelivery));
  });
  beforeEach(() => {
    // Counts what reaches the pool, and lets it through.
    statements = jest.spyOn((source.driver as unknown as { master: Pool }).master, 'query');
  });
  afterEach(() => statements.mockRestore());
  afterAll(() => close());

  const stored = async (ids: string[]) =>
    (await source.query(`SELECT id, dedup_key, outcome, verified, payload, payload_size, payload_truncated, received_at, finished_at FROM "controller"."webhook_deliveries" WHERE id = ANY($1)`, [ids]));

  it('stores a burst of 300 in fewer statements than rows, every row whole', async () => {
    const rows = Array.from({ length: 300 }, (_, i) => delivery(`forge:burst-${i}`));
    expect(await Promise.all(rows.map((row) => ledger.recordOnce(row)))).toEqual(rows.map(() => true));
    expect(statements.mock.calls.length).toBeLessThan(30);
    const found = await stored(rows.map((row) => row.id));
    expect(found).toHaveLength(300);
    for (const row of found) {
      expect(row).toMatchObject({ outcome: 'ignored', verified: true, payload: '{"ref":"refs/heads/main"}', payload_size: 25, payload_truncated: false });
      expect(row.received_at).toBeInstanceOf(Date);
      expect(row.finished_at).toBeInstanceOf(Date);
    }
  });

  it('answers false for a dedup key stored before or earlier in the same statement, and stores rows without a key every time', async () => {
    expect(await ledger.recordOnce(delivery('forge:seen'))).toBe(true);
    // The first two rows start the two writes the ledger runs at once; the rest wait and go in one statement after them.
    const burst = [delivery('forge:seen'), delivery('forge:first'), delivery('forge:twice'), delivery('forge:twice'), delivery(null), delivery(null), delivery('forge:once')];
    const answers = await Promise.all(burst.map((row) => ledger.recordOnce(row)));
    expect(answers).toEqual([false, true, true, false, true, true, true]);
    const keys = (await stored(burst.map((row) => row.id))).map((row: { dedup_key: string | null }) => row.dedup_key).sort();
    expect(keys).toEqual(['forge:first', 'forge:once', 'forge:twice', null, null]);
  });

  it('stores one of two rows with the same dedup key in writes under way at once, whichever commits first, and answers false to the other', async () => {
    for (let round = 0; round < 5; round++) {
      // The first two rows are each a write of their own, both under way at once: which one's INSERT takes the key is the database's race.
      const pair = [delivery(`forge:race-${round}`), delivery(`forge:race-${round}`)];
      const answers = await Promise.all(pair.map((row) => ledger.recordOnce(row)));
      expect([...answers].sort()).toEqual([false, true]);
      const found = await stored(pair.map((row) => row.id));
      expect(found.map((row: { id: string }) => row.id)).toEqual([pair[answers.indexOf(true)].id]);
    }
  });

  it('fails only the caller whose row PostgreSQL refuses', async () => {
    const burst = [delivery('forge:a'), delivery('forge:refused', 'no-such-outcome'), delivery('forge:b')];
    const answers = await Promise.all(burst.map((row) => ledger.recordOnce(row).catch((error: Error) => error.message)));
    expect(answers[0]).toBe(true);
    expect(answers[1]).toMatch(/webhook_deliveries_outcome_check/);
    expect(answers[2]).toBe(true);
    expect((await stored(burst.map((row) => row.id))).map((row: { dedup_key: string }) => row.dedup_key).sort()).toEqual(['forge:a', 'forge:b']);
  });
});
