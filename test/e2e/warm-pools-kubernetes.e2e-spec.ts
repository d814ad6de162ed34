import { jobName, secretName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { networkPolicyName } from '../../src/dispatcher/runtime/kubernetes-network-policy';
import { CLAIMED_TASK_LABEL } from '../../src/dispatcher/runtime/kubernetes-warm-claim';
import { agentApi, makeTaskRequest, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { KubeDispatcher, startKubeDispatcher } from '../harness/kube-dispatcher';
import { claimApi, makePool, poolAgents, poolKeyOf, waitForStarted } from '../harness/warm-pools';

jest.setTimeout(60_000);

const IMAGE = 'registry.example/agents/echo:1';

/** The isolation of a warm pod on Kubernetes, on the test API server: the pool agent's claim is played by the test. */
describe('warm pools on the kubernetes backend', () => {
  let under: KubeDispatcher;

  beforeAll(async () => {
    under = await startKubeDispatcher({
      WARM_POOLS: JSON.stringify([makePool({ name: 'kecho', image: IMAGE, backend: 'kubernetes', size: 1 })]),
    });
    // The test API server runs no container: the pod is there, its claim is played below.
    await waitForStarted(under.system, 'kecho', 1);
  });
  afterAll(() => under?.close());

  it('starts a warm pod reaching DNS and the dispatcher only, with the pool key and no task', async () => {
    const [agent] = await poolAgents(under.system);
    const policy = under.kube.store.get('networkpolicies', 'agents', networkPolicyName(agent.agent_id))!;
    const egress = JSON.stringify((policy.spec as { egress: unknown[] }).egress);
    expect(egress).not.toContain('0.0.0.0/0');
    const job = under.kube.store.get('jobs', 'agents', jobName(agent.agent_id))!;
    const env = (job.spec as any).template.spec.containers[0].env as { name: string; value?: string }[];
    expect(env.map((entry) => entry.name)).toEqual(expect.arrayContaining(['DISPATCHER_URL', 'AGENT_POOL', 'AGENT_ID', 'AGENT_KEY']));
    expect(env.map((entry) => entry.name)).not.toContain('TASK_ID');
  });

  it("has the task's NetworkPolicy, Secret and pod label in place before the claim is answered", async () => {
    const { system, kube } = under;
    const [agent] = (await poolAgents(system)).filter((row) => row.state === 'idle');
    kube.jobs.run('agents', jobName(agent.agent_id));
    const claim = claimApi(system, poolKeyOf(system, 'kecho'))({ pool: 'kecho', agent_id: agent.agent_id }, 20).then((answer) => {
      // What the cluster holds at the moment the answer arrives.
      const request = answer.body?.data?.task_id as string;
      const pod = kube.store.list('pods', { namespace: 'agents' }).find((candidate) => candidate.metadata.labels?.['task-id'] === agent.agent_id);
      return {
        answer,
        policy: request ? kube.store.get('networkpolicies', 'agents', networkPolicyName(request)) : undefined,
        secret: request ? kube.store.get('secrets', 'agents', secretName(request)) : undefined,
        label: pod?.metadata.labels?.[CLAIMED_TASK_LABEL],
      };
    });
    const request = makeTaskRequest({ agent_image: IMAGE, runtime_target: { type: 'kubernetes', namespace: '' }, brief_key: '', ports: [], network: { egress: 'open' } });
    const sentBefore = kube.requests.length;
    expect((await taskApi(system).create(request)).status).toBe(201);
    const seen = await claim;
    // The agent's Job and pod come from the watches: readying it reads neither.
    const reads = kube.requests.slice(sentBefore).filter((call) => call.method === 'GET' && call.query.get('watch') !== 'true'
      && (call.path.endsWith(`/jobs/${jobName(agent.agent_id)}`) || (call.path.endsWith('/pods') && call.query.get('labelSelector')?.includes(agent.agent_id))));
    expect(reads).toEqual([]);
    expect(seen.answer.status).toBe(200);
    expect(seen.answer.body.data.task_id).toBe(request.task_id);
    expect(seen.policy?.spec).toMatchObject({ podSelector: { matchLabels: { [CLAIMED_TASK_LABEL]: request.task_id } } });
    expect(JSON.stringify((seen.policy!.spec as { egress: unknown[] }).egress)).toContain('0.0.0.0/0');
    expect(seen.secret).toBeDefined();
    expect(seen.label).toBe(request.task_id);

    const agentCalls = agentApi(system, seen.answer.body.data.agent_key);
    expect((await agentCalls.checkin({ task_id: request.task_id })).status).toBe(200);
    expect((await agentCalls.checkback({ task_id: request.task_id, status: 'completed' })).status).toBe(200);
    expect(await waitForStatus(system, request.task_id, ['completed'])).toMatchObject({ warm: true, pool: 'kecho' });
    // The pool is refilled with a new pod: the used one never waits for another task.
    await waitFor(async () => (await poolAgents(system)).some((row) => row.state === 'idle' && row.agent_id !== agent.agent_id), 10_000, 'a new idle agent');
    expect((await claimApi(system, poolKeyOf(system, 'kecho'))({ pool: 'kecho', agent_id: agent.agent_id })).body.data.task_id).toBe(request.task_id);
  });
});
