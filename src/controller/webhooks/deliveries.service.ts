import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../shared/config/config';
import { APP_CONFIG } from '../../shared/config/config.module';
import { DomainError } from '../../shared/errors/domain-error';
import { KeysetRequest } from '../../shared/database/keyset-page';
import { CursorPage, toCursorPage } from '../../shared/http/page';
import { DeliveryFilters, DeliveryLedger } from './delivery-ledger';
import { WebhookDelivery } from './webhook-delivery.entity';
import { RoutedAnswer, WebhookRouter } from './webhook-router';

export interface DeliveryView {
  id: string;
  source: string;
  event: string | null;
  delivery_id: string | null;
  verified: boolean;
  routed_to: string | null;
  task_guid: string | null;
  outcome: string;
  status_code: number | null;
  error: string | null;
  received_at: string;
  finished_at: string | null;
  payload_size: number;
  payload_truncated: boolean;
  replay_of: string | null;
  /** Only on the detail: the payload as JSON when kept whole, else the kept text. */
  payload?: unknown;
}

export function toDeliveryView(row: WebhookDelivery, withPayload = false): DeliveryView {
  const view: DeliveryView = {
    id: row.id,
    source: row.source,
    event: row.event,
    delivery_id: row.deliveryId,
    verified: row.verified,
    routed_to: row.workflowId,
    task_guid: row.taskGuid,
    outcome: row.outcome,
    status_code: row.statusCode,
    error: row.error,
    received_at: row.receivedAt.toISOString(),
    finished_at: row.finishedAt?.toISOString() ?? null,
    payload_size: row.payloadSize,
    payload_truncated: row.payloadTruncated,
    replay_of: row.replayOf,
  };
  if (withPayload) view.payload = storedPayload(row) ?? row.payload;
  return view;
}

function storedPayload(row: WebhookDelivery): Record<string, unknown> | null {
  if (row.payload === null || row.payloadTruncated) return null;
  try {
    const parsed: unknown = JSON.parse(row.payload);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

@Injectable()
export class DeliveriesService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly ledger: DeliveryLedger,
    private readonly router: WebhookRouter,
  ) {}

  async list(filters: DeliveryFilters, request: KeysetRequest): Promise<CursorPage<DeliveryView>> {
    const page = await this.ledger.list(filters, request);
    return toCursorPage(page, page.items.map((row) => toDeliveryView(row)), request, {
      baseUrl: this.config.publicUrl,
      path: '/api/v1/webhooks/deliveries/',
      query: { ...filters },
    });
  }

  async get(id: string): Promise<DeliveryView> {
    return toDeliveryView(await this.ledger.get(id), true);
  }

  /** Routes a kept delivery again as a new ledger entry; its task links to the first delivery. */
  async replay(id: string, createdBy: string): Promise<RoutedAnswer & { body: { delivery: string } }> {
    const first = await this.ledger.get(id);
    const payload = storedPayload(first);
    if (!payload || !first.event) {
      throw DomainError.conflict('This delivery cannot be replayed: its payload was not kept whole (see WEBHOOK_PAYLOAD_MAX_BYTES) or it was refused.');
    }
    const event = { source: first.source, event: first.event, payload };
    const workflow = await this.router.match(event);
    const row = await this.ledger.record({
      source: first.source,
      event: first.event,
      deliveryId: first.deliveryId,
      verified: first.verified,
      payload: first.payload,
      payloadSize: first.payloadSize,
      replayOf: first.id,
      workflowId: workflow?.id ?? null,
      outcome: 'received',
    });
    const answer = await this.router.run(row!, workflow, event, { linkTo: first.id, createdBy });
    return { status: answer.status, body: { ...answer.body, delivery: row!.id } };
  }
}
