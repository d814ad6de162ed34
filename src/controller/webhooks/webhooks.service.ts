import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';
import { CACHE, Cache } from '../../shared/cache/cache';
import { FallbackCache } from '../../shared/cache/fallback-cache';
import { Throttle, throttled } from '../auth/throttle';
import { jsonProblem } from '../../shared/http/json-guard';
import { WebhookEvent } from '../workflows/workflow-routing';
import { DeliveryLedger } from './delivery-ledger';
import { WebhookDelivery } from './webhook-delivery.entity';
import { RoutedAnswer, WebhookRouter } from './webhook-router';
import { sourceAdapter } from './sources';
import {
  detectDeliveryId,
  detectEvent,
  detectSource,
  HeaderBag,
  verifyWebhookSignature,
  WebhookSecrets,
  WebhookSource,
} from './webhook-signatures';

export interface InboundWebhook {
  headers: HeaderBag;
  /** The exact request bytes, as signed by the sender. */
  rawBody: Buffer;
  /** The body as parsed by the HTTP layer (JSON, or form fields). */
  body: unknown;
  formEncoded: boolean;
  /** Why the HTTP layer refused the body (not JSON, or a part no endpoint takes); the delivery is refused and recorded. */
  refusal?: unknown;
  /** The sender's address: unverified refusals are throttled per address. */
  address?: string;
}

/** What is kept of an unverified delivery's refused body: enough to see what it was, too little to fill the ledger. */
export const UNVERIFIED_REFUSAL_KEPT_BYTES = 4096;

export type IngestAnswer =
  | RoutedAnswer
  | { status: 200; body: Record<string, unknown> }
  | { status: 200; body: { status: 'duplicate'; routed_to: string | null } };

interface Parsed {
  source: WebhookSource;
  verified: boolean;
  payload: Record<string, unknown>;
  payloadText: string;
  event: string;
}

@Injectable()
export class WebhooksService {
  private readonly refusals: Throttle;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly ledger: DeliveryLedger,
    private readonly router: WebhookRouter,
    @Inject(CACHE) cache: Cache,
  ) {
    this.refusals = new Throttle(new FallbackCache(cache, 'webhook refusal throttle'), 'webhook:refused:addr:', config.webhookRefusalsPerMinute, 60);
  }

  async ingest(inbound: InboundWebhook): Promise<IngestAnswer> {
    const parsed = await this.parseOrReject(inbound);
    const { source, payload, event } = parsed;
    const base = { source, event, verified: parsed.verified, ...this.payloadFields(parsed.payloadText) };
    const handshake = sourceAdapter(source).handshake?.(payload) ?? null;
    if (handshake) {
      await this.ledger.record({ ...base, outcome: 'challenge', statusCode: 200, finishedAt: new Date() });
      return { status: 200, body: handshake };
    }
    const deliveryId = detectDeliveryId(source, inbound.headers, payload);
    const dedupKey = deliveryId ? `${source}:${deliveryId}` : null;
    const webhookEvent: WebhookEvent = { source, event, payload };
    const workflow = await this.router.match(webhookEvent);
    const row = { ...base, id: randomUUID(), deliveryId, dedupKey, workflowId: workflow?.id ?? null };
    const answer = await this.router.accept(row, workflow, webhookEvent);
    return answer ?? (await this.duplicate(base, deliveryId, dedupKey!));
  }

  /** Checks, in the contract's order, everything that can refuse a delivery; refusals are recorded. */
  private async parseOrReject(inbound: InboundWebhook): Promise<Parsed> {
    if (inbound.refusal !== undefined) throw await this.rejectBody(inbound, inbound.refusal);
    let source: WebhookSource | undefined;
    let verified = false;
    try {
      source = detectSource(inbound.headers);
      verified = await verifyWebhookSignature({
        source,
        headers: inbound.headers,
        rawBody: inbound.rawBody,
        secrets: this.secrets(),
        production: this.config.production,
      });
      const { payload, payloadText } = readPayload(inbound);
      return { source, verified, payload, payloadText, event: detectEvent(source, inbound.headers, payload) };
    } catch (error) {
      if (error instanceof DomainError) {
        if (!verified) await this.countRefusal(inbound);
        await this.ledger.record({
          source: source ?? 'unknown',
          verified,
          outcome: 'rejected',
          statusCode: error.status,
          error: error.message,
          payloadSize: inbound.rawBody.length,
          finishedAt: new Date(),
        });
      }
      throw error;
    }
  }

  /**
   * A delivery whose body the HTTP layer refused: recorded as `rejected` with the reason
   * and the body as text PostgreSQL can hold, then answered with that refusal.
   */
  private async rejectBody(inbound: InboundWebhook, refusal: unknown): Promise<unknown> {
    const error = bodyRefusalError(refusal);
    let source: WebhookSource | 'unknown' = 'unknown';
    let verified = false;
    try {
      source = detectSource(inbound.headers);
      verified = await verifyWebhookSignature({ source, headers: inbound.headers, rawBody: inbound.rawBody, secrets: this.secrets(), production: this.config.production });
    } catch {
      // The body's refusal is the answer; an unknown sender or a bad signature is recorded as unverified.
    }
    if (!verified) await this.countRefusal(inbound);
    const payload = this.payloadFields(storableText(verified ? inbound.rawBody : inbound.rawBody.subarray(0, UNVERIFIED_REFUSAL_KEPT_BYTES)));
    await this.ledger.record({
      source,
      verified,
      outcome: 'rejected',
      statusCode: error instanceof DomainError ? error.status : 400,
      error: error instanceof Error ? error.message : 'Request body refused.',
      ...payload,
      payloadTruncated: payload.payloadTruncated || (!verified && inbound.rawBody.length > UNVERIFIED_REFUSAL_KEPT_BYTES),
      payloadSize: inbound.rawBody.length,
      finishedAt: new Date(),
    });
    return error;
  }

  /**
   * Counts an unverified refusal for the sender's address; past WEBHOOK_REFUSALS_PER_MINUTE
   * it is answered 429 and not recorded, so a flood of forged deliveries cannot fill the ledger.
   */
  private async countRefusal(inbound: InboundWebhook): Promise<void> {
    const wait = await this.refusals.hit(inbound.address ?? 'unknown');
    if (wait !== null) throw throttled(wait, 'Too many refused webhook deliveries from this address; try again later.');
  }

  private secrets(): WebhookSecrets {
    return { forge: this.config.forgeWebhookSecret, chat: this.config.chatSigningSecret, custom: this.config.customWebhookSecret };
  }

  private async duplicate(base: Partial<WebhookDelivery>, deliveryId: string | null, dedupKey: string): Promise<IngestAnswer> {
    const first = await this.waitForAccepted(dedupKey);
    const routedTo = first?.workflowId ?? null;
    await this.ledger.record({ ...base, deliveryId, workflowId: routedTo, outcome: 'duplicate', statusCode: 200, finishedAt: new Date() });
    return { status: 200, body: { status: 'duplicate', routed_to: routedTo } };
  }

  /** The accepted delivery may still be on its way into the ledger when a copy arrives. */
  private async waitForAccepted(dedupKey: string): Promise<WebhookDelivery | null> {
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const row = await this.ledger.findAccepted(dedupKey);
      if (row) return row;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return null;
  }

  payloadFields(payloadText: string): Pick<WebhookDelivery, 'payload' | 'payloadSize' | 'payloadTruncated'> {
    // Counted without a copy of the body; only a payload over the limit is encoded to be cut.
    const size = Buffer.byteLength(payloadText, 'utf8');
    const max = this.config.webhookPayloadMaxBytes;
    const truncated = size > max;
    return {
      payload: truncated ? (max > 0 ? Buffer.from(payloadText, 'utf8').subarray(0, max).toString('utf8') : null) : payloadText,
      payloadSize: size,
      payloadTruncated: truncated,
    };
  }
}

/** The HTTP layer's refusal as the error the sender gets: a body-parser syntax error is `parse_error`. */
function bodyRefusalError(refusal: unknown): unknown {
  if (refusal instanceof DomainError) return refusal;
  if ((refusal as { type?: string })?.type === 'entity.parse.failed') return new DomainError('parse_error', 'Request body is not valid JSON.');
  return refusal;
}

/** Raw bytes as text PostgreSQL's `text` can hold: invalid UTF-8 becomes U+FFFD, a NUL byte the escape `\u0000`. */
export function storableText(rawBody: Buffer): string {
  return rawBody.toString('utf8').replaceAll('\u0000', '\\u0000');
}

/**
 * The event payload: the JSON body, or for a form-encoded delivery its `payload` field
 * (as forges send it) or else the form fields themselves.
 */
export function readPayload(inbound: InboundWebhook): { payload: Record<string, unknown>; payloadText: string } {
  let payload: unknown = inbound.body;
  let payloadText = inbound.rawBody.toString('utf8');
  if (inbound.formEncoded) {
    const fields = (inbound.body ?? {}) as Record<string, unknown>;
    if (typeof fields.payload === 'string') {
      payloadText = fields.payload;
      try {
        payload = JSON.parse(fields.payload);
      } catch {
        throw new DomainError('parse_error', 'The form field "payload" is not valid JSON.');
      }
      // The JSON guard saw the form field as text; what it holds is checked as any JSON body is.
      const problem = jsonProblem(payload, 'payload');
      if (problem) throw DomainError.invalid({ [problem.field]: [problem.message] });
    } else {
      payload = fields;
      payloadText = JSON.stringify(fields);
    }
  }
  if (!payload || typeof payload !== 'object' || Array.isArray(payload)) {
    throw new DomainError('invalid', 'The webhook payload must be a JSON object.', { fields: { body: ['must be a JSON object'] } });
  }
  return { payload: payload as Record<string, unknown>, payloadText };
}
