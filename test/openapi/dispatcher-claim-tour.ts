import { randomUUID } from 'node:crypto';
import { poolAgentKey } from '../../src/dispatcher/pools/pool-keys';
import { DispatcherClient } from './clients';
import { expectStatus } from './tour';

export interface ClaimTourContext {
  apiKey: string;
  agentKey: string;
  /** A warm pool whose agents never ask for a claim, so the tour asks for them. */
  pool: { name: string; image: string };
  /** The id of an idle agent of that pool, once one is started. */
  idleAgentId(): Promise<string>;
}

/** POST /agent/claim through the typed client: the wait with no task, the assignment, and the refusals. */
export async function claimTour(client: DispatcherClient, context: ClaimTourContext): Promise<void> {
  const agentId = await context.idleAgentId();
  const poolKey = { headers: { 'x-agent-key': poolAgentKey(context.agentKey, context.pool.name) } };
  const body = { pool: context.pool.name, agent_id: agentId };
  const now = { params: { query: { wait_seconds: 0 } } };
  expectStatus(await client.POST('/agent/claim', { ...now, body }), 401);
  expectStatus(await client.POST('/agent/claim', { ...now, headers: { 'x-agent-key': 'no key at all' }, body }), 401);
  expectStatus(await client.POST('/agent/claim', { ...now, headers: { 'x-agent-key': context.agentKey }, body }), 403);
  expectStatus(await client.POST('/agent/claim', { ...now, ...poolKey, body: { ...body, agent_id: randomUUID() } }), 404);
  expectStatus(await client.POST('/agent/claim', { ...now, ...poolKey, body: { pool: context.pool.name } as never }), 400);
  expectStatus(await client.POST('/agent/claim', { params: { query: { wait_seconds: 56 } }, ...poolKey, body }), 400);
  expectStatus(await client.POST('/agent/claim', { ...now, ...poolKey, body }), 204);

  const task = {
    task_id: randomUUID(), agent_image: context.pool.image, runtime_target: { type: 'local' as const, namespace: '' }, resources: { cpu: '100m', memory: '64Mi' },
    brief_key: '', callback_url: 'http://127.0.0.1:9/api/v1/tasks/callback/', callback_token: 'tour-callback-token', timeout_seconds: 600,
  };
  expectStatus(await client.POST('/tasks', { headers: { 'x-api-key': context.apiKey }, body: task }), 201);
  const claimed = await client.POST('/agent/claim', { params: { query: { wait_seconds: 10 } }, ...poolKey, body });
  expectStatus(claimed, 200);
  expectStatus(await client.POST('/tasks/{taskId}/cancel', { params: { path: { taskId: task.task_id } }, headers: { 'x-api-key': context.apiKey } }), 200);
}
