import { FINAL_STATUSES } from '../../src/controller/tasks/task-state';
import { http } from './http';
import { waitFor } from './wait';
import { makeWorkflow, pushPayload, sendWebhook, signedWebhook } from './webhooks';

export interface TracedWebhookTask {
  /** The workflow the push is routed by; `agentImage` replaces its template's image. */
  workflowId: string;
  agentImage?: string;
  /** The sender's W3C traceparent, sent on the webhook. */
  traceparent: string;
  timeoutMs?: number;
}

/**
 * Creates the workflow, sends a signed forge push (secret `forge-secret`) carrying the sender's
 * traceparent, and waits for the routed task to end: its guid and its final view, whatever
 * the status, so a failed task shows at once instead of as a time-out.
 */
export async function runTracedWebhookTask(target: { env: Record<string, string | undefined>; url: string }, task: TracedWebhookTask): Promise<{ guid: string; view: Record<string, unknown> }> {
  const { env, url } = target;
  const auth = { authorization: `Token ${env.API_TOKEN}` };
  const workflow = makeWorkflow(task.workflowId);
  if (task.agentImage) (workflow.task_template as Record<string, unknown>).agent_image = task.agentImage;
  expect((await http('POST', `${url}/api/v1/workflows/`, { headers: auth, json: workflow })).status).toBe(201);
  const webhook = await signedWebhook('forge', pushPayload(), { secret: 'forge-secret' });
  webhook.headers.traceparent = task.traceparent;
  const routed = await sendWebhook(url, webhook);
  expect(routed.status).toBe(200);
  const guid = routed.body.task_guid as string;
  const view = await waitFor(async () => {
    const found = await http('GET', `${url}/api/v1/tasks/${guid}/`, { headers: auth });
    return (FINAL_STATUSES as readonly string[]).includes(found.body.status as string) ? (found.body as Record<string, unknown>) : null;
  }, task.timeoutMs ?? 60_000, `task ${guid} to end`);
  return { guid, view };
}
