import { getTask, makeTask, operator } from '../harness/controller-tasks';
import { makeTaskRequest, taskApi, waitFor } from '../harness/dispatcher';
import { http } from '../harness/http';
import { KillableServer, privateRedis, privateS3 } from '../harness/killable-servers';
import { randomPackage, skillsApi } from '../harness/skills';
import { startTestSystem, TestSystem } from '../harness/system';

jest.setTimeout(60_000);

const ready = (system: TestSystem) => http('GET', `${system.controllerUrl}/ready/`);

/** Real Redis and S3 servers of the system's own, SIGKILLed mid-test and started again on their port. */
describe('a Redis server that stops and starts again', () => {
  let redis: KillableServer & { url: string };
  let system: TestSystem;

  beforeAll(async () => {
    redis = await privateRedis();
    system = await startTestSystem({ role: 'controller', env: { REDIS_URL: redis.url } });
  });
  afterAll(async () => {
    await system?.close();
    await redis?.kill();
  });

  const dispatchers = (authorization: string) => http('GET', `${system.controllerUrl}/api/v1/dispatchers/`, { headers: { authorization } });

  it('keeps authentication working while down, says the cache is down on /ready/, and recovers', async () => {
    expect((await ready(system)).status).toBe(200);
    await redis.kill();

    expect((await dispatchers(`Token ${system.apiToken}`)).status).toBe(200);
    const refused = await dispatchers('Token not-the-token');
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 401, code: 'authentication_failed' });
    const down = await ready(system);
    expect(down.status).toBe(503);
    expect(down.body.error).toHaveProperty('cache');
    expect(down.body.info).toHaveProperty('database');

    await redis.start();
    await waitFor(async () => (await ready(system)).status === 200, 20_000, '/ready/ to answer 200 again');
    expect((await dispatchers(`Token ${system.apiToken}`)).status).toBe(200);
  });
});

describe('an S3 server that stops and starts again', () => {
  let s3: KillableServer & { endpoint: string };
  let system: TestSystem;

  beforeAll(async () => {
    s3 = await privateS3();
    system = await startTestSystem({ role: 'all', storage: 's3', env: { S3_ENDPOINT: s3.endpoint } });
  });
  afterAll(async () => {
    await system?.close();
    await s3?.kill();
  });

  const expectUnavailable = (answer: { status: number; headers: Headers }) => {
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('5');
  };

  it('answers 503 unavailable where objects are needed, stores nothing half, and recovers', async () => {
    const skills = skillsApi(system);
    const slug = await skills.makeSkill();
    const first = randomPackage();
    expect((await skills.upload(slug, first)).status).toBe(201);
    const sleeper = makeTaskRequest({ agent_image: 'agent-examples/sleep', brief_key: '', env: { SLEEP_SECONDS: '60' } });
    expect((await taskApi(system).create(sleeper)).status).toBe(201);
    await s3.kill();

    const second = randomPackage();
    const upload = await skills.upload(slug, second);
    expectUnavailable(upload);
    expect(upload.body.code).toBe('unavailable');
    expect((await skills.get(slug)).body.versions).toHaveLength(1);
    expectUnavailable(await skills.download(slug));
    const named = await http('POST', `${system.controllerUrl}/api/v1/tasks/`, { headers: operator(system), json: makeTask({ brief: undefined, brief_key: 'briefs/elsewhere.json' }) });
    expectUnavailable(named);
    // An inline brief waits in the database until the store is back: the task is taken.
    const inline = await http('POST', `${system.controllerUrl}/api/v1/tasks/`, { headers: operator(system), json: makeTask() });
    expect(inline.status).toBe(201);
    const result = `${system.dispatcherUrl}/agent/objects/results/${sleeper.task_id}/out.txt`;
    const agent = { 'x-agent-key': system.agentKey, 'content-type': 'text/plain' };
    const put = await http('PUT', result, { headers: agent, body: 'result' });
    expectUnavailable(put);
    expect(put.body).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    expect((await ready(system)).body.error).toHaveProperty('object_storage');

    await s3.start();
    await waitFor(async () => (await ready(system)).status === 200, 20_000, '/ready/ to answer 200 again');
    expect((await skills.upload(slug, second)).status).toBe(201);
    const download = await skills.download(slug, { version: 1 });
    expect({ status: download.status, same: download.bytes.equals(first) }).toEqual({ status: 200, same: true });
    expect((await http('PUT', result, { headers: agent, body: 'result' })).status).toBeLessThan(300);
    // The waiting brief is written once the store answers, and the task goes on to run.
    await waitFor(async () => (await getTask(system, inline.body.guid)).body.status === 'completed', 30_000, 'the inline-brief task to complete');
    await taskApi(system).cancel(sleeper.task_id);
  });
});
