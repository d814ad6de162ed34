import { spawn, ChildProcess } from 'node:child_process';
import { http } from '../harness/http';
import { freePort } from '../harness/ports';
import { startTestSystem, TestSystem } from '../harness/system';

describe('errors in each role\'s shape', () => {
  let system: TestSystem;
  beforeAll(async () => {
    system = await startTestSystem({ env: { MAX_JSON_BYTES: '2048' } });
  });
  afterAll(() => system?.close());

  it('controller: malformed JSON is 400 parse_error', async () => {
    const answer = await http('POST', `${system.controllerUrl}/api/v1/tasks/`, {
      body: '{"agent_image": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ code: 'parse_error', detail: expect.any(String) });
  });

  it('dispatcher: malformed JSON is 400 parse_error in its envelope', async () => {
    const answer = await http('POST', `${system.dispatcherUrl}/tasks`, {
      body: '[1,',
      headers: { 'content-type': 'application/json' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ ok: false, error: { code: 'parse_error', message: expect.any(String), details: {} } });
  });

  it.each(['controller', 'dispatcher'])('%s: a body over MAX_JSON_BYTES is 413', async (role) => {
    const url = role === 'controller' ? `${system.controllerUrl}/api/v1/tasks/` : `${system.dispatcherUrl}/tasks`;
    const answer = await http('POST', url, { json: { padding: 'x'.repeat(4096) } });
    expect(answer.status).toBe(413);
    expect(JSON.stringify(answer.body)).toContain('payload_too_large');
  });

  it('controller: an unknown route is 404 not_found', async () => {
    const answer = await http('GET', `${system.controllerUrl}/api/v1/nothing-here/`);
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ code: 'not_found', detail: 'Not found.' });
  });

  it('dispatcher: an unknown route is 404 not_found in its envelope', async () => {
    const answer = await http('DELETE', `${system.dispatcherUrl}/nothing-here`);
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ ok: false, error: { code: 'not_found', message: 'Not found.', details: {} } });
  });

  it('a body of an unreadable type is 415', async () => {
    const answer = await http('POST', `${system.controllerUrl}/api/v1/tasks/`, {
      body: 'hello',
      headers: { 'content-type': 'text/plain' },
    });
    expect(answer.status).toBe(415);
    expect(answer.body.code).toBe('unsupported_media_type');
  });

  it.each(['/api/v1/dispatchers/', '/api/v1/dispatchers', '/api/v1/tasks/', '/api/v1/tasks'])(
    'controller serves %s with or without its trailing slash, never by redirect',
    async (path) => {
      const answer = await fetch(`${system.controllerUrl}${path}`, {
        headers: { authorization: `Token ${system.apiToken}` },
        redirect: 'manual',
      });
      expect(answer.status).toBe(200);
    },
  );

  it('every answer carries a request id, and a given one is kept', async () => {
    const given = await http('GET', `${system.controllerUrl}/health/`, { headers: { 'x-request-id': 'abc-123' } });
    expect(given.headers.get('x-request-id')).toBe('abc-123');
    const made = await http('GET', `${system.dispatcherUrl}/health`);
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('readiness follows the cache', () => {
  let redis: ChildProcess;
  let system: TestSystem;

  beforeAll(async () => {
    const port = await freePort();
    redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    system = await startTestSystem({ env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
  });
  afterAll(async () => {
    redis?.kill('SIGKILL');
    await system?.close();
  });

  it('/ready/ is 200 with Redis up and 503 naming the cache when it stops', async () => {
    expect((await http('GET', `${system.controllerUrl}/ready/`)).status).toBe(200);
    redis.kill('SIGKILL');
    await new Promise((resolve) => redis.once('exit', resolve));
    const answer = await http('GET', `${system.controllerUrl}/ready/`);
    expect(answer.status).toBe(503);
    expect(answer.body.status).toBe('error');
    expect(answer.body.error).toHaveProperty('cache.status', 'down');
    expect(answer.body.info.database).toEqual({ status: 'up' });
    expect((await http('GET', `${system.controllerUrl}/health/`)).status).toBe(200);
  });
});
