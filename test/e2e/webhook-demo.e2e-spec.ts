import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { OBJECT_STORAGE, ObjectStorage, readAll } from '../../src/shared/storage/object-storage';
import { http } from '../harness/http';
import { startTestSystem, TestSystem } from '../harness/system';
import { makeWorkflow, sendWebhook, signedWebhook } from '../harness/webhooks';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const FINAL = ['completed', 'failed', 'timed_out', 'cancelled'];

/**
 * The walkthrough of docs/webhooks.md through the real `all` role: the demo script makes
 * the workflow and sends a signed push with curl; the local dispatcher runs the echo
 * example agent (from dist/: build first), whose callback closes the task.
 */
describe('an event becomes an agent run, end to end', () => {
  jest.setTimeout(120_000);
  let system: TestSystem;
  let auth: Record<string, string>;
  const secrets = { forge: randomBytes(16).toString('hex'), chat: randomBytes(16).toString('hex') };

  beforeAll(async () => {
    system = await startTestSystem({ role: 'all', env: { FORGE_WEBHOOK_SECRET: secrets.forge, CHAT_SIGNING_SECRET: secrets.chat } });
    auth = { authorization: `Token ${system.apiToken}` };
  });
  afterAll(() => system?.close());

  async function result(resultKey: string): Promise<Record<string, any>> {
    const storage = system.controller!.get<ObjectStorage>(OBJECT_STORAGE);
    return JSON.parse((await readAll((await storage.get(resultKey))!)).toString('utf8'));
  }

  async function finished(taskGuid: string): Promise<Record<string, any>> {
    for (let i = 0; i < 120; i += 1) {
      const task = await http('GET', `${system.controllerUrl}/api/v1/tasks/${taskGuid}/`, { headers: auth });
      if (FINAL.includes(task.body.status)) return task.body;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`task ${taskGuid} did not finish`);
  }

  it('scripts/demo.sh: a signed forge push runs the echo agent and the run shows under the workflow', async () => {
    const { stdout } = await run('bash', ['scripts/demo.sh'], {
      cwd: ROOT,
      timeout: 90_000,
      env: { ...process.env, CONTROLLER_URL: system.controllerUrl, API_TOKEN: system.apiToken, FORGE_WEBHOOK_SECRET: secrets.forge, DEMO_REPOSITORY: 'acme/e2e' },
    });
    expect(stdout).toContain('signed with FORGE_WEBHOOK_SECRET');
    expect(stdout).toMatch(/completed: /);

    const runs = await http('GET', `${system.controllerUrl}/api/v1/workflows/demo-push/runs/`, { headers: auth });
    expect(runs.body.count).toBe(1);
    const [task] = runs.body.results;
    expect(task).toMatchObject({ status: 'completed', workflow: 'demo-push', dispatcher: 'local', agent_image: 'agent-examples/echo' });
    expect(task.result).toMatchObject({ result_key: `results/${task.guid}/result.json`, result_metadata: { echoed: true } });
    const echoed = await result(task.result.result_key);
    expect(echoed.brief).toMatchObject({ task: 'Summarise the push to acme/e2e', ref: 'refs/heads/main', pusher: 'demo' });

    const deliveries = await http('GET', `${system.controllerUrl}/api/v1/webhooks/deliveries/?workflow=demo-push`, { headers: auth });
    expect(deliveries.body.results[0]).toMatchObject({ source: 'forge', event: 'push', verified: true, outcome: 'routed', task_guid: task.guid });
  });

  it('a signed chat event becomes exactly one completed run', async () => {
    const workflow = makeWorkflow('chat-echo', {}, { source: 'chat', event: 'event_callback', filter: { 'event.type': 'app_mention' } });
    (workflow.task_template as Record<string, unknown>).brief = { asked: '{{payload.event.text}}', channel: '{{payload.event.channel}}' };
    expect((await http('POST', `${system.controllerUrl}/api/v1/workflows/`, { json: workflow, headers: auth })).status).toBe(201);

    const event = { type: 'event_callback', event_id: `Ev${randomBytes(4).toString('hex')}`, event: { type: 'app_mention', channel: 'C1', text: 'summarise the release' } };
    const delivery = await signedWebhook('chat', event, { secret: secrets.chat });
    const answers = await Promise.all([sendWebhook(system.controllerUrl, delivery), sendWebhook(system.controllerUrl, delivery)]);
    const routed = answers.find((answer) => answer.body.status === 'ok')!;
    expect(answers.map((answer) => answer.body.status).sort()).toEqual(['duplicate', 'ok']);

    const task = await finished(routed.body.task_guid);
    expect(task.status).toBe('completed');
    expect((await result(task.result.result_key)).brief).toEqual({ asked: 'summarise the release', channel: 'C1' });
    const runs = await http('GET', `${system.controllerUrl}/api/v1/workflows/chat-echo/runs/`, { headers: auth });
    expect(runs.body.count).toBe(1);
  });
});
