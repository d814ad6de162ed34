import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

/**
 * Deliveries whose body no endpoint takes (not JSON, NUL, a lone surrogate, nested past 64
 * levels) are refused with 400 and still kept in the ledger as `rejected`, with the reason,
 * on the hot lane (plain JSON) and on the Nest route (gzip JSON, form posts) alike.
 */
describe('webhook ingest: refused bodies are kept in the ledger', () => {
  let system: TestSystem;
  let auth: Record<string, string>;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller' });
    auth = { authorization: `Token ${system.apiToken}` };
  });
  afterAll(() => system?.close());

  /** A forge delivery whose event name marks it, so its ledger row can be found by its id. */
  function forgeHeaders(contentType = 'application/json'): Record<string, string> {
    return { 'content-type': contentType, 'x-github-event': 'push', 'x-github-delivery': randomUUID() };
  }

  async function rejectedRows(): Promise<any[]> {
    const ledger = await http('GET', `${system.controllerUrl}/api/v1/webhooks/deliveries/?outcome=rejected&limit=500`, { headers: auth });
    expect(ledger.status).toBe(200);
    return ledger.body.results;
  }

  /** Sends a body, expects the 400, and answers the ledger row it left. */
  async function sendRefused(body: string | Buffer, headers: Record<string, string>, code: string): Promise<any> {
    const before = (await rejectedRows()).length;
    const answer = await http('POST', `${system.controllerUrl}/api/v1/webhooks/`, { headers, body });
    expect({ status: answer.status, code: answer.body?.code }).toEqual({ status: 400, code });
    const rows = await rejectedRows();
    expect(rows).toHaveLength(before + 1);
    return rows[0];
  }

  const deep = '['.repeat(70) + ']'.repeat(70);
  const cases: [string, string, string, RegExp][] = [
    ['a NUL character', '{"ref":"main\\u0000x"}', 'invalid', /ref.*NUL/],
    ['a lone surrogate', '{"head_commit":{"message":"\\ud800"}}', 'invalid', /head_commit\.message.*surrogate/],
    ['nesting past 64 levels', `{"a":${deep}}`, 'invalid', /nested deeper than 64/],
    ['text that is not JSON', '{"ref": main', 'parse_error', /not valid JSON/],
  ];

  it.each(cases)('hot lane: a body with %s is 400 and recorded as rejected', async (_name, body, code, reason) => {
    const row = await sendRefused(body, forgeHeaders(), code);
    expect(row).toMatchObject({ source: 'forge', outcome: 'rejected', status_code: 400, error: expect.stringMatching(reason) });
  });

  it.each(cases)('Nest route (gzip): a body with %s is 400 and recorded as rejected', async (_name, body, code, reason) => {
    const headers = { ...forgeHeaders(), 'content-encoding': 'gzip' };
    const row = await sendRefused(gzipSync(body), headers, code);
    expect(row).toMatchObject({ source: 'forge', outcome: 'rejected', status_code: 400, error: expect.stringMatching(reason) });
  });

  it('a raw NUL byte in the body is stored escaped, and the row can be read back', async () => {
    const body = Buffer.concat([Buffer.from('{"ref":"a'), Buffer.from([0]), Buffer.from('b"}')]);
    const row = await sendRefused(body, forgeHeaders(), 'parse_error');
    const detail = await http('GET', `${system.controllerUrl}/api/v1/webhooks/deliveries/${row.id}/`, { headers: auth });
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ outcome: 'rejected', payload_size: body.length });
    // The NUL byte was kept as the JSON escape \u0000, which the detail reads back as text.
    expect(detail.body.payload).toEqual({ ref: 'a\u0000b' });
  });

  it('a form post whose payload field holds a NUL is refused and recorded', async () => {
    const form = `payload=${encodeURIComponent('{"ref":"main\u0000"}')}`;
    const row = await sendRefused(form, forgeHeaders('application/x-www-form-urlencoded'), 'invalid');
    expect(row).toMatchObject({ source: 'forge', outcome: 'rejected', error: expect.stringMatching(/payload.*NUL/) });
  });

  it('a form payload field holding JSON with an escaped NUL is refused and recorded', async () => {
    const form = `payload=${encodeURIComponent('{"ref":"main\\u0000"}')}`;
    const row = await sendRefused(form, forgeHeaders('application/x-www-form-urlencoded'), 'invalid');
    expect(row).toMatchObject({ outcome: 'rejected', error: expect.stringMatching(/payload\.ref.*NUL/) });
  });

  it('a sound delivery after the refusals is still taken', async () => {
    const answer = await http('POST', `${system.controllerUrl}/api/v1/webhooks/`, { headers: forgeHeaders(), body: '{"ref":"refs/heads/main"}' });
    expect(answer.status).toBe(202);
  });
});
