import { http } from '../harness/http';
import { makeTaskRequest, taskApi } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

// A `sleep`-mapped image keeps accepted tasks alive without any agent doing work.
const IDLE_IMAGE = 'test/idle';

describe('dispatcher task API', () => {
  let system: TestSystem;
  let api: ReturnType<typeof taskApi>;

  beforeAll(async () => {
    system = await startTestSystem({
      role: 'dispatcher',
      env: { MAX_CONCURRENT_TASKS: '1', LOCAL_IMAGE_COMMANDS: JSON.stringify({ [IDLE_IMAGE]: 'sleep 30' }) },
    });
    api = taskApi(system);
  });
  afterAll(() => system?.close());

  const idle = (overrides: Record<string, unknown> = {}) => makeTaskRequest({ agent_image: IDLE_IMAGE, ...overrides });

  it('creates a task (201) and never returns its callback token', async () => {
    const request = idle();
    const answer = await api.create(request);
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ ok: true, data: { task_id: request.task_id, status: 'pending', env: request.env, callback: { state: 'pending', attempts: 0 } } });
    expect(answer.text).not.toContain(request.callback_token);
    expect(Object.keys(answer.body.data)).toEqual(expect.arrayContaining([
      'created_at', 'started_at', 'finished_at', 'exit_code', 'result_key', 'result_metadata', 'error_message', 'progress', 'runtime', 'callback',
    ]));
    expect(answer.body.data).toMatchObject({
      started_at: null, finished_at: null, exit_code: null, runtime: { backend: null, ref: null },
      progress: { percentage: null, message: null, data: null, updated_at: null },
      callback: { state: 'pending', attempts: 0, last_error: null },
    });
    const fetched = await api.get(request.task_id);
    expect(fetched.body.data.task_id).toBe(request.task_id);
    expect(fetched.text).not.toContain(request.callback_token);
    // The answer is the stored row, not the request echoed: the same as a read gives.
    const { status: _status, started_at: _started, runtime: _runtime, ...stored } = fetched.body.data;
    expect(answer.body.data).toMatchObject(stored);
  });

  it('answers the same body again with 200 and a different one with 409', async () => {
    const request = idle();
    expect((await api.create(request)).status).toBe(201);
    const again = await api.create({ ...request, env: { ...request.env }, extra_unknown_field: 1 });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ task_id: request.task_id, env: request.env, callback: { state: 'pending', attempts: 0, last_error: null } });
    const different = await api.create({ ...request, timeout_seconds: 61 });
    expect(different.status).toBe(409);
    expect(different.body).toMatchObject({ ok: false, error: { code: 'conflict' } });
  });

  it.each([
    ['task_id', { task_id: 'not-a-uuid' }],
    ['agent_image', { agent_image: 'nobody/unmapped' }],
    ['runtime_target.type', { runtime_target: { type: 'kubernetes', namespace: '' } }],
    ['resources.cpu', { resources: { cpu: 'lots', memory: '1Gi' } }],
    ['resources.memory', { resources: { cpu: '1', memory: '1GB' } }],
    ['ports.0.container_port', { ports: [{ container_port: 70000, protocol: 'tcp' }] }],
    ['ports.0.protocol', { ports: [{ container_port: 80, protocol: 'http' }] }],
    ['timeout_seconds', { timeout_seconds: 0 }],
    ['timeout_seconds', { timeout_seconds: 86401 }],
    ['callback_url', { callback_url: 'ftp://example.com/x' }],
    ['env', { env: { '1BAD': 'x' } }],
    ['env', { env: { GOOD: 5 } }],
    ['callback_token', { callback_token: undefined }],
    ['brief_key', { brief_key: '../secrets.json' }],
  ])('refuses a bad %s with 400 naming it', async (field, overrides) => {
    const answer = await api.create(idle(overrides));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ ok: false, error: { code: 'invalid' } });
    expect(Object.keys(answer.body.error.details.fields)).toContain(field);
  });

  it('refuses a missing or wrong X-API-Key with 401', async () => {
    const missing = await http('POST', `${system.dispatcherUrl}/tasks`, { json: idle() });
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toContain('X-API-Key');
    const wrong = await http('GET', `${system.dispatcherUrl}/tasks`, { headers: { 'X-API-Key': 'nope' } });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('authentication_failed');
  });

  it('answers 404 for unknown tasks on get, cancel and logs', async () => {
    const unknown = makeTaskRequest().task_id;
    expect((await api.get(unknown)).status).toBe(404);
    expect((await api.cancel(unknown)).status).toBe(404);
    expect((await api.logs(unknown)).status).toBe(404);
  });

  it('lists newest first with limit, offset, status and total', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await api.create(idle())).body.data.task_id);
    const page = await api.list('?limit=2&offset=0');
    expect(page.status).toBe(200);
    expect(page.body.data.tasks.map((t: { task_id: string }) => t.task_id)).toEqual([ids[2], ids[1]]);
    expect(page.body.data.total).toBeGreaterThanOrEqual(5);
    const next = await api.list('?limit=1&offset=2');
    expect(next.body.data.tasks[0].task_id).toBe(ids[0]);
    const pending = await api.list('?status=pending&limit=500');
    expect(pending.body.data.tasks.every((t: { status: string }) => t.status === 'pending')).toBe(true);
    expect((await api.list('?limit=501')).status).toBe(400);
    expect((await api.list('?status=bogus')).status).toBe(400);
  });

  it('cancels a live task once, then answers 409', async () => {
    const request = idle();
    await api.create(request);
    const cancelled = await api.cancel(request.task_id);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data).toMatchObject({ status: 'cancelled', error_message: 'cancelled' });
    const again = await api.cancel(request.task_id);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
  });
});
