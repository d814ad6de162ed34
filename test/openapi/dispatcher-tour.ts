import { randomUUID } from 'node:crypto';
import { perTaskAgentKey } from '../../src/dispatcher/auth/agent-keys';
import { DispatcherClient } from './clients';
import { expectStatus } from './tour';

export interface DispatcherTourContext {
  apiKey: string;
  agentKey: string;
  /** An image the dispatcher runs as an agent that never calls back, so the tour speaks for it. */
  idleImage: string;
  /** Stores a brief in the dispatcher's object storage. */
  putBrief(key: string): Promise<void>;
}

function taskRequest(idleImage: string, briefKey: string) {
  return {
    task_id: randomUUID(),
    agent_image: idleImage,
    runtime_target: { type: 'local' as const, namespace: '' },
    resources: { cpu: '500m', memory: '256Mi' },
    brief_key: briefKey,
    callback_url: 'http://127.0.0.1:9/api/v1/tasks/callback/',
    callback_token: 'tour-callback-token',
    timeout_seconds: 600,
  };
}

/** Every operation of the dispatcher through the typed client: each success and the refusals the contract names. */
export async function dispatcherTour(client: DispatcherClient, context: DispatcherTourContext): Promise<void> {
  expectStatus(await client.GET('/livez'), 200);
  expectStatus(await client.GET('/health'), 200);
  expectStatus(await client.GET('/ready'), 200);
  const api = { headers: { 'x-api-key': context.apiKey } };
  const request = taskRequest(context.idleImage, `briefs/${randomUUID()}.json`);
  await context.putBrief(request.brief_key);
  expectStatus(await client.POST('/tasks', { ...api, body: request }), 201);
  expectStatus(await client.POST('/tasks', { ...api, body: request }), 200);
  expectStatus(await client.POST('/tasks', { ...api, body: { ...request, timeout_seconds: 601 } }), 409);
  expectStatus(await client.POST('/tasks', { ...api, body: { ...request, task_id: 'not-a-uuid' } }), 400);
  expectStatus(await client.POST('/tasks', { body: request }), 401);
  expectStatus(await client.POST('/tasks', { headers: { 'x-api-key': 'wrong' }, body: request }), 401);
  expectStatus(await client.GET('/tasks', { ...api, params: { query: { limit: 5 } } }), 200);
  const task = { ...api, params: { path: { taskId: request.task_id } } };
  expectStatus(await client.GET('/tasks/{taskId}', task), 200);
  expectStatus(await client.GET('/tasks/{taskId}', { ...api, params: { path: { taskId: randomUUID() } } }), 404);

  await agentTour(client, context, request.task_id, request.brief_key);
  expectStatus(await client.GET('/tasks/{taskId}/logs', { ...task, parseAs: 'text' }), 200);
  expectStatus(await client.GET('/tasks/{taskId}/logs', { ...api, params: { path: { taskId: randomUUID() } } }), 404);

  const other = taskRequest(context.idleImage, `briefs/${randomUUID()}.json`);
  expectStatus(await client.POST('/tasks', { ...api, body: other }), 201);
  const otherTask = { ...api, params: { path: { taskId: other.task_id } } };
  expectStatus(await client.GET('/agent/objects/{key}', { params: { path: { key: other.brief_key }, query: { task_id: other.task_id } }, headers: { 'x-agent-key': context.agentKey } }), 404);
  expectStatus(await client.POST('/tasks/{taskId}/cancel', otherTask), 200);
  expectStatus(await client.POST('/tasks/{taskId}/cancel', otherTask), 409);
  expectStatus(await client.POST('/tasks/{taskId}/cancel', { ...api, params: { path: { taskId: randomUUID() } } }), 404);
}

async function agentTour(client: DispatcherClient, context: DispatcherTourContext, taskId: string, briefKey: string): Promise<void> {
  const agent = { headers: { 'x-agent-key': perTaskAgentKey(context.agentKey, taskId) } };
  const stranger = { headers: { 'x-agent-key': perTaskAgentKey(context.agentKey, randomUUID()) } };
  expectStatus(await client.POST('/agent/checkin', { body: { task_id: taskId } }), 401);
  expectStatus(await client.POST('/agent/checkin', { headers: { 'x-agent-key': 'no key at all' }, body: { task_id: taskId } }), 401);
  expectStatus(await client.POST('/agent/checkin', { ...stranger, body: { task_id: taskId } }), 403);
  expectStatus(await client.POST('/agent/checkin', { headers: { 'x-agent-key': context.agentKey }, body: { task_id: randomUUID() } }), 404);
  expectStatus(await client.POST('/agent/checkin', { ...agent, body: { task_id: taskId } }), 200);
  expectStatus(await client.POST('/agent/progress', { ...agent, body: { task_id: taskId, percentage: 50, message: 'half way' } }), 200);
  expectStatus(await client.POST('/agent/progress', { ...agent, body: { task_id: taskId, percentage: 500 } }), 400);

  const object = (key: string) => ({ ...agent, params: { path: { key }, query: { task_id: taskId } } });
  expectStatus(await client.GET('/agent/objects/{key}', { ...object(briefKey), parseAs: 'arrayBuffer' }), 200);
  expectStatus(await client.GET('/agent/objects/{key}', object('briefs/someone-else.json')), 403);
  const bytes = { body: 'result bytes' as never, bodySerializer: (body: unknown) => body as string, headers: { ...agent.headers, 'content-type': 'application/octet-stream' } };
  expectStatus(await client.PUT('/agent/objects/{key}', { ...object(`results/${taskId}/out.txt`), ...bytes }), 200);
  expectStatus(await client.PUT('/agent/objects/{key}', { ...object('elsewhere/out.txt'), ...bytes }), 403);

  const checkback = { task_id: taskId, status: 'completed' as const, result_key: `results/${taskId}/out.txt`, result_metadata: {} };
  expectStatus(await client.POST('/agent/checkback', { ...agent, body: checkback }), 200);
  expectStatus(await client.POST('/agent/checkback', { ...agent, body: checkback }), 200);
  expectStatus(await client.POST('/agent/checkback', { ...agent, body: { ...checkback, status: 'failed' } }), 409);
  expectStatus(await client.PUT('/agent/objects/{key}', { ...object(`results/${taskId}/late.txt`), ...bytes }), 409);
  expectStatus(await client.POST('/agent/checkin', { ...agent, body: { task_id: taskId } }), 409);
}
