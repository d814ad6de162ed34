import { createHmac, randomUUID } from 'node:crypto';
import { sign as signForge } from '@octokit/webhooks-methods';
import { isValidSlackRequest } from '@slack/bolt';
import { Webhook } from 'standardwebhooks';
import { http, HttpAnswer } from './http';

export type Source = 'forge' | 'chat' | 'custom';

export interface SignedWebhook {
  headers: Record<string, string>;
  body: string;
}

export interface SignOptions {
  /** The secret to sign with; leave out for an unsigned delivery. */
  secret?: string;
  event?: string;
  deliveryId?: string;
  /** How old the chat / Standard Webhooks timestamp is, in seconds. */
  ageSeconds?: number;
}

/**
 * A delivery as the vendor sends it, signed by the vendor's own library: forge with
 * `@octokit/webhooks-methods`, chat as Slack signs it (checked by Bolt's verifier),
 * custom with `standardwebhooks`.
 */
export async function signedWebhook(source: Source, payload: object, options: SignOptions = {}): Promise<SignedWebhook> {
  const body = JSON.stringify(payload);
  const deliveryId = options.deliveryId ?? randomUUID();
  const timestamp = Math.floor(Date.now() / 1000) - (options.ageSeconds ?? 0);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (source === 'forge') {
    Object.assign(headers, { 'x-github-event': options.event ?? 'push', 'x-github-delivery': deliveryId });
    if (options.secret) headers['x-hub-signature-256'] = await signForge(options.secret, body);
  } else if (source === 'chat') {
    headers['x-slack-request-timestamp'] = String(timestamp);
    const signature = options.secret
      ? `v0=${createHmac('sha256', options.secret).update(`v0:${timestamp}:${body}`).digest('hex')}`
      : 'v0=unsigned';
    if (options.secret) {
      const headersForBolt = { 'x-slack-signature': signature, 'x-slack-request-timestamp': timestamp };
      if (!isValidSlackRequest({ signingSecret: options.secret, body, headers: headersForBolt, nowMilliseconds: timestamp * 1000 })) {
        throw new Error('Bolt refuses the chat signature this factory made');
      }
    }
    headers['x-slack-signature'] = signature;
  } else {
    Object.assign(headers, { 'x-webhook-source': 'custom', 'x-webhook-event': options.event ?? 'invoice.paid', 'webhook-id': deliveryId });
    if (options.secret) {
      headers['webhook-timestamp'] = String(timestamp);
      headers['webhook-signature'] = new Webhook(options.secret).sign(deliveryId, new Date(timestamp * 1000), body);
    }
  }
  return { headers, body };
}

export function sendWebhook(baseUrl: string, webhook: SignedWebhook): Promise<HttpAnswer> {
  return http('POST', `${baseUrl}/api/v1/webhooks/`, { headers: webhook.headers, body: webhook.body });
}

export function pushPayload(repository = 'acme/app', ref = 'refs/heads/main'): object {
  return {
    ref,
    after: 'c0ffee',
    repository: { full_name: repository, private: false },
    pusher: { name: 'ada' },
    head_commit: { id: 'c0ffee', message: 'Fix the build' },
  };
}

/** A workflow body for POST /api/v1/workflows/. */
export function makeWorkflow(id: string, overrides: Record<string, unknown> = {}, trigger: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    name: `Workflow ${id}`,
    priority: 100,
    triggers: [{ source: 'forge', event: 'push', filter: { 'repository.full_name': 'acme/app' }, ...trigger }],
    task_template: {
      agent_image: 'agent-examples/echo',
      runtime_target: { type: 'local', namespace: '' },
      resources: { cpu: '500m', memory: '256Mi' },
      timeout_seconds: 120,
      brief: { task: 'Review {{payload.repository.full_name}} at {{payload.after}}', pusher: '{{payload.pusher.name}}' },
    },
    ...overrides,
  };
}
