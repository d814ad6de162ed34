import { agentApi, agentKeyOf, makeTaskRequest, taskApi, waitForStatus } from '../harness/dispatcher';
import { startTestSystem, TestSystem } from '../harness/system';

const FLOOR = {
  LOCAL_IMAGE_COMMANDS: JSON.stringify({ 'registry.example/agents/silent:1': 'sleep 30', 'other.example/x:1': 'sleep 30' }),
  AGENT_RUNTIME_CLASSES: 'kata,gvisor,runc-hardened',
  AGENT_RUNTIME_CLASS: 'gvisor',
  AGENT_EGRESS_MAX: 'dispatcher',
  AGENT_IMAGE_PATTERNS: 'registry.example/agents/*',
  AGENT_MAX_CPU: '2',
  AGENT_MAX_MEMORY: '4Gi',
};

/** The operator's floor (CONTRACT section 5): a task asking beyond it is a 400 `invalid` naming the setting, on every backend. */
describe("the operator's floor at POST /tasks", () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher', env: FLOOR });
  });
  afterAll(() => system?.close());

  const task = (overrides: Record<string, unknown> = {}) => makeTaskRequest({ agent_image: 'registry.example/agents/silent:1', ...overrides });

  async function refused(overrides: Record<string, unknown>, field: string, setting: string) {
    const answer = await taskApi(system).create(task(overrides));
    expect(answer.status).toBe(400);
    expect(answer.body.ok).toBe(false);
    expect(answer.body.error.code).toBe('invalid');
    expect(answer.body.error.message).toContain(setting);
    expect(JSON.stringify(answer.body.error.details)).toContain(field);
  }

  it('refuses a runtime class weaker than the default, or not listed, and takes a stronger one', async () => {
    await refused({ runtime_class: 'runc-hardened' }, 'runtime_class', 'AGENT_RUNTIME_CLASSES');
    await refused({ runtime_class: 'runc' }, 'runtime_class', 'AGENT_RUNTIME_CLASSES');
    expect((await taskApi(system).create(task({ runtime_class: 'kata' }))).status).toBe(201);
    expect((await taskApi(system).create(task({ runtime_class: 'gvisor' }))).status).toBe(201);
  });

  it('refuses egress wider than AGENT_EGRESS_MAX', async () => {
    await refused({ network: { egress: 'open' } }, 'network.egress', 'AGENT_EGRESS_MAX');
    expect((await taskApi(system).create(task({ network: { egress: 'none' } }))).status).toBe(201);
  });

  it('refuses an allow entry in link-local, cluster or private ranges, the metadata address too', async () => {
    await refused({ network: { egress: 'none', allow: [{ cidr: '169.254.169.254/32', ports: [80] }] } }, 'network.allow[0].cidr', 'AGENT_ALLOW_CIDRS');
    await refused({ network: { egress: 'none', allow: [{ cidr: '8.8.8.8/32' }, { cidr: '10.0.0.0/8' }] } }, 'network.allow[1].cidr', 'AGENT_ALLOW_CIDRS');
    await refused({ network: { egress: 'none', allow: [{ cidr: 'fd00::/8' }] } }, 'network.allow[0].cidr', 'AGENT_ALLOW_CIDRS');
    await refused({ network: { egress: 'none', allow: [{ cidr: '0.0.0.0/0' }] } }, 'network.allow[0].cidr', 'AGENT_ALLOW_CIDRS');
    expect((await taskApi(system).create(task({ network: { egress: 'none', allow: [{ cidr: '203.0.113.0/24', ports: [443] }] } }))).status).toBe(201);
  });

  it('refuses root, by run_as_non_root false or run_as_user 0', async () => {
    await refused({ security: { run_as_non_root: false } }, 'security', 'AGENT_ALLOW_ROOT');
    await refused({ security: { run_as_user: 0 } }, 'security', 'AGENT_ALLOW_ROOT');
    expect((await taskApi(system).create(task({ security: { run_as_user: 1000 } }))).status).toBe(201);
  });

  it('refuses a writable root filesystem unless AGENT_ALLOW_WRITABLE_ROOT_FILESYSTEM', async () => {
    await refused({ security: { read_only_root_filesystem: false } }, 'security.read_only_root_filesystem', 'AGENT_ALLOW_WRITABLE_ROOT_FILESYSTEM');
    expect((await taskApi(system).create(task({ security: { read_only_root_filesystem: true } }))).status).toBe(201);
  });

  it('refuses an image outside AGENT_IMAGE_PATTERNS and resources over the ceilings', async () => {
    await refused({ agent_image: 'other.example/x:1' }, 'agent_image', 'AGENT_IMAGE_PATTERNS');
    await refused({ resources: { cpu: '2500m', memory: '1Gi' } }, 'resources.cpu', 'AGENT_MAX_CPU');
    await refused({ resources: { cpu: '1', memory: '5Gi' } }, 'resources.memory', 'AGENT_MAX_MEMORY');
    expect((await taskApi(system).create(task({ resources: { cpu: '2', memory: '4Gi' } }))).status).toBe(201);
  });

  it('refuses progress data over 16 KiB with 400, and takes it under', async () => {
    const request = task();
    expect((await taskApi(system).create(request)).status).toBe(201);
    await waitForStatus(system, request.task_id, ['starting']);
    const agent = agentApi(system, agentKeyOf(system, request.task_id));
    expect((await agent.checkin({ task_id: request.task_id })).status).toBe(200);
    const big = await agent.progress({ task_id: request.task_id, percentage: 10, data: { blob: 'x'.repeat(17 * 1024) } });
    expect(big.status).toBe(400);
    expect(big.body.error).toMatchObject({ code: 'invalid', message: expect.stringContaining('AGENT_PROGRESS_DATA_MAX_BYTES') });
    expect((await agent.progress({ task_id: request.task_id, percentage: 10, data: { blob: 'x'.repeat(15 * 1024) } })).status).toBe(200);
  });
});

describe('a floor that allows a writable root filesystem', () => {
  let system: TestSystem;
  beforeAll(async () => {
    system = await startTestSystem({ role: 'dispatcher', env: { ...FLOOR, AGENT_ALLOW_WRITABLE_ROOT_FILESYSTEM: 'true' } });
  });
  afterAll(() => system?.close());

  it('takes read_only_root_filesystem false and keeps it on the task', async () => {
    const request = makeTaskRequest({ agent_image: 'registry.example/agents/silent:1', security: { read_only_root_filesystem: false } });
    const answer = await taskApi(system).create(request);
    expect(answer.status).toBe(201);
    expect(answer.body.data.security).toEqual({ read_only_root_filesystem: false });
  });
});
