import { createObjectStorage } from '../../src/shared/storage/storage.module';
import { http } from '../harness/http';
import { agentApi, agentKeyOf, makeTaskRequest, taskApi, waitForStatus } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

// The image runs a process that never speaks, so each spec plays the agent itself.
const SILENT = { LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'test/silent': 'sleep 30' }) };

async function startedTask(system: TestSystem) {
  const request = makeTaskRequest({ agent_image: 'test/silent' });
  await createObjectStorage(system.config).put(request.brief_key, Buffer.from('{"brief":true}'));
  await taskApi(system).create(request);
  await waitForStatus(system, request.task_id, ['starting']);
  return { taskId: request.task_id as string, briefKey: request.brief_key as string, agent: agentApi(system, agentKeyOf(system, request.task_id)) };
}

describe('agent protocol', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher', env: SILENT });
  });
  afterAll(() => system?.close());

  it('checks in (starting -> running), takes progress, checks back once', async () => {
    const { taskId, briefKey, agent } = await startedTask(system);
    const checkin = await agent.checkin({ task_id: taskId });
    expect(checkin.body).toEqual({ ok: true, data: { brief_key: briefKey, env: { GREETING: 'hello' }, skills: [] } });
    expect((await agent.checkin({ task_id: taskId })).body).toEqual(checkin.body);
    expect((await taskApi(system).get(taskId)).body.data.status).toBe('running');
    expect((await agent.progress({ task_id: taskId, percentage: 40, message: 'busy', data: { n: 1 } })).body).toEqual({ ok: true });
    expect((await taskApi(system).get(taskId)).body.data.progress).toMatchObject({ percentage: 40, message: 'busy', data: { n: 1 } });
    const result = { task_id: taskId, status: 'completed', result_key: `results/${taskId}/r.txt`, result_metadata: {}, error: '' };
    expect((await agent.checkback(result)).status).toBe(200);
    expect((await agent.checkback(result)).status).toBe(200);
    expect((await agent.checkback({ ...result, status: 'failed' })).status).toBe(409);
    expect((await agent.checkin({ task_id: taskId })).status).toBe(409);
    expect((await agent.progress({ task_id: taskId, percentage: 50 })).status).toBe(409);
  });

  it.each([[101], [-1], [50.5], ['50']])('refuses percentage %p with 400', async (percentage) => {
    const { taskId, agent } = await startedTask(system);
    const answer = await agent.progress({ task_id: taskId, percentage });
    expect(answer.status).toBe(400);
    expect(answer.body.error.details.fields).toHaveProperty('percentage');
  });

  it('refuses a check-back status other than completed or failed with 400', async () => {
    const { taskId, agent } = await startedTask(system);
    expect((await agent.checkback({ task_id: taskId, status: 'timed_out' })).status).toBe(400);
  });

  it('refuses a missing key (401), a made-up key (401) and another task\'s key (403)', async () => {
    const { taskId } = await startedTask(system);
    const other = makeTaskRequest().task_id;
    const missing = await http('POST', `${system.dispatcherUrl}/agent/checkin`, { json: { task_id: taskId } });
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('not_authenticated');
    expect((await agentApi(system, 'made-up').checkin({ task_id: taskId })).body.error.code).toBe('authentication_failed');
    const foreign = await agentApi(system, agentKeyOf(system, other)).checkin({ task_id: taskId });
    expect(foreign.status).toBe(403);
    expect(foreign.body.error.code).toBe('permission_denied');
  });

  it('answers 404 for an unknown task, and takes the dispatcher-wide key for any task', async () => {
    const unknown = makeTaskRequest().task_id;
    expect((await agentApi(system, agentKeyOf(system, unknown)).checkin({ task_id: unknown })).status).toBe(404);
    expect((await agentApi(system, system.agentKey).checkin({ task_id: unknown })).status).toBe(404);
    expect((await agentApi(system, agentKeyOf(system, unknown)).checkback({ task_id: unknown, status: 'completed' })).status).toBe(404);
    const { taskId } = await startedTask(system);
    expect((await agentApi(system, system.agentKey).checkin({ task_id: taskId })).status).toBe(200);
  });

  it('reads only its brief and writes only under results/<task_id>/', async () => {
    const { taskId, briefKey, agent } = await startedTask(system);
    const other = await startedTask(system);
    const brief = await agent.read(briefKey);
    expect(brief.status).toBe(200);
    expect(brief.text).toBe('{"brief":true}');
    expect((await agent.read(other.briefKey)).status).toBe(403);
    expect((await agent.read(`results/${taskId}/r.txt`)).status).toBe(403);
    const written = await agent.write(`results/${taskId}/out/r.txt`, 'result bytes');
    expect(written.status).toBe(200);
    const stored = await createObjectStorage(system.config).stat(`results/${taskId}/out/r.txt`);
    expect(stored?.size).toBe('result bytes'.length);
    expect((await agent.write(`results/${other.taskId}/r.txt`, 'x')).status).toBe(403);
    expect((await agent.write('briefs/mine.json', 'x')).status).toBe(403);
    expect((await agent.write(`results/${taskId}/../../briefs/x`, 'x')).status).toBe(403);
  });
});

describe('agent protocol with AGENT_KEY_PER_TASK_ONLY', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher', env: { ...SILENT, AGENT_KEY_PER_TASK_ONLY: 'true' } });
  });
  afterAll(() => system?.close());

  it('refuses the dispatcher-wide key with 403 and takes the per-task key', async () => {
    const { taskId, agent } = await startedTask(system);
    const global = await agentApi(system, system.agentKey).checkin({ task_id: taskId });
    expect(global.status).toBe(403);
    expect(global.body.error.message).toContain('AGENT_KEY_PER_TASK_ONLY');
    expect((await agent.checkin({ task_id: taskId })).status).toBe(200);
  });
});
