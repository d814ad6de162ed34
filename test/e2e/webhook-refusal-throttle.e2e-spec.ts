import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

/** Unverified refused deliveries: a little of each body is kept, and one address's flood is throttled. */
describe('webhook ingest: unverified refusals cannot fill the ledger', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { WEBHOOK_REFUSALS_PER_MINUTE: '3', FORGE_WEBHOOK_SECRET: 'forge-secret' } });
  });
  afterAll(() => system?.close());

  async function ledgerRows(): Promise<{ payload_bytes: number | null; payload_size: number; payload_truncated: boolean; status_code: number }[]> {
    const db = new Client({ connectionString: system.config.databaseUrl! });
    await db.connect();
    try {
      const rows = await db.query(`SELECT octet_length(payload) AS payload_bytes, payload_size, payload_truncated, status_code
        FROM controller.webhook_deliveries WHERE outcome = 'rejected' ORDER BY received_at`);
      return rows.rows;
    } finally {
      await db.end();
    }
  }

  const forge = (contentType: string) => ({ 'content-type': contentType, 'x-github-event': 'push', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': 'sha256=00' });

  it('keeps 4 KiB of an unverified refused body, and answers 429 without recording past the per-address limit', async () => {
    const notJson = `{"ref": ${'x'.repeat(200 * 1024)}`;
    const first = await http('POST', `${system.controllerUrl}/api/v1/webhooks/`, { headers: forge('application/json'), body: notJson });
    expect(first.status).toBe(400);
    const forged = await http('POST', `${system.controllerUrl}/api/v1/webhooks/`, { headers: forge('application/json'), body: JSON.stringify({ ref: 'main' }) });
    expect([401, 403]).toContain(forged.status);
    const third = await http('POST', `${system.controllerUrl}/api/v1/webhooks/`, { headers: forge('application/json'), body: '{"ref": main' });
    expect(third.status).toBe(400);
    const [kept] = await ledgerRows();
    expect(kept).toMatchObject({ payload_bytes: 4096, payload_size: notJson.length, payload_truncated: true });

    const throttled = await http('POST', `${system.controllerUrl}/api/v1/webhooks/`, { headers: forge('application/json'), body: notJson });
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(throttled.body.code).toBe('throttled');
    expect(await ledgerRows()).toHaveLength(3);
  });
});
