import { createTask, getTask, operator } from '../harness/controller-tasks';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { waitFor } from '../harness/wait';

jest.setTimeout(120_000);

/** The concurrency strategies through the real system (issue 21, item 2), and the new fields' refusals. */
describe('concurrency strategies', () => {
  let system: TestSystem;

  beforeAll(async () => {
    system = await startTestSystem({ role: 'all', storage: 's3' });
  });
  afterAll(() => system?.close());

  const view = async (guid: string) => (await getTask(system, guid)).body;
  const onDispatcher = async (guid: string) =>
    (await http('GET', `${system.dispatcherUrl}/tasks/${guid}`, { headers: { 'x-api-key': system.apiKey } })).body.data;
  const sleeper = (key: string, strategy: string) => ({
    agent_image: 'agent-examples/sleep',
    env: { SLEEP_SECONDS: '3600' },
    concurrency: { key, limit: 1, strategy },
  });

  it('cancel_in_progress: the new task stops the running agent through its dispatcher, and replaces a waiting one', async () => {
    const first = (await createTask(system, sleeper('pr-7', 'cancel_in_progress'))).body;
    await waitFor(async () => (await onDispatcher(first.guid))?.status === 'running', 30_000, 'the first agent to run');

    const second = (await createTask(system, sleeper('pr-7', 'cancel_in_progress'))).body;
    const third = (await createTask(system, sleeper('pr-7', 'cancel_in_progress'))).body;
    expect(second.status).toBe('pending');
    // The second was waiting for the first to stop: the third replaces it, so one waits.
    expect(await view(second.guid)).toMatchObject({ status: 'cancelled', error_message: `replaced by the newer task ${third.guid} of pr-7 (cancel_in_progress)` });

    await waitFor(async () => (await view(first.guid)).status === 'cancelled', 40_000, 'the first task to be cancelled');
    expect((await onDispatcher(first.guid)).status).toBe('cancelled');
    await waitFor(async () => (await onDispatcher(third.guid))?.status === 'running', 40_000, 'the newest agent to run');
    expect((await view(third.guid)).status).not.toBe('cancelled');
  });

  it('cancel_newest: a task of a full key is stored cancelled at once, with the reason', async () => {
    const running = (await createTask(system, sleeper('nightly', 'cancel_newest'))).body;
    expect(running.status).toBe('pending');
    const refused = await createTask(system, sleeper('nightly', 'cancel_newest'));
    expect(refused.status).toBe(201);
    expect(refused.body).toMatchObject({
      status: 'cancelled',
      concurrency_key: 'nightly',
      error_message: 'concurrency limit of nightly reached (1/1); the newest task is cancelled (cancel_newest)',
    });
    await waitFor(async () => ['dispatched', 'running'].includes((await view(running.guid)).status), 30_000, 'the first task to start');
  });

  it('refuses a priority or a concurrency out of range with 400 naming the field', async () => {
    for (const [fields, field] of [
      [{ priority: 1001 }, 'priority'],
      [{ priority: 'high' }, 'priority'],
      [{ concurrency: { key: 'k', limit: 0 } }, 'concurrency.limit'],
      [{ concurrency: { key: 'k', limit: 2, strategy: 'drop' } }, 'concurrency.strategy'],
    ] as const) {
      const answer = await createTask(system, fields);
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe('invalid');
      expect(Object.keys(answer.body.errors)).toContain(field);
    }
  });

  it('keeps a workflow\'s concurrency and weight, and refuses a key template that is not over the payload', async () => {
    const workflow = {
      id: 'queued-reviews',
      triggers: [{ source: 'forge', event: 'push' }],
      task_template: { agent_image: 'agent-examples/echo', runtime_target: { type: 'local' }, priority: 5 },
      concurrency: { key: '{{payload.repository.full_name}}', limit: 2, strategy: 'cancel_in_progress' },
      weight: 3,
    };
    const created = await http('POST', `${system.controllerUrl}/api/v1/workflows/`, { headers: operator(system), json: workflow });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ concurrency: workflow.concurrency, weight: 3, task_template: { priority: 5 } });
    const bad = await http('POST', `${system.controllerUrl}/api/v1/workflows/`, {
      headers: operator(system),
      json: { ...workflow, id: 'bad-key', concurrency: { key: '{{secrets.token}}', limit: 1 } },
    });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.errors)).toContain('concurrency.key');
    const heavy = await http('POST', `${system.controllerUrl}/api/v1/workflows/`, { headers: operator(system), json: { ...workflow, id: 'too-heavy', weight: 101 } });
    expect(Object.keys(heavy.body.errors)).toContain('weight');
  });
});
