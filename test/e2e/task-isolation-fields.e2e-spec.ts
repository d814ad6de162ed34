import { randomUUID } from 'node:crypto';
import { checkInDispatcher, createTask, operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { RecordingDispatcher } from '../harness/recording-dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';
import { makeWorkflow } from '../harness/webhooks';

const ISOLATION = {
  runtime_class: 'gvisor',
  network: { egress: 'open', allow: [{ cidr: '10.1.0.0/16', ports: [443, 80, 443] }] },
  security: { run_as_non_root: false, read_only_root_filesystem: false },
};

const INVALID: [string, Record<string, unknown>][] = [
  ['runtime_class', { runtime_class: 'Not A Class!' }],
  ['network.egress', { network: { egress: 'everywhere' } }],
  ['network.allow.0.cidr', { network: { egress: 'open', allow: [{ cidr: '10.0.0.0' }] } }],
  ['network.allow.0.ports', { network: { allow: [{ cidr: '10.0.0.0/8', ports: [70000] }] } }],
  ['security.run_as_non_root', { security: { run_as_non_root: 'no' } }],
  ['security.run_as_user', { security: { run_as_user: -1 } }],
];

/** The isolation fields of the task template (CONTRACT section 4): validated, stored, forwarded. */
describe('runtime_class, network and security on controller tasks', () => {
  let system: TestSystem;
  let recorder: RecordingDispatcher;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'controller', env: { TASK_DISPATCH_RETRY_SECONDS: '1' } });
    recorder = await new RecordingDispatcher().start();
    expect((await checkInDispatcher(system, { name: 'recorder', endpoint_url: recorder.url })).status).toBe(200);
  });
  afterAll(async () => {
    await recorder?.stop();
    await system?.close();
  });

  const requestFor = (guid: string) => waitFor(() => recorder.taskRequests.find((request) => request.body.task_id === guid), 15_000, `the task request for ${guid}`);

  it('stores the fields and sends them in the task request', async () => {
    const created = await createTask(system, ISOLATION);
    expect(created.status).toBe(201);
    const stored = { ...ISOLATION, network: { egress: 'open', allow: [{ cidr: '10.1.0.0/16', ports: [80, 443] }] } };
    expect(created.body).toMatchObject(stored);
    expect((await requestFor(created.body.guid)).body).toMatchObject(stored);
  });

  it('sends none of the additive keys for a task that sets none (a seed-only dispatcher sees the seed request)', async () => {
    const created = await createTask(system);
    expect(created.body).toMatchObject({ runtime_class: null, network: null, security: null, skills: [] });
    const request = await requestFor(created.body.guid);
    for (const key of ['runtime_class', 'network', 'security', 'skills']) expect(request.body).not.toHaveProperty(key);
  });

  it.each(INVALID)('refuses an invalid %s on POST /tasks/ with 400 naming it', async (field, overrides) => {
    const answer = await createTask(system, overrides);
    expect(answer.status).toBe(400);
    expect(Object.keys(answer.body.errors)).toContain(field);
  });

  it.each(INVALID)('refuses an invalid task_template.%s on a workflow with 400 naming it', async (field, overrides) => {
    const workflow = makeWorkflow(`bad-${randomUUID().slice(0, 8)}`);
    Object.assign(workflow.task_template as object, overrides);
    const answer = await http('POST', `${system.controllerUrl}/api/v1/workflows/`, { json: workflow, headers: operator(system) });
    expect(answer.status).toBe(400);
    expect(Object.keys(answer.body.errors)).toContain(`task_template.${field}`);
  });

  it('keeps the fields in a workflow template', async () => {
    const workflow = makeWorkflow('isolated');
    Object.assign(workflow.task_template as object, ISOLATION);
    const answer = await http('POST', `${system.controllerUrl}/api/v1/workflows/`, { json: workflow, headers: operator(system) });
    expect(answer.status).toBe(201);
    expect(answer.body.task_template).toMatchObject({ runtime_class: 'gvisor', network: { egress: 'open' }, security: { run_as_non_root: false } });
  });
});

describe('the dispatcher takes the additive task request fields', () => {
  let system: TestSystem;
  beforeAll(async () => {
    // The operator's floor refuses root, a writable root and private ranges unless its settings permit them (agent-floor.e2e-spec.ts).
    system = await startTestSystem({ role: 'dispatcher', env: { AGENT_ALLOW_ROOT: 'true', AGENT_ALLOW_WRITABLE_ROOT_FILESYSTEM: 'true', AGENT_ALLOW_CIDRS: '10.0.0.0/8' } });
  });
  afterAll(() => system?.close());

  const post = (fields: Record<string, unknown>) => {
    const taskId = randomUUID();
    return http('POST', `${system.dispatcherUrl}/tasks`, {
      headers: { 'x-api-key': system.apiKey },
      json: {
        task_id: taskId, agent_image: 'agent-examples/sleep', runtime_target: { type: 'local', namespace: '' }, env: { SLEEP_SECONDS: '1' },
        callback_url: 'http://127.0.0.1:9/callback', callback_token: 'token', timeout_seconds: 60, ...fields,
      },
    });
  };

  it('keeps them on the task', async () => {
    const skill = { slug: 'lint', version_number: 2, content_hash: 'a'.repeat(64), storage_ref: `skills/sha256/${'a'.repeat(64)}.zip` };
    const answer = await post({ ...ISOLATION, skills: [skill] });
    expect(answer.status).toBe(201);
    expect(answer.body.data).toMatchObject({ ...ISOLATION, network: { egress: 'open', allow: [{ cidr: '10.1.0.0/16', ports: [443, 80, 443] }] }, skills: [skill] });
  });

  it.each([
    ...INVALID,
    ['skills.0.content_hash', { skills: [{ slug: 'lint', version_number: 1, content_hash: 'xyz', storage_ref: `skills/sha256/${'a'.repeat(64)}.zip` }] }],
    ['skills.0.storage_ref', { skills: [{ slug: 'lint', version_number: 1, content_hash: 'a'.repeat(64), storage_ref: 'briefs/other.json' }] }],
  ] as [string, Record<string, unknown>][])('refuses an invalid %s with 400 naming it', async (field, overrides) => {
    const answer = await post(overrides);
    expect(answer.status).toBe(400);
    expect(answer.body.ok).toBe(false);
    expect(JSON.stringify(answer.body.error.details)).toContain(field);
  });
});
