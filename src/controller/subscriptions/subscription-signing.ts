import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new signing secret as Standard Webhooks writes it: `whsec_` and 32 random bytes in base64. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-signature` holds one `v1,<base64>`
 * per secret (the current one, and during a rotation's overlap the previous one too),
 * space-separated, so a receiver holding either key verifies it.
 */
export function signedHeaders(messageId: string, body: string, secrets: string[], at = new Date()): Record<string, string> {
  const timestamp = new Date(Math.floor(at.getTime() / 1000) * 1000);
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp.getTime() / 1000),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(messageId, timestamp, body)).join(' '),
  };
}

/**
 * The wait before the next attempt after `attempts` failed ones: the schedule's entry
 * with ±20 % jitter, so endpoints that failed together are not retried together. Null once
 * the schedule is spent.
 */
export function retryDelayMs(attempts: number, schedule: number[], random = Math.random): number | null {
  const seconds = schedule[attempts - 1];
  if (seconds === undefined) return null;
  return Math.round(seconds * 1000 * (0.8 + 0.4 * random()));
}
