import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { QueryFailedError, Repository } from 'typeorm';
import { GroupCommit } from '../../shared/database/group-commit';
import { insertRowsParts, runPrepared } from '../../shared/database/statements';
import { DomainError } from '../../shared/errors/domain-error';
import { equalityFilters, KeysetPage, keysetPage, KeysetRequest } from '../../shared/database/keyset-page';
import { webhookDeliveries } from '../metrics/controller-metrics';
import { DeliveryOutcome, WebhookDelivery } from './webhook-delivery.entity';

export interface DeliveryFilters {
  source?: string;
  event?: string;
  outcome?: DeliveryOutcome;
  workflow?: string;
}

const UNIQUE_VIOLATION = '23505';

/** The delivery ledger: every inbound webhook and what became of it. */
@Injectable()
export class DeliveryLedger {
  constructor(@InjectRepository(WebhookDelivery) private readonly deliveries: Repository<WebhookDelivery>) {}

  /**
   * Records a delivery. With a `dedupKey`, answers null when another accepted delivery
   * holds that key already (the unique index is the durable "seen before").
   */
  async record(fields: Partial<WebhookDelivery>): Promise<WebhookDelivery | null> {
    const row = this.deliveries.create({ receivedAt: new Date(), ...fields });
    try {
      await this.deliveries.insert(row);
    } catch (error) {
      const code = error instanceof QueryFailedError ? (error.driverError as { code?: string })?.code : undefined;
      if (code === UNIQUE_VIOLATION && fields.dedupKey) return null;
      throw error;
    }
    countDelivery(row);
    return row;
  }

  /**
   * Writes a delivery with its final outcome in one statement. The unique index on
   * `dedup_key` decides "seen before" in that statement: a conflict answers null.
   */
  async recordOnce(fields: Partial<WebhookDelivery>): Promise<boolean> {
    const stored = await this.once.add(fields);
    if (stored) countDelivery(fields);
    return stored;
  }

  /** `recordOnce`'s rows, group-committed: under load, one INSERT for every row that came while one was under way. */
  private readonly once = new GroupCommit<Partial<WebhookDelivery>, boolean>((rows) => this.insertRowsOnce(rows), { maxBatch: 256, maxInFlight: 2 });

  /**
   * Each row written unless its dedup key is taken (by a row stored before, or by one before
   * it in the same statement): `INSERT ... ON CONFLICT DO NOTHING RETURNING id`.
   */
  private async insertRowsOnce(rows: Partial<WebhookDelivery>[]): Promise<boolean[]> {
    const insert = this.insertManyOnce(rows);
    const stored = await runPrepared<{ id: string }>(this.deliveries.manager.dataSource, insert.text, insert.params);
    const ids = new Set(stored.map((row) => row.id));
    return insert.ids.map((id) => ids.has(id));
  }

  /**
   * `INSERT ... ON CONFLICT DO NOTHING RETURNING id` of many rows, for `recordOnce` and for a
   * caller that writes other rows in the same statement (routed deliveries' tasks). Each row is
   * given every column (the entity's defaults where it sets none), so rows of any outcome share
   * one statement, and an id when it has none (`ids`, in order).
   */
  insertManyOnce(rows: Partial<WebhookDelivery>[]): { text: string; params: unknown[]; ids: string[] } {
    const now = new Date();
    const full = rows.map((fields) => {
      const row: Partial<WebhookDelivery> & { id: string } = {
        id: randomUUID(), event: null, deliveryId: null, dedupKey: null, verified: false, workflowId: null, taskGuid: null, statusCode: null,
        error: null, payload: null, payloadSize: 0, payloadTruncated: false, replayOf: null, receivedAt: now, finishedAt: now,
      };
      for (const [property, value] of Object.entries(fields)) if (value !== undefined) (row as Record<string, unknown>)[property] = value;
      return row;
    });
    const parts = insertRowsParts(this.deliveries.metadata, full);
    return {
      text: `INSERT INTO "controller"."webhook_deliveries" (${parts.names}) ${parts.select} ON CONFLICT DO NOTHING RETURNING id`,
      params: parts.params,
      ids: full.map((row) => row.id),
    };
  }

  async finish(id: string, changes: Partial<WebhookDelivery>): Promise<void> {
    await this.deliveries.update({ id }, { finishedAt: new Date(), ...changes });
  }

  findAccepted(dedupKey: string): Promise<WebhookDelivery | null> {
    return this.deliveries.findOneBy({ dedupKey });
  }

  async get(id: string): Promise<WebhookDelivery> {
    const isUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);
    const row = isUuid ? await this.deliveries.findOneBy({ id }) : null;
    if (!row) throw DomainError.notFound('Webhook delivery');
    return row;
  }

  /** Deletes up to `limit` deliveries received more than `days` ago, oldest first (rows another sweep holds are skipped). */
  async deleteReceivedBefore(days: number, limit: number): Promise<number> {
    const rows: unknown[] = await this.deliveries.query(
      `DELETE FROM "controller"."webhook_deliveries" WHERE id IN (
         SELECT id FROM "controller"."webhook_deliveries" WHERE received_at < now() - make_interval(days => $1)
         ORDER BY received_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id`,
      [days, limit],
    );
    return rows.length;
  }

  /** Newest first, paged by `(received_at, id)`; each filter has an index in that order. */
  list(filters: DeliveryFilters, request: KeysetRequest): Promise<KeysetPage<WebhookDelivery>> {
    const rows = this.deliveries.createQueryBuilder('d');
    const key = equalityFilters(
      rows,
      { time: 'd.received_at', id: 'd.id' },
      { 'd.source': filters.source || undefined, 'd.event': filters.event || undefined, 'd.outcome': filters.outcome || undefined, 'd.workflow_id': filters.workflow || undefined },
      [['d.source'], ['d.event'], ['d.outcome'], ['d.workflow_id']],
    );
    return keysetPage(rows, key, request);
  }
}

/** Counts a delivery stored with its final outcome (a routed one is counted by the router, with its task). */
export function countDelivery(fields: Partial<WebhookDelivery>): void {
  if (fields.outcome && fields.outcome !== 'received') webhookDeliveries.inc({ source: fields.source ?? 'unknown', outcome: fields.outcome });
}
