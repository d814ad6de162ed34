import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiHeader, ApiOperation, ApiResponse } from '@nestjs/swagger';
import { Answers, Refuses } from '../../shared/http/openapi-decorators';
import { ref } from '../../shared/http/openapi-schema';

/** The headers senders use (CONTRACT "Webhooks"); which ones apply depends on the source. */
const HEADERS: [string, string][] = [
  ['X-Webhook-Source', 'forge, chat or custom; else detected from the headers below'],
  ['X-Webhook-Event', 'The event name (custom; forge and chat have their own)'],
  ['X-Forge-Event', 'Forge event (or X-GitHub-Event)'],
  ['X-GitHub-Event', 'Forge event, GitHub style'],
  ['X-Forge-Signature-256', 'Forge: sha256=<hex HMAC(FORGE_WEBHOOK_SECRET, body)> (or X-Hub-Signature-256)'],
  ['X-Hub-Signature-256', 'Forge signature, GitHub style'],
  ['X-Forge-Delivery', 'Forge delivery id (or X-GitHub-Delivery): a repeat answers duplicate'],
  ['X-GitHub-Delivery', 'Forge delivery id, GitHub style'],
  ['X-Chat-Signature', 'Chat: v0=<hex HMAC(CHAT_SIGNING_SECRET, "v0:" + ts + ":" + body)> (or X-Slack-Signature)'],
  ['X-Slack-Signature', 'Chat signature, Slack style'],
  ['X-Chat-Request-Timestamp', 'Chat: the ts signed, at most 300 s old (or X-Slack-Request-Timestamp)'],
  ['X-Slack-Request-Timestamp', 'Chat timestamp, Slack style'],
  ['X-Webhook-Signature', 'Custom: sha256=<hex HMAC(CUSTOM_WEBHOOK_SECRET, body)>'],
  ['X-Webhook-Id', 'Custom delivery id'],
  ['webhook-id', 'Standard Webhooks: the message id (also the delivery id)'],
  ['webhook-timestamp', 'Standard Webhooks: seconds since the epoch'],
  ['webhook-signature', 'Standard Webhooks: v1,<base64 HMAC> with CUSTOM_WEBHOOK_SECRET as its whsec_ key'],
];

/**
 * POST /api/v1/webhooks/: no credential but the sender's signature; 200 when routed (or a
 * duplicate, or a chat handshake), 202 when no workflow matches.
 */
export function WebhookIngestDocs() {
  return applyDecorators(
    ApiOperation({ summary: 'Receive a webhook: routed to the first matching workflow, whose task is stored before the answer' }),
    ...HEADERS.map(([name, description]) => ApiHeader({ name, description, required: false })),
    ApiConsumes('application/json', 'application/x-www-form-urlencoded'),
    ApiBody({
      description: 'The sender\'s payload: a JSON object; chat senders may post a form with the JSON in its "payload" field',
      schema: { type: 'object', additionalProperties: true },
    }),
    ApiResponse({
      status: 200,
      description: 'Routed (status ok, task stored), a repeated delivery (status duplicate) or a chat url_verification (challenge)',
      content: { 'application/json': { schema: { oneOf: [ref('WebhookRouted'), ref('WebhookDuplicate'), ref('WebhookChallenge')] } } },
    }),
    Answers(202, 'WebhookIgnored', 'No enabled workflow matches; kept in the ledger'),
    Refuses({
      401: 'not_authenticated or authentication_failed: the source has a secret and the signature is missing or wrong',
      403: 'permission_denied: with NODE_ENV=production, a source with no secret set refuses deliveries (the message names the setting)',
    }),
  );
}
