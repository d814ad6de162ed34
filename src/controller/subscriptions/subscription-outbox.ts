import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DeliveryAttempt } from './subscriptions.entity';

const DELIVERIES = '"controller"."subscription_deliveries"';
const SUBSCRIPTIONS = '"controller"."subscriptions"';
const EVENTS = '"controller"."events"';

/** A claimed delivery with what its attempt needs. */
export interface ClaimedDelivery {
  id: string;
  subscription_id: string;
  payload: Record<string, unknown>;
  attempt_count: number;
  url: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
}

/** What became of an attempt. */
export type AttemptOutcome =
  | { kind: 'delivered' }
  | { kind: 'retry'; delayMs: number }
  | { kind: 'failed' }
  | { kind: 'gone' };

/**
 * The delivery outbox's statements. Claims hide a row from every replica for a lease
 * (`next_attempt_at` moved ahead, `claimed_by` set) instead of holding a transaction open
 * during the POST, and take at most `perEndpoint` rows of one subscription, counting those
 * already under way anywhere: a slow endpoint fills its own slots and nobody else's.
 */
@Injectable()
export class SubscriptionOutbox {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Whether any subscription is enabled: a claim takes deliveries of enabled ones only. */
  async anyEnabled(): Promise<boolean> {
    const [row] = (await this.db.query(`SELECT EXISTS (SELECT 1 FROM ${SUBSCRIPTIONS} WHERE enabled) AS any`)) as { any: boolean }[];
    return row.any;
  }

  async claim(room: number, perEndpoint: number, claimant: string, leaseSeconds: number): Promise<ClaimedDelivery[]> {
    return (await this.db.query(
      `WITH picked AS (
         SELECT x.id, x.next_attempt_at FROM ${SUBSCRIPTIONS} s CROSS JOIN LATERAL (
           SELECT d.id, d.next_attempt_at FROM ${DELIVERIES} d
           WHERE d.subscription_id = s.id AND d.state = 'pending' AND d.next_attempt_at <= now()
           ORDER BY d.next_attempt_at LIMIT GREATEST(0, $2 - (
             SELECT count(*) FROM ${DELIVERIES} b
             WHERE b.subscription_id = s.id AND b.state = 'pending' AND b.claimed_by IS NOT NULL AND b.next_attempt_at > now()))) x
         WHERE s.enabled ORDER BY x.next_attempt_at LIMIT $1),
       claimed AS (
         UPDATE ${DELIVERIES} d SET claimed_by = $3, next_attempt_at = now() + make_interval(secs => $4), attempt_count = d.attempt_count + 1
         FROM picked WHERE d.id = picked.id AND d.state = 'pending' AND d.next_attempt_at <= now()
         RETURNING d.id, d.subscription_id, d.payload, d.attempt_count)
       SELECT c.*, s.url, s.secret_sealed,
         CASE WHEN s.previous_secret_expires_at > now() THEN s.previous_secret_sealed END AS previous_secret_sealed
       FROM claimed c JOIN ${SUBSCRIPTIONS} s ON s.id = c.subscription_id`,
      [room, perEndpoint, claimant, leaseSeconds],
    )) as ClaimedDelivery[];
  }

  /**
   * Records an attempt and its outcome with the subscription's failure clock: a success
   * stops it, a failure starts it if it is not running. The subscription row is written only
   * when the clock changes, so concurrent attempts of one endpoint do not queue on its lock.
   * Answers whether the subscription has been failing longer than `disableAfterSeconds`.
   */
  async record(delivery: ClaimedDelivery, attempt: DeliveryAttempt, outcome: AttemptOutcome, disableAfterSeconds: number): Promise<{ failingTooLong: boolean }> {
    const state = outcome.kind === 'delivered' ? 'delivered' : outcome.kind === 'retry' ? 'pending' : 'failed';
    const delayMs = outcome.kind === 'retry' ? outcome.delayMs : 0;
    const [row] = (await this.db.query(
      `WITH recorded AS (
         UPDATE ${DELIVERIES} SET state = $2, claimed_by = NULL, last_status = $3, last_error = $4,
           attempts = attempts || $5::jsonb, next_attempt_at = now() + make_interval(secs => $6::float8 / 1000),
           delivered_at = CASE WHEN $2 = 'delivered' THEN now() ELSE delivered_at END
         WHERE id = $1 AND claimed_by IS NOT NULL RETURNING subscription_id),
       clock AS (
         UPDATE ${SUBSCRIPTIONS} s SET failing_since = CASE WHEN $2 = 'delivered' THEN NULL ELSE now() END
         FROM recorded WHERE s.id = recorded.subscription_id
           AND CASE WHEN $2 = 'delivered' THEN s.failing_since IS NOT NULL ELSE s.failing_since IS NULL END
         RETURNING s.id)
       SELECT (s.failing_since < now() - make_interval(secs => $7)) AS failing_too_long
       FROM recorded JOIN ${SUBSCRIPTIONS} s ON s.id = recorded.subscription_id`,
      [delivery.id, state, attempt.status_code, attempt.error, JSON.stringify([attempt]), delayMs, disableAfterSeconds],
    )) as { failing_too_long: boolean | null }[];
    return { failingTooLong: row?.failing_too_long === true };
  }

  /**
   * Disables a subscription that is still enabled and writes its `subscription.disabled`
   * event in the same statement (the event fans out like any other). False when another
   * replica or an operator got there first.
   */
  async disable(subscriptionId: string, reason: 'gone' | 'failing', message: string): Promise<boolean> {
    const rows = (await this.db.query(
      `WITH disabled AS (
         UPDATE ${SUBSCRIPTIONS} SET enabled = false, disabled_reason = $2, updated_at = now()
         WHERE id = $1 AND enabled RETURNING id, url, owner_client_id)
       INSERT INTO ${EVENTS} (kind, data)
       SELECT 'subscription.disabled', jsonb_build_object('subscription_id', id, 'url', url, 'status', 'disabled',
         'reason', $2::text, 'message', $3::text) FROM disabled
       RETURNING id`,
      [subscriptionId, reason, message],
    )) as unknown[];
    return rows.length > 0;
  }

  /** Deliveries this process was sending when it stopped are due now, not when their lease ends. */
  async resumeInterrupted(claimant: string): Promise<number> {
    const [rows] = (await this.db.query(
      `UPDATE ${DELIVERIES} SET next_attempt_at = now(), claimed_by = NULL
       WHERE state = 'pending' AND claimed_by = $1 RETURNING id`,
      [claimant],
    )) as [unknown[], number];
    return rows.length;
  }

  /** Deletes up to `limit` deliveries that ended (delivered or failed) more than `days` ago, oldest first. */
  async deleteEndedBefore(days: number, limit: number): Promise<number> {
    const rows = (await this.db.query(
      `DELETE FROM ${DELIVERIES} WHERE id IN (
         SELECT id FROM ${DELIVERIES} WHERE state <> 'pending' AND created_at < now() - make_interval(days => $1)
         ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id`,
      [days, limit],
    )) as [unknown[], number];
    return rows[0].length;
  }
}
