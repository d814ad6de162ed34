import { Check, Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

export const AUDIT_ACTOR_KINDS = ['operator', 'oauth_client'] as const;
export type AuditActorKind = (typeof AUDIT_ACTOR_KINDS)[number];

/** `succeeded` (2xx/3xx), `refused` (4xx: the caller's request was turned down), `failed` (5xx). */
export const AUDIT_OUTCOMES = ['succeeded', 'refused', 'failed'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

/** One state-changing request of an operator or OAuth client, and how it ended. */
@Entity({ name: 'audit_entries' })
@Index('audit_entries_at_idx', ['at', 'id'])
@Index('audit_entries_actor_at_idx', ['actorName', 'at', 'id'])
@Index('audit_entries_action_at_idx', ['action', 'at', 'id'])
@Index('audit_entries_resource_at_idx', ['resourceType', 'resourceId', 'at', 'id'])
@Check('audit_entries_actor_kind_check', `"actor_kind" IN ('operator', 'oauth_client')`)
@Check('audit_entries_outcome_check', `"outcome" IN ('succeeded', 'refused', 'failed')`)
export class AuditEntry {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'audit_entries_pkey' })
  id: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  at: Date;

  @Column({ name: 'actor_kind', type: 'text' })
  actorKind: AuditActorKind;

  /** The operator token's id or the OAuth client's `client_id`. */
  @Column({ name: 'actor_id', type: 'text' })
  actorId: string;

  /** The operator token's name or the OAuth client's `client_id`. */
  @Column({ name: 'actor_name', type: 'text' })
  actorName: string;

  /** The operation id of the OpenAPI document, dotted: `tasks.cancel`, `oauth.createClient`. */
  @Column('text')
  action: string;

  @Column({ name: 'resource_type', type: 'text' })
  resourceType: string;

  @Column({ name: 'resource_id', type: 'text', nullable: true })
  resourceId: string | null;

  @Column('text')
  outcome: AuditOutcome;

  /** The answer's HTTP status; null for a CLI command. */
  @Column({ name: 'status_code', type: 'integer', nullable: true })
  statusCode: number | null;

  @Column({ name: 'remote_addr', type: 'text', nullable: true })
  remoteAddr: string | null;

  /** Names only, never values a caller sent: see `auditDetails`. */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  details: Record<string, unknown>;
}
