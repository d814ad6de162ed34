import { Client } from 'pg';
import { checkInDispatcher, clientBearer, operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

describe('dispatcher registry', () => {
  let system: TestSystem;
  const url = (path: string) => `${system.controllerUrl}/api/v1/dispatchers/${path}`;
  const registration = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    endpoint_url: 'http://127.0.0.1:9/',
    cloud: 'local',
    backends: ['local'],
    labels: { zone: 'a' },
    heartbeat_interval_seconds: 30,
    ...extra,
  });

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller' });
  });
  afterAll(() => system?.close());

  it('creates a dispatcher at its first check-in and updates it by name afterwards', async () => {
    const first = await checkInDispatcher(system, registration('Edge Pool 1', { api_key: 'edge-secret-key' }));
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ status: 'ok', action: 'created', dispatcher_guid: expect.stringMatching(/^[0-9a-f-]{36}$/), dispatcher_slug: 'edge-pool-1' });

    const again = await checkInDispatcher(system, registration('Edge Pool 1', { endpoint_url: 'http://127.0.0.1:10', labels: { zone: 'b' } }));
    expect(again.body).toEqual({ ...first.body, action: 'updated' });

    const detail = await http('GET', url('edge-pool-1/'), { headers: operator(system) });
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ name: 'Edge Pool 1', endpoint_url: 'http://127.0.0.1:10', labels: { zone: 'b' }, state: 'online' });
  });

  it('keeps the api_key encrypted and never returns it', async () => {
    await checkInDispatcher(system, registration('Keyed', { api_key: 'plain-dispatcher-key' }));
    const list = await http('GET', url(''), { headers: operator(system) });
    expect(list.text).not.toContain('plain-dispatcher-key');
    expect(list.body.find((d: { slug: string }) => d.slug === 'keyed')).toMatchObject({ has_api_key: true });

    const db = new Client({ connectionString: system.config.databaseUrl! });
    await db.connect();
    const rows = await db.query(`SELECT api_key_encrypted FROM controller.dispatchers WHERE slug = 'keyed'`);
    await db.end();
    expect(rows.rows[0].api_key_encrypted).toMatch(/^v1:/);
    expect(rows.rows[0].api_key_encrypted).not.toContain('plain-dispatcher-key');
  });

  it('refuses a second name that makes a taken slug', async () => {
    await checkInDispatcher(system, registration('gpu pool'));
    const clash = await checkInDispatcher(system, registration('GPU-Pool'));
    expect(clash.status).toBe(409);
    expect(clash.body.code).toBe('conflict');
  });

  it.each([
    [{ endpoint_url: 'ftp://x' }, 'endpoint_url'],
    [{ backends: 'local' }, 'backends'],
    [{ heartbeat_interval_seconds: 0 }, 'heartbeat_interval_seconds'],
    [{ labels: { zone: 1 } }, 'labels'],
    [{ name: '' }, 'name'],
  ])('answers 400 naming the field for %j', async (change, field) => {
    const answer = await checkInDispatcher(system, registration('bad', change));
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('invalid');
    expect(Object.keys(answer.body.errors)).toContain(field);
  });

  it('takes heartbeats and answers the interval; an unknown guid is 404', async () => {
    const checkin = await checkInDispatcher(system, registration('beater', { heartbeat_interval_seconds: 7 }));
    const beat = await http('POST', url('heartbeat/'), {
      headers: operator(system),
      json: { dispatcher_guid: checkin.body.dispatcher_guid, active_tasks: 3, capacity: 10 },
    });
    expect(beat.status).toBe(200);
    expect(beat.body).toEqual({ status: 'ok', dispatcher_guid: checkin.body.dispatcher_guid, heartbeat_interval_seconds: 7 });
    const detail = await http('GET', url('beater'), { headers: operator(system) });
    expect(detail.body).toMatchObject({ active_tasks: 3, capacity: 10, state: 'online' });

    const unknown = await http('POST', url('heartbeat'), {
      headers: operator(system),
      json: { dispatcher_guid: '00000000-0000-4000-8000-000000000000', active_tasks: 0, capacity: 1 },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');

    const invalid = await http('POST', url('heartbeat'), { headers: operator(system), json: { dispatcher_guid: 'x', active_tasks: -1 } });
    expect(invalid.status).toBe(400);
    expect(Object.keys(invalid.body.errors).sort()).toEqual(['active_tasks', 'capacity', 'dispatcher_guid']);
  });

  it('keeps the warm pools a heartbeat reports, keeps the last report when a heartbeat has none, and refuses a bad one naming the field', async () => {
    const checkin = await checkInDispatcher(system, registration('pooled'));
    const guid = checkin.body.dispatcher_guid as string;
    const pools = [{ name: 'reviewers', backend: 'local', image: 'agent-examples/echo', size: 4, idle: 3, claimed: 1 }];
    const beat = (json: Record<string, unknown>) => http('POST', url('heartbeat/'), { headers: operator(system), json: { dispatcher_guid: guid, active_tasks: 1, capacity: 8, ...json } });
    expect((await beat({ warm_pools: pools })).status).toBe(200);
    expect((await http('GET', url('pooled/'), { headers: operator(system) })).body.warm_pools).toEqual(pools);
    expect((await beat({})).status).toBe(200);
    expect((await http('GET', url('pooled/'), { headers: operator(system) })).body.warm_pools).toEqual(pools);

    const refused = await beat({ warm_pools: [{ ...pools[0], size: -1 }] });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('invalid');
    expect(Object.keys(refused.body.errors).some((field) => field.startsWith('warm_pools'))).toBe(true);
    expect((await http('GET', url('pooled/'), { headers: operator(system) })).body.warm_pools).toEqual(pools);
  });

  it('answers 404 for an unknown slug', async () => {
    const answer = await http('GET', url('nobody/'), { headers: operator(system) });
    expect(answer.status).toBe(404);
  });

  it('needs a credential (401) with the dispatchers scopes (403)', async () => {
    const none = await http('POST', url('checkin/'), { json: registration('anon') });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBeTruthy();
    const wrong = await http('GET', url(''), { headers: { authorization: 'Token not-the-token' } });
    expect(wrong.status).toBe(401);

    const reader = await clientBearer(system, ['dispatchers:read']);
    expect((await http('GET', url(''), { headers: reader })).status).toBe(200);
    const refused = await http('POST', url('checkin/'), { headers: reader, json: registration('reader') });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('permission_denied');

    const writer = await clientBearer(system, ['dispatchers:write']);
    expect((await http('POST', url('checkin/'), { headers: writer, json: registration('writer') })).status).toBe(200);
    expect((await http('GET', url(''), { headers: writer })).status).toBe(403);
  });
});
