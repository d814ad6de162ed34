import { Client } from 'pg';
import { jobName, secretName } from '../../src/dispatcher/runtime/kubernetes-manifests';
import { agentApi, makeTaskRequest, taskApi, waitFor, waitForStatus } from '../harness/dispatcher';
import { startKubeDispatcher, KubeDispatcher } from '../harness/kube-dispatcher';
import { scrape } from '../harness/metrics';

jest.setTimeout(120_000);

/**
 * A task start that meets an outage (the Kubernetes API server refusing or dropping every
 * call for a while, or the database killing the start's statement) waits it out with backoff
 * and goes on: the task ends completed, never failed (issue 22 item 7, issue 23).
 */
describe('agent starts through outages', () => {
  let under: KubeDispatcher;
  let db: Client;

  beforeAll(async () => {
    under = await startKubeDispatcher({});
    db = new Client({ connectionString: under.system.config.databaseUrl! });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await under?.close();
  });

  const kubernetesTask = () => makeTaskRequest({ agent_image: 'registry.example/agents/echo:1', runtime_target: { type: 'kubernetes', namespace: '' } });

  /** The agent's life once its Job is resumed: it runs, checks in and back with the key from its Secret, and exits 0. */
  async function runAgentToCompletion(taskId: string): Promise<any> {
    const { kube, system } = under;
    await waitFor(async () => (kube.store.get('jobs', 'agents', jobName(taskId))?.spec as { suspend?: boolean } | undefined)?.suspend === false, 60_000, 'the Job to be resumed');
    const secret = kube.store.get('secrets', 'agents', secretName(taskId))!;
    const agent = agentApi(system, Buffer.from((secret.data as Record<string, string>)['agent-key'], 'base64').toString());
    kube.jobs.run('agents', jobName(taskId));
    expect((await agent.checkin({ task_id: taskId })).status).toBe(200);
    expect((await agent.checkback({ task_id: taskId, status: 'completed' })).status).toBe(200);
    kube.jobs.finish('agents', jobName(taskId), { exitCode: 0 });
    return waitForStatus(system, taskId, ['completed', 'failed', 'timed_out'], 30_000);
  }

  const retries = async (cause: string) => (await scrape(under.system.dispatcherUrl)).value(`dispatcher_start_retries_total{cause="${cause}"}`) ?? 0;

  it('waits out an API server that answers 503 and drops connections for seconds, then completes the task', async () => {
    const { kube, system } = under;
    const before = await retries('runtime');
    // Every write fails, with 503 and then with its connection dropped, far more than one call's own retries (6) take.
    kube.failNext(8, 503, { match: (method) => method !== 'GET' });
    kube.resetNext(10_000, (method) => method !== 'GET');
    const request = kubernetesTask();
    expect((await taskApi(system).create(request)).status).toBe(201);
    await waitFor(async () => (await retries('runtime')) > before, 30_000, 'a submit to wait out the outage');
    // One call's six attempts were refused before the submit itself stepped back to wait.
    expect(kube.requests.filter((r) => r.status === 503).length).toBeGreaterThanOrEqual(6);
    expect((await taskApi(system).get(request.task_id)).body.data).toMatchObject({ status: 'starting', error_message: null });

    kube.recover();
    expect(kube.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/jobs') && r.status === 201)).toHaveLength(0);
    const task = await runAgentToCompletion(request.task_id);
    expect(task).toMatchObject({ status: 'completed', exit_code: 0, error_message: null });
  });
  afterEach(() => under.kube.recover());

  it("waits out the database killing the start's statement, then completes the task", async () => {
    const { kube, system } = under;
    const before = await retries('database');
    const jobCreates = () => kube.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/jobs') && r.status === 201).length;
    const createdBefore = jobCreates();
    // The Job's creation is slow, so the test holds the task's row before the start records where its agent runs.
    kube.delayNext(1, 3000, (method, path) => method === 'POST' && path.endsWith('/jobs'));
    const request = kubernetesTask();
    expect((await taskApi(system).create(request)).status).toBe(201);
    await waitFor(async () => (await db.query(`SELECT status FROM dispatcher.tasks WHERE task_id = $1`, [request.task_id])).rows[0]?.status === 'starting', 10_000, 'the claim');
    const holder = new Client({ connectionString: system.config.databaseUrl! });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM dispatcher.tasks WHERE task_id = $1 FOR UPDATE`, [request.task_id]);
      const waiting = async () => (await db.query(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%runtime_ref%'`,
      )).rows.map((row) => row.pid as number);
      // Its connection killed (pg_terminate_backend), as a failover or an operator would: the statement fails.
      const [first] = await waitFor(async () => ((await waiting()).length > 0 ? await waiting() : null), 20_000, 'the start to wait for the row');
      await db.query('SELECT pg_terminate_backend($1)', [first]);
      await waitFor(async () => (await retries('database')) > before, 10_000, 'the start to count a database retry');
      await waitFor(async () => (await waiting()).some((pid) => pid !== first), 20_000, 'the start to try again');
      expect((await taskApi(system).get(request.task_id)).body.data).toMatchObject({ status: 'starting', error_message: null });
      await holder.query('COMMIT');
    } finally {
      await holder.end();
    }

    const task = await runAgentToCompletion(request.task_id);
    expect(task).toMatchObject({ status: 'completed', exit_code: 0, error_message: null, runtime: { ref: `agents/${jobName(request.task_id)}` } });
    // Started once: the start went on, rather than being failed and its task's agent started again.
    expect(jobCreates() - createdBefore).toBe(1);
  });
});
