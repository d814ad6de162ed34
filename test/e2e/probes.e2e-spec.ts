import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';

describe('probes, metrics and docs of both roles', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ storage: 's3' });
  });
  afterAll(() => system?.close());

  it.each([
    ['controller', '/health/'],
    ['controller', '/health'],
    ['dispatcher', '/health'],
  ])('%s %s answers 200 with the database up', async (role, path) => {
    const base = role === 'controller' ? system.controllerUrl : system.dispatcherUrl;
    const answer = await http('GET', base + path);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: 'ok', info: { database: { status: 'up' } } });
  });

  it('controller /ready/ reports database, cache and object storage', async () => {
    const answer = await http('GET', `${system.controllerUrl}/ready/`);
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body.details).sort()).toEqual(['cache', 'database', 'object_storage']);
  });

  it('dispatcher /ready reports the database and each runtime backend', async () => {
    const answer = await http('GET', `${system.dispatcherUrl}/ready`);
    expect(answer.status).toBe(200);
    expect(answer.body.details.database).toEqual({ status: 'up' });
  });

  it.each(['controller', 'dispatcher'])('%s serves Prometheus metrics at /metrics', async (role) => {
    const base = role === 'controller' ? system.controllerUrl : system.dispatcherUrl;
    await http('GET', `${base}/health`);
    const answer = await http('GET', `${base}/metrics`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toContain('text/plain');
    expect(answer.text).toContain(`http_requests_total{role="${role}",method="GET",route="/health",status="200"}`);
    // Each port serves its own role's series only; the process's own once, on the controller's port in `all`.
    expect(answer.text).not.toContain(`role="${role === 'controller' ? 'dispatcher' : 'controller'}"`);
    expect(answer.text.includes('process_resident_memory_bytes')).toBe(role === 'controller');
  });

  it.each(['controller', 'dispatcher'])('%s serves its OpenAPI document', async (role) => {
    const base = role === 'controller' ? system.controllerUrl : system.dispatcherUrl;
    const ui = await http('GET', `${base}/api/docs`);
    expect(ui.status).toBe(200);
    const document = await http('GET', `${base}/api/docs/openapi.json`);
    expect(document.body.openapi).toMatch(/^3\./);
  });
});
