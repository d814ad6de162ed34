import { Column, Entity, ForeignKey, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * The event types a subscription may ask for: the event stream's kinds, the scheduler's
 * `task.retrying` and this room's own `subscription.disabled`.
 */
export const SUBSCRIPTION_EVENT_TYPES = [
  'task.created',
  'task.status',
  'task.progress',
  'task.finished',
  'task.retrying',
  'dispatcher.state',
  'subscription.disabled',
] as const;
export type SubscriptionEventType = (typeof SUBSCRIPTION_EVENT_TYPES)[number];

export const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

export interface SubscriptionFilter {
  workflow_id?: string;
  status?: string | string[];
}

/** One attempt of a delivery, as `GET .../deliveries/` shows it. */
export interface DeliveryAttempt {
  at: string;
  status_code: number | null;
  duration_ms: number;
  /** The answer's first bytes (at most 4 KiB), or null without an answer. */
  response: string | null;
  error: string | null;
}

/** An endpoint that receives the events it asks for. Repeats migration 1790700000000. */
@Entity({ name: 'subscriptions' })
@Index('subscriptions_created_idx', ['createdAt', 'id'])
@Index('subscriptions_owner_idx', ['ownerClientId', 'createdAt', 'id'])
export class Subscription {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'subscriptions_pkey' })
  id: string;

  @Column('text')
  url: string;

  @Column({ name: 'event_types', type: 'text', array: true })
  eventTypes: SubscriptionEventType[];

  @Column({ type: 'jsonb', default: () => `'{}'` })
  filter: SubscriptionFilter;

  @Column({ type: 'text', default: '' })
  description: string;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  /** Why the controller disabled it (`gone`: the endpoint answered 410; `failing`: 5 days of failures). */
  @Column({ name: 'disabled_reason', type: 'text', nullable: true })
  disabledReason: string | null;

  /** The OAuth client that made it (null: an operator); that client sees only its own. */
  @Column({ name: 'owner_client_id', type: 'text', nullable: true })
  ownerClientId: string | null;

  /** The `whsec_` secret, encrypted with SECRET_KEY: the controller signs with it, so it cannot be a hash. */
  @Column({ name: 'secret_sealed', type: 'text' })
  secretSealed: string;

  @Column({ name: 'previous_secret_sealed', type: 'text', nullable: true })
  previousSecretSealed: string | null;

  @Column({ name: 'previous_secret_expires_at', type: 'timestamptz', nullable: true })
  previousSecretExpiresAt: Date | null;

  /** Since when every attempt has failed (null: the last one succeeded, or none was made). */
  @Column({ name: 'failing_since', type: 'timestamptz', nullable: true })
  failingSince: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}

/** One event for one subscription: the outbox row, and the log of its attempts. */
@Entity({ name: 'subscription_deliveries' })
@Index('subscription_deliveries_event_idx', ['subscriptionId', 'eventId'], { unique: true })
@Index('subscription_deliveries_due_idx', ['subscriptionId', 'nextAttemptAt'], { where: `state = 'pending'` })
@Index('subscription_deliveries_list_idx', ['subscriptionId', 'createdAt', 'id'])
export class SubscriptionDelivery {
  /** Also the `webhook-id` header: the same on every attempt. */
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'subscription_deliveries_pkey' })
  id: string;

  @Column({ name: 'subscription_id', type: 'uuid' })
  @ForeignKey(() => Subscription, { name: 'subscription_deliveries_subscription_fkey', onDelete: 'CASCADE' })
  subscriptionId: string;

  @Column({ name: 'event_id', type: 'bigint' })
  eventId: string;

  @Column({ name: 'event_type', type: 'text' })
  eventType: string;

  /** The body POSTed: `{type, timestamp, data}`. */
  @Column({ type: 'jsonb' })
  payload: Record<string, unknown>;

  @Column({ type: 'text', default: 'pending' })
  state: DeliveryState;

  /** Attempts in the current sequence (a replay starts a new one). */
  @Column({ name: 'attempt_count', type: 'integer', default: 0 })
  attemptCount: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', default: () => 'now()' })
  nextAttemptAt: Date;

  @Column({ name: 'claimed_by', type: 'text', nullable: true })
  claimedBy: string | null;

  @Column({ name: 'last_status', type: 'integer', nullable: true })
  lastStatus: number | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @Column({ type: 'jsonb', default: () => `'[]'` })
  attempts: DeliveryAttempt[];

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'delivered_at', type: 'timestamptz', nullable: true })
  deliveredAt: Date | null;
}
