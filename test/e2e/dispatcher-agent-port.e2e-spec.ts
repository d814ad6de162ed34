import { loadConfig } from '../../src/shared/config/config';
import { http } from '../harness/http';
import { agentKeyOf, makeTaskRequest, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { freePort } from '../harness/ports';
import { startTestSystem, TestSystem } from '../harness/system';

jest.setTimeout(60_000);

// An agent that prints the DISPATCHER_URL it was given, then exits.
const PRINTS_URL = { LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'test/prints-url': 'printenv DISPATCHER_URL' }) };

describe('agents on a port of their own (AGENT_PORT)', () => {
  let system: TestSystem;
  let agentUrl: string;

  beforeAll(async () => {
    const agentPort = await freePort();
    agentUrl = `http://127.0.0.1:${agentPort}`;
    system = await startTestSystem({ role: 'dispatcher', env: { ...PRINTS_URL, AGENT_PORT: String(agentPort), AGENT_API_ON_MAIN_PORT: 'false' } });
  });
  afterAll(() => system?.close());

  it('answers the agent API there and 404 to the task API, metrics and docs', async () => {
    const refused = await http('POST', `${agentUrl}/agent/checkin`, { headers: { 'x-agent-key': 'wrong' }, json: { task_id: '6f1c8a52-0c3e-4d7b-9a55-4f0b7f0e2a11' } });
    expect(refused.status).toBe(401);
    for (const path of ['/tasks', '/metrics', '/api/docs/openapi.json', '/health', '/agentx']) {
      const answer = await http('GET', `${agentUrl}${path}`, { headers: { 'x-api-key': system.apiKey } });
      expect({ path, status: answer.status, body: answer.body }).toEqual({ path, status: 404, body: { ok: false, error: expect.objectContaining({ code: 'not_found' }) } });
    }
  });

  it('gives agents that port in DISPATCHER_URL and serves them there, not on the main port once told so', async () => {
    const request = makeTaskRequest({ agent_image: 'test/prints-url' });
    await taskApi(system).create(request);
    await waitForStatus(system, request.task_id, ['failed', 'completed']);
    const logs = await waitFor(async () => {
      const answer = await http('GET', `${system.dispatcherUrl}/tasks/${request.task_id}/logs`, { headers: { 'x-api-key': system.apiKey } });
      return answer.text.includes('http') ? answer.text : null;
    }, 10_000, 'the agent output');
    expect(logs.trim()).toBe(agentUrl);

    const key = { 'x-agent-key': agentKeyOf(system, request.task_id) };
    const onMain = await http('POST', `${system.dispatcherUrl}/agent/checkin`, { headers: key, json: { task_id: request.task_id } });
    expect(onMain.status).toBe(404);
    const onAgentPort = await http('POST', `${agentUrl}/agent/checkin`, { headers: key, json: { task_id: request.task_id } });
    expect(onAgentPort.status).toBe(409);
  });

  it('sets keep-alive above load balancers idle time, header and request time-outs and a connection cap', () => {
    const server = system.dispatcher!.getHttpServer();
    expect(server.keepAliveTimeout).toBe(65_000);
    expect(server.headersTimeout).toBe(66_000);
    expect(server.requestTimeout).toBe(300_000);
    expect(server.maxConnections).toBe(10_000);
  });
});

describe('agent port settings', () => {
  const base = { ROLE: 'dispatcher', API_KEY: 'k', AGENT_KEY: 'a', DISPATCHER_PUBLIC_URL: 'https://dispatcher.example:8080' };

  it('moves DISPATCHER_PUBLIC_URL to AGENT_PORT unless AGENT_PUBLIC_URL says where agents reach it', () => {
    expect(loadConfig(base).agentDispatcherUrl).toBe('https://dispatcher.example:8080');
    expect(loadConfig({ ...base, AGENT_PORT: '8081' }).agentDispatcherUrl).toBe('https://dispatcher.example:8081');
    expect(loadConfig({ ...base, AGENT_PORT: '8081', AGENT_PUBLIC_URL: 'http://agents.svc/' }).agentDispatcherUrl).toBe('http://agents.svc');
    expect(() => loadConfig({ ...base, DISPATCHER_PORT: '8080', AGENT_PORT: '8080' })).toThrow('AGENT_PORT must differ');
  });
});
