import { Check, Column, Entity, ForeignKey, Index, PrimaryGeneratedColumn } from 'typeorm';

export const DELIVERY_OUTCOMES = ['received', 'routed', 'ignored', 'duplicate', 'failed', 'rejected', 'challenge'] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];

/** One inbound webhook as received, and what became of it. */
@Entity({ name: 'webhook_deliveries' })
// The durable record of "seen before": one accepted delivery per sender delivery id.
@Index('webhook_deliveries_dedup_key_uq', ['dedupKey'], { unique: true, where: '"dedup_key" IS NOT NULL' })
// The migration builds this one as ("received_at" DESC); TypeORM has no per-column order.
@Index('webhook_deliveries_received_id_idx', ['receivedAt', 'id'])
@Index('webhook_deliveries_workflow_received_idx', ['workflowId', 'receivedAt', 'id'], { where: '"workflow_id" IS NOT NULL' })
@Index('webhook_deliveries_outcome_all_received_idx', ['outcome', 'receivedAt', 'id'])
@Index('webhook_deliveries_source_received_idx', ['source', 'receivedAt', 'id'])
@Index('webhook_deliveries_event_received_idx', ['event', 'receivedAt', 'id'])
@Check('webhook_deliveries_outcome_check', `"outcome" IN (${DELIVERY_OUTCOMES.map((outcome) => `'${outcome}'`).join(', ')})`)
export class WebhookDelivery {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'webhook_deliveries_pkey' })
  id: string;

  @Column('text')
  source: string;

  @Column({ type: 'text', nullable: true })
  event: string | null;

  /** The sender's own id for the delivery (forge delivery header, chat event_id, webhook-id). */
  @Column({ name: 'delivery_id', type: 'text', nullable: true })
  deliveryId: string | null;

  /** `<source>:<delivery id>` while this row is the accepted one for it; unique. */
  @Column({ name: 'dedup_key', type: 'text', nullable: true })
  dedupKey: string | null;

  @Column({ type: 'boolean', default: false })
  verified: boolean;

  @Column({ name: 'workflow_id', type: 'text', nullable: true })
  workflowId: string | null;

  @Column({ name: 'task_guid', type: 'uuid', nullable: true })
  taskGuid: string | null;

  @Column({ type: 'text' })
  outcome: DeliveryOutcome;

  @Column({ name: 'status_code', type: 'integer', nullable: true })
  statusCode: number | null;

  @Column({ type: 'text', nullable: true })
  error: string | null;

  /** The event payload as JSON text, cut at WEBHOOK_PAYLOAD_MAX_BYTES. */
  @Column({ type: 'text', nullable: true })
  payload: string | null;

  @Column({ name: 'payload_size', type: 'integer', default: 0 })
  payloadSize: number;

  @Column({ name: 'payload_truncated', type: 'boolean', default: false })
  payloadTruncated: boolean;

  @Column({ name: 'replay_of', type: 'uuid', nullable: true })
  @ForeignKey(() => WebhookDelivery, { name: 'webhook_deliveries_replay_of_fkey', onDelete: 'SET NULL' })
  replayOf: string | null;

  @Column({ name: 'received_at', type: 'timestamptz', default: () => 'now()' })
  receivedAt: Date;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt: Date | null;
}
